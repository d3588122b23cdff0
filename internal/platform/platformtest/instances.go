// Package platformtest holds fakes of package platform's interfaces for other packages' tests.
package platformtest

import (
	"context"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// Apart is a platform.Instances whose instances would run apart from their nodes (as a pod of
// its own does on Kubernetes): SharesNode is false. It starts nothing.
type Apart struct{}

func (Apart) Start(context.Context, platform.InstanceSpec) (string, error) { return "10.0.0.9", nil }
func (Apart) Stop(context.Context, string, time.Duration) error            { return nil }
func (Apart) State(context.Context) (platform.State, error)                { return platform.State{}, nil }
func (Apart) Addr(node string, port int) string                            { return node }
func (Apart) SharesNode(string) bool                                       { return false }

var registerApart sync.Once

// ApartEndpoint is the endpoint of a platform whose client is Apart, registered (as "apart") on
// first use.
func ApartEndpoint() string {
	registerApart.Do(func() {
		platform.RegisterInstances("apart", func(string) (platform.Instances, error) { return Apart{}, nil })
	})
	return "apart:test"
}
