package kinds

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

func TestProxyCommand(t *testing.T) {
	tests := []struct {
		name, config string
		// want: the strategy and alpha of defaults and of service dps in the written file
		strategy, alpha string
	}{
		{"pass-through", "services: {dps: {strategy: qos, qos: {latency: 80ms}}}", "qos", ""},
		{"shortcut overrides", "strategy: round-robin\nservices: {dps: {strategy: qos, qos: {latency: 80ms}}}", "round-robin", ""},
		{"proximity alpha", "strategy: \"proximity:0.8\"\nservices: {dps: {qos: {latency: 80ms}}}", "proximity", "0.8"},
		{"alpha field", "strategy: proximity\nalpha: 1\nservices: {dps: {alpha: 0.2}}", "proximity", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, cfg := kindtest.Decode(t, "proxy", tt.config)
			if err := k.Validate(cfg); err != nil {
				t.Fatal(err)
			}
			env := kind.Env{Binary: "/bin/continuum", Instance: "proxy", Node: "worker3", OutDir: t.TempDir(),
				Platform: "testbed:run1-001@/run/continuum"}
			cmd, err := k.Command(env, cfg)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(env.OutDir, "proxy.yaml")
			want := []string{"/bin/continuum", "proxy", "--config", path, "--listen", ":8080", "--admin-listen", "127.0.0.1:9090", "--node", "worker3"}
			if !slices.Equal(cmd.Args, want) || cmd.Ready == nil || cmd.Ready.HTTP == nil || *cmd.Ready.HTTP != (kind.HTTPProbe{Addr: "127.0.0.1:9090", Path: "/readyz"}) {
				t.Errorf("args %q ready %+v, want %q and /readyz on the admin port", cmd.Args, cmd.Ready, want)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f struct {
				Node      string
				Discovery []map[string]string
				Defaults  map[string]any
				Services  map[string]map[string]any
			}
			if err := yaml.Unmarshal(b, &f); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if f.Node != "worker3" || len(f.Discovery) != 1 || f.Discovery[0]["platform"] != "testbed:run1-001@/run/continuum" {
				t.Errorf("node/discovery wrong:\n%s", b)
			}
			dps := f.Services["dps"]
			if str(dps["strategy"]) != tt.strategy || str(dps["alpha"]) != tt.alpha && tt.name != "alpha field" {
				t.Errorf("services.dps = %v, want strategy %s alpha %q\n%s", dps, tt.strategy, tt.alpha, b)
			}
			if tt.name == "alpha field" && str(dps["alpha"]) != "1" {
				t.Errorf("the alpha shortcut must override the service's alpha: %v", dps)
			}
			if dps["qos"] == nil && tt.name != "alpha field" {
				t.Errorf("services.dps lost its qos section:\n%s", b)
			}
			if tt.name != "pass-through" && str(f.Defaults["strategy"]) != tt.strategy {
				t.Errorf("defaults = %v, want strategy %s for services not listed", f.Defaults, tt.strategy)
			}
		})
	}
}

func str(v any) string {
	if v == nil {
		return ""
	}
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

func TestProxyConfigValidate(t *testing.T) {
	tests := []struct{ config, want string }{
		{"strategy: nearest", `strategy: "nearest": want one of qos, round-robin, random, proximity`},
		{"strategy: \"qos:0.5\"", "only proximity takes an alpha"},
		{"strategy: \"proximity:x\"", `alpha "x" is not a number`},
		{"strategy: \"proximity:1.5\"", "alpha 1.5: must be between 0 and 1"},
		{"alpha: 0.5", "alpha goes with strategy"},
		{"strategy: qos\nalpha: 0.5", "alpha applies to strategy proximity"},
		{"strategy: \"proximity:0.8\"\nalpha: 0.5", "disagree"},
		{"admin_port: 8080", "port and admin_port are both 8080"},
		{"port: 0", "port (--listen): 0: must be between 1 and 65535"},
		{"services: {dps: [a]}", "services.dps: want a mapping"},
		{"services: {dps: {strategy: fastest}}", `services.dps: strategy: "fastest": want one of qos`},
		{"defaults: {strategy: fastest}", `defaults: strategy: "fastest"`},
		{"services: {dps: {qos: {latncy: 80ms}}}", `unknown field "latncy" in services.dps.qos`},
		{"services: {dps: {qos: {percentile: 101}}}", `services.dps: qos.percentile: 101`},
		{"defaults: 3", "defaults: want a mapping"},
		{"services: {\"a b\": {}}", "invalid service name"},
	}
	for _, tt := range tests {
		k, cfg := kindtest.Decode(t, "proxy", tt.config)
		err := k.Validate(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.config, err, tt.want)
		}
	}
}

// TestProxyConfigReportsEveryError: every bad key is reported at once at its key, the ports
// with the continuum proxy flag they become; a good config passes.
func TestProxyConfigReportsEveryError(t *testing.T) {
	k, cfg := kindtest.Decode(t, "proxy", "{port: 9090, strategy: nearest, defaults: 3, services: {dps: {strategy: fastest}, 'a b': {}}}")
	err := k.Validate(cfg)
	var fes kind.FieldErrors
	want := [][2]string{{"admin_port", "--admin-listen"}, {"strategy", ""}, {"defaults", ""}, {"services.a b", ""}, {"services.dps", ""}}
	if !errors.As(err, &fes) || len(fes) != len(want) {
		t.Fatalf("got %v, want %d field errors", err, len(want))
	}
	for i, w := range want {
		if fes[i].Key != w[0] || fes[i].Flag != w[1] {
			t.Errorf("error %d: %+v, want key %q flag %q", i, *fes[i], w[0], w[1])
		}
	}
	if k, cfg := kindtest.Decode(t, "proxy", "{strategy: 'proximity:0.8', services: {dps: {qos: {latency: 80ms, percentile: 95}}}}"); k.Validate(cfg) != nil {
		t.Errorf("good config: %v", k.Validate(cfg))
	}
}
