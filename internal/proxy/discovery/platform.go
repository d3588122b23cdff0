package discovery

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

// PlatformKey is the key of the platform source in the proxy configuration's discovery list:
// the service instances of the platform the proxy runs on, given by its endpoint (package
// platform, Endpoint), as a scenario's proxy kind writes it:
//
//	discovery:
//	  - platform: testbed:run1-001@/run/continuum
//
// It is the source registered under the endpoint's platform name, given the endpoint's address
// as its value: the line above is `- testbed: run1-001@/run/continuum`. So a platform's
// discovery source is its own; the proxy and the runner know none of them.
const PlatformKey = "platform"

func init() { RegisterSource(PlatformKey, ParsePlatformSource) }

// ParsePlatformSource builds the source for a platform endpoint.
func ParsePlatformSource(n *yaml.Node) (Source, error) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return nil, errors.New("platform: want a platform endpoint, e.g. testbed:run1-001@/run/continuum")
	}
	c, err := platformConstructor(n.Value)
	if err != nil {
		return nil, spec.Errorf("", n, "%v", err)
	}
	ep, _ := platform.ParseEndpoint(n.Value)
	addr := *n
	addr.Value, addr.Tag, addr.Style = ep.Address, "!!str", 0
	return c(&addr)
}

// CheckPlatform reports an error, naming the platform, when this binary has no discovery
// source for endpoint's platform.
func CheckPlatform(endpoint string) error {
	_, err := platformConstructor(endpoint)
	return err
}

func platformConstructor(endpoint string) (Constructor, error) {
	ep, err := platform.ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	c, ok := LookupSource(ep.Platform)
	registryMu.RLock()
	isPlatform := platforms[ep.Platform]
	registryMu.RUnlock()
	if !ok || !isPlatform {
		return nil, fmt.Errorf("no discovery source for platform %s (platforms with one: %s)", ep.Platform, strings.Join(PlatformSourceKeys(), ", "))
	}
	return c, nil
}
