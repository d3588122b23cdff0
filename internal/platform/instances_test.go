package platform

import (
	"context"
	"strings"
	"testing"
	"time"
)

type fakeInstances struct{ addr string }

func (f *fakeInstances) Start(context.Context, InstanceSpec) (string, error) { return "", nil }
func (f *fakeInstances) Stop(context.Context, string, time.Duration) error   { return nil }
func (f *fakeInstances) State(context.Context) (State, error)                { return State{}, nil }
func (f *fakeInstances) Addr(node string, port int) string                   { return "" }
func (f *fakeInstances) SharesNode(string) bool                              { return false }

// InstancesFor gives the client registered under the endpoint's platform its address, and
// names the platforms that have one when the endpoint's has none.
func TestInstancesFor(t *testing.T) {
	RegisterInstances("fake", func(addr string) (Instances, error) { return &fakeInstances{addr: addr}, nil })
	in, err := InstancesFor("fake:lab@/run/x")
	if err != nil || in.(*fakeInstances).addr != "lab@/run/x" {
		t.Fatalf("InstancesFor(fake:lab@/run/x) = %+v, %v", in, err)
	}
	if _, err := InstancesFor("kubernetes:ns"); err == nil || !strings.Contains(err.Error(), "platform kubernetes") || !strings.Contains(err.Error(), "fake") {
		t.Errorf("a platform without a client: %v, want an error naming it and the ones with one", err)
	}
	if _, err := InstancesFor("no colon"); err == nil {
		t.Error("a malformed endpoint was accepted")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of fake did not panic")
		}
	}()
	RegisterInstances("fake", func(string) (Instances, error) { return nil, nil })
}

func TestStateInstance(t *testing.T) {
	st := State{Instances: []InstanceState{{Name: "a", Running: true}, {Name: "b", Ended: "exit 1"}}}
	if b, ok := st.Instance("b"); !ok || b.Ended != "exit 1" {
		t.Errorf("Instance(b) = %+v, %v", b, ok)
	}
	if _, ok := st.Instance("c"); ok {
		t.Error("Instance(c) found")
	}
}
