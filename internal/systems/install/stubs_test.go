package install

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

// TestKindStubsMatch holds kindtest's stubs, which systems' kinds tests put beside their own
// kinds instead of linking every system, to the real kinds: each stub declares the endpoints its
// kind declares, for the defaults and for every config key it reads.
func TestKindStubsMatch(t *testing.T) {
	samples := map[string][]string{
		"kv":                {"{}", "{client_port: 12379}", "{cluster: c, client_port: 12379, peer_port: 12380}"},
		"etcd":              {"{}", "{client_port: 12379, peer_port: 12380}", "{cluster: c}"},
		"redis":             {"{}", "{port: 6380}", "{cluster: c, port: 6380}"},
		"mosquitto":         {"{}", "{port: 1884}"},
		"kafka":             {"{}", "{port: 19092, controller_port: 19093}"},
		"http-echo":         {"{}", "{port: 9000}"},
		"faas-function":     {"{}", "{port: 9000}"},
		"faas-microservice": {"{}", "{port: 9000}"},
	}
	for _, name := range kindtest.StubNames() {
		if len(samples[name]) == 0 {
			t.Errorf("kindtest stubs %q: add its configs here", name)
		}
		if k, ok := kind.Lookup(name); !ok || k.Role != kind.RoleComponent {
			t.Errorf("kindtest stubs %q, which is no registered component kind", name)
		}
		for _, src := range samples[name] {
			k, cfg := kindtest.Decode(t, name, src)
			var m map[string]any
			if err := yaml.Unmarshal([]byte(src), &m); err != nil {
				t.Fatal(err)
			}
			if real, stub := k.EndpointsOf(cfg), kindtest.StubEndpoints(name, m); !reflect.DeepEqual(real, stub) {
				t.Errorf("%s %s: the kind declares %v, its stub %v", name, src, real, stub)
			}
		}
	}
}
