// Package kindtest helps systems test their kinds: decode a config the way the scenario loader
// does, and describe the other components of a run as an Env sees them.
package kindtest

import (
	"errors"
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

// FieldErrors decodes src as kind name's config and returns what its Validate reports as a
// kind.FieldErrors; the test fails (and nil is returned) when it is not one of n problems.
func FieldErrors(t testing.TB, name, src string, n int) kind.FieldErrors {
	t.Helper()
	k, cfg := Decode(t, name, src)
	err := k.Validate(cfg)
	var fes kind.FieldErrors
	if !errors.As(err, &fes) || len(fes) != n {
		t.Errorf("%s %s: got %v, want %d field errors", name, src, err, n)
		return nil
	}
	return fes
}

// CheckFieldErrors checks that bad, as kind name's config, is refused with exactly the keys and
// flags of want ({key, flag} pairs, in order), and that good validates.
func CheckFieldErrors(t testing.TB, name, bad, good string, want [][2]string) {
	t.Helper()
	for i, e := range FieldErrors(t, name, bad, len(want)) {
		if e.Key != want[i][0] || e.Flag != want[i][1] {
			t.Errorf("%s error %d: %+v, want key %q flag %q", name, i, *e, want[i][0], want[i][1])
		}
	}
	if k, cfg := Decode(t, name, good); k.Validate(cfg) != nil {
		t.Errorf("%s %s: %v", name, good, k.Validate(cfg))
	}
}
