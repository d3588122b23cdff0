package experiment

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	proxyscenario "github.com/continuum-project/continuum/internal/proxy/scenario"
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
	sc, err := ParseScenario("qos.yaml", []byte(proxyScenario), nil)
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
		again, err := ParseScenario("resolved.yaml", b, nil)
		if err != nil {
			t.Fatalf("run %s: resolved scenario does not load: %v\n%s", r.ID, err, b)
		}
		if got := again.Components[2].DecodedConfig.(*proxyscenario.ProxyConfig).Strategy; got != r.Params["components.proxy.config.strategy"] {
			t.Errorf("run %s: strategy %q after reload", r.ID, got)
		}
		if svc := again.Components[1].service(); svc == nil || svc.Port != 9000 || !again.Components[1].Deferred {
			t.Errorf("run %s: s2 service %+v deferred %v", r.ID, svc, again.Components[1].Deferred)
		}
	}
	// Sweep values run in the order written... by path; the values keep their list order.
	want := []string{"qos", "round-robin", "proximity:1.0", "proximity:0.8", "random"}
	if !slices.Equal(strategies, want) {
		t.Errorf("strategies %v, want %v", strategies, want)
	}
	// The load targets the proxy's port, with the service header.
	env := instanceEnv(sc, sc.Workloads[0], nil, "/out", "/bin/continuum", "testbed:check@/run/continuum")
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
		sc, err := LoadScenario(filepath.Join("..", "..", "scenarios", "qos-routing", name+".yaml"), nil)
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
