package kinds_test

// End-to-end tests of the proxy's kinds through the scenario loader: the engine's own tests know
// no system, so a system checks here that its scenarios load, expand and build their commands.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/proxy/kinds"
	_ "github.com/continuum-project/continuum/internal/systems/install"
)

const proxyScenario = `
version: 1
name: qos-mini
duration: 10s
topology:
  nodes: [{name: iot}, {name: w1}, {name: w2}]
  links:
    - {between: [iot, w1], delay: 5ms}
    - {between: [w1, w2], delay: 10ms}
components:
  - {name: s1, kind: http-echo, node: w1, service: {name: dps, attributes: {tier: edge}}}
  - {name: s2, kind: http-echo, node: w2, config: {port: 9000}, service: {name: dps}, deferred: true}
  - name: proxy
    kind: proxy
    node: w1
    config:
      port: 8081
      services: {dps: {qos: {latency: 80ms, percentile: 95}}}
workloads:
  - name: load
    kind: http-load
    node: iot
    config:
      rate: 20
      qos_latency: 80ms
      targets: [{name: dps, component: proxy, service: dps}]
events:
  - {after_requests: 50, action: start, component: s2}
  - {after_requests: 100, action: kill, component: s2}
sweep:
  components.proxy.config.strategy: [qos, round-robin, "proximity:1.0", "proximity:0.8", random]
`

// A qos-routing scenario loads, expands to one run per strategy, and every run's resolved
// scenario loads again unchanged.
func TestProxyScenarioLoads(t *testing.T) {
	sc, err := experiment.ParseScenario("qos.yaml", []byte(proxyScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := sc.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var strategies []string
	for _, r := range runs {
		strategies = append(strategies, r.Params["components.proxy.config.strategy"])
		b, err := r.Scenario.MarshalResolved()
		if err != nil {
			t.Fatal(err)
		}
		again, err := experiment.ParseScenario("resolved.yaml", b, nil)
		if err != nil {
			t.Fatalf("run %s: resolved scenario does not load: %v\n%s", r.ID, err, b)
		}
		if got := again.Components[2].DecodedConfig.(*kinds.ProxyConfig).Strategy; got != r.Params["components.proxy.config.strategy"] {
			t.Errorf("run %s: strategy %q after reload", r.ID, got)
		}
		if s2 := again.Components[1]; s2.Service == nil || s2.Service.Name != "dps" || !s2.Deferred {
			t.Errorf("run %s: s2 service %+v deferred %v", r.ID, s2.Service, s2.Deferred)
		}
	}
	// Sweep values run in the order written... by path; the values keep their list order.
	want := []string{"qos", "round-robin", "proximity:1.0", "proximity:0.8", "random"}
	if !slices.Equal(strategies, want) {
		t.Errorf("strategies %v, want %v", strategies, want)
	}
	// The load targets the proxy's port, with the service header.
	env := kind.Env{Instance: "load", Node: "iot", OutDir: "/out", Binary: "/bin/continuum", Components: map[string]kind.Component{}}
	for _, c := range sc.Components {
		env.Components[c.Name] = kindtest.Component(t, c.Node, c.Kind, c.DecodedConfig)
	}
	k, _ := kind.Lookup("http-load")
	cmd, err := k.Command(env, sc.Workloads[0].DecodedConfig)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, " ")
	for _, want := range []string{"--target dps=http://w1:8081/", "--service dps=dps", "--qos-latency 80ms"} {
		if !strings.Contains(args, want) {
			t.Errorf("load args %q lack %q", args, want)
		}
	}
}

// The shipped qos-routing scenarios load and expand to one run per strategy.
func TestQoSRoutingScenariosLoad(t *testing.T) {
	for _, name := range []string{"static", "dynamic"} {
		sc, err := experiment.LoadScenario(filepath.Join("..", "..", "..", "scenarios", "proxy", name+".yaml"), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runs, err := sc.Expand()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(runs) != 5 {
			t.Errorf("%s: %d runs, want one per strategy (5)", name, len(runs))
		}
	}
}
