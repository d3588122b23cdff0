// Package kindtest helps systems test their kinds: decode a config the way the scenario loader
// does, and describe the other components of a run as an Env sees them.
package kindtest

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
)

// Decode decodes src into the registered kind's defaults, strictly, as the scenario loader does.
func Decode(t testing.TB, name, src string) (*kind.Kind, any) {
	t.Helper()
	k, ok := kind.Lookup(name)
	if !ok {
		t.Fatalf("kind %q not registered", name)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	cfg := k.NewConfig()
	var node *yaml.Node
	if len(n.Content) > 0 {
		node = n.Content[0]
	}
	if err := spec.DecodeAt("test.yaml", "config", node, cfg); err != nil {
		t.Fatal(err)
	}
	return k, cfg
}

// Component is a component of kind name with cfg on node, its endpoints as its kind declares.
func Component(t testing.TB, node, name string, cfg any) kind.Component {
	t.Helper()
	k, ok := kind.Lookup(name)
	if !ok {
		t.Fatalf("kind %q not registered", name)
	}
	return kind.Component{Node: node, Kind: name, Config: cfg, Endpoints: k.EndpointsOf(cfg)}
}

// Node is a component on node that declares nothing but its node (for workloads' errors).
func Node(node string) kind.Component { return kind.Component{Node: node} }
