package platform

import (
	"fmt"
	"regexp"
	"strings"
)

// Endpoint is how a component reaches the platform it runs on, when it has to (the faas gateway
// starts function instances there, the proxy discovers service instances there): one string it
// can take on its command line, "<platform>:<address>". The platform part says which of the
// component's own providers resolves the address; only that provider knows what the address
// means. The testbed's is "testbed:<name>@<state dir>" (package testbed, EndpointFor), its
// control socket being <state dir>/<name>/control.sock.
//
// The runner never parses an endpoint; a kind passes it on and its component picks its
// provider by Platform, failing with a message naming the platform when it has none for it.
type Endpoint struct {
	Platform string // "testbed", "kubernetes"
	Address  string // the platform's own form
}

var platformNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// ParseEndpoint reads "<platform>:<address>".
func ParseEndpoint(s string) (Endpoint, error) {
	name, addr, ok := strings.Cut(s, ":")
	if !ok || !platformNameRE.MatchString(name) || addr == "" {
		return Endpoint{}, fmt.Errorf("platform endpoint %q: want <platform>:<address>, e.g. testbed:run1-001@/run/continuum", s)
	}
	return Endpoint{Platform: name, Address: addr}, nil
}

func (e Endpoint) String() string { return e.Platform + ":" + e.Address }
