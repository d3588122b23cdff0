package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
)

// Test-only kinds; their names cannot collide with the real ones (http-echo, http-load).
type testServerConfig struct {
	Port  int           `yaml:"port"`
	Delay spec.Duration `yaml:"delay"`
}

type testFieldsConfig struct {
	Port     int           `yaml:"port"`
	Delay    spec.Duration `yaml:"delay"`
	Backends []struct {
		Addr string `yaml:"addr"`
	} `yaml:"backends"`
}

// TestKindFieldErrorsAtTheirKeys: a kind that reports several problems (kind.FieldErrors) gets
// every one, each at its key's line and naming the key's path and its flag.
func TestKindFieldErrorsAtTheirKeys(t *testing.T) {
	src := `version: 1
name: fields
duration: 10s
topology: {nodes: [{name: n1}]}
components:
  - name: f
    kind: test-fields
    node: n1
    config:
      port: 0
      delay: -1s
      backends:
        - addr: a
        - addr: ""
`
	_, err := ParseScenario("f.yaml", []byte(src), nil)
	if err == nil {
		t.Fatal("loaded")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		"f.yaml:10:13: components[0].config.port (--listen): 0: must be between 1 and 65535",
		"f.yaml:11:14: components[0].config.delay (--delay): -1s: must not be negative",
		`f.yaml:14:17: components[0].config.backends[1].addr (--backend): required`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

type testLoadConfig struct {
	Target string `yaml:"target"`
	Rate   int    `yaml:"rate"`
}

func init() {
	kind.Register(kind.Def[testServerConfig]{
		Name: "test-server", Role: kind.RoleComponent, Command: trueCommand[testServerConfig],
		Defaults: func() *testServerConfig { return &testServerConfig{Port: 8000} },
		Validate: func(c *testServerConfig) error {
			if p := c.Port; p < 1 || p > 65535 {
				return errors.New("port must be between 1 and 65535")
			}
			return nil
		},
		Set: func(context.Context, kind.Env, *testServerConfig, *yaml.Node) error { return nil },
		Endpoints: func(c *testServerConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
	})
	kind.Register(kind.Def[testFieldsConfig]{
		Name: "test-fields", Role: kind.RoleComponent, Command: trueCommand[testFieldsConfig],
		Defaults: func() *testFieldsConfig { return &testFieldsConfig{Port: 8000} },
		Validate: func(c *testFieldsConfig) error {
			var errs kind.FieldErrors
			errs.CheckPort("port", "--listen", c.Port)
			if c.Delay.Duration < 0 {
				errs.Add("delay", "--delay", "%v: must not be negative", c.Delay)
			}
			for i, b := range c.Backends {
				if b.Addr == "" {
					errs.Add(fmt.Sprintf("backends[%d].addr", i), "--backend", "required")
				}
			}
			return errs.Err()
		},
	})
	kind.Register(kind.Def[struct{}]{
		Name: "test-plain", Role: kind.RoleComponent, Command: trueCommand[struct{}],
		Defaults: func() *struct{} { return &struct{}{} },
	})
	kind.Register(kind.Def[testLoadConfig]{
		Name: "test-load", Role: kind.RoleWorkload, Command: trueCommand[testLoadConfig],
		Defaults: func() *testLoadConfig { return &testLoadConfig{Rate: 10} },
	})
}

// trueCommand is a test kind's Command: a process that does nothing.
func trueCommand[C any](kind.Env, *C) (kind.Command, error) {
	return kind.Command{Args: []string{"true"}}, nil
}

const scenDir = "testdata/scenarios"

func TestLoadFullScenario(t *testing.T) {
	s, err := LoadScenario(filepath.Join(scenDir, "full.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "full" || s.Repeats != 2 || s.Duration.Duration != time.Minute || s.Warmup.Duration != 5*time.Second {
		t.Errorf("scenario header = %+v", s)
	}
	if got := s.Topology.NodeNames(); len(got) != 3 || s.Topology.MTU != 1500 {
		t.Errorf("topology = %+v", s.Topology)
	}
	edge := s.Components[0].DecodedConfig.(*testServerConfig)
	cloud := s.Components[1].DecodedConfig.(*testServerConfig)
	if edge.Port != 8080 || edge.Delay.Duration != time.Millisecond || cloud.Port != 8000 {
		t.Errorf("configs = %+v %+v", edge, cloud)
	}
	if cfg := s.Workloads[0].DecodedConfig.(*testLoadConfig); cfg.Rate != 100 || cfg.Target != "echo-edge" {
		t.Errorf("workload config = %+v", cfg)
	}
	actions := map[string]bool{}
	for _, ev := range s.Events {
		if ev.Line == 0 || ev.Fault.Action != ev.Action {
			t.Errorf("event %+v: line or fault action not filled", ev)
		}
		actions[ev.Action] = true
	}
	if len(actions) != 9 {
		t.Errorf("actions covered = %v, want all 9", actions)
	}

	runs, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 8 {
		t.Fatalf("got %d runs, want 8", len(runs))
	}
	// Paths sorted, the last one varying fastest, each combination repeated twice.
	want := []struct {
		delay, rate string
		repeat      int
	}{{"1ms", "100", 1}, {"1ms", "100", 2}, {"1ms", "200", 1}, {"1ms", "200", 2}, {"2ms", "100", 1}, {"2ms", "100", 2}, {"2ms", "200", 1}, {"2ms", "200", 2}}
	for i, r := range runs {
		w := want[i]
		if r.ID != []string{"001", "002", "003", "004", "005", "006", "007", "008"}[i] || r.Repeat != w.repeat ||
			r.Params["components.echo-edge.config.delay"] != w.delay || r.Params["workloads.load.config.rate"] != w.rate || len(r.Params) != 2 {
			t.Errorf("run %d = %s %v repeat %d, want %+v", i, r.ID, r.Params, r.Repeat, w)
		}
		sc := r.Scenario
		if sc.Seed != 42+int64(i) || sc.Repeats != 1 || sc.Sweep != nil || sc.File != s.File {
			t.Errorf("run %s: seed %d repeats %d sweep %v file %q", r.ID, sc.Seed, sc.Repeats, sc.Sweep, sc.File)
		}
		if got := sc.Components[0].DecodedConfig.(*testServerConfig).Delay.String(); got != w.delay {
			t.Errorf("run %s: delay %s, want %s", r.ID, got, w.delay)
		}
		if got := sc.Workloads[0].DecodedConfig.(*testLoadConfig).Rate; got != map[string]int{"100": 100, "200": 200}[w.rate] {
			t.Errorf("run %s: rate %d, want %s", r.ID, got, w.rate)
		}
		if got := sc.Components[0].DecodedConfig.(*testServerConfig).Port; got != 8080 {
			t.Errorf("run %s: port %d, want 8080 (untouched)", r.ID, got)
		}
	}
}

func TestLoadTopologyFile(t *testing.T) {
	s, err := LoadScenario(filepath.Join(scenDir, "with_file.yaml"), []string{"topology.links.0.delay=20ms"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology == nil || len(s.Topology.Nodes) != 2 || s.Topology.Links[0].Delay.String() != "20ms" {
		t.Fatalf("topology = %+v", s.Topology)
	}
	if s.Repeats != 1 || s.TopologyFile != "topo.yaml" {
		t.Errorf("repeats %d topology_file %q", s.Repeats, s.TopologyFile)
	}
	runs, err := s.Expand()
	if err != nil || len(runs) != 1 || runs[0].ID != "001" || len(runs[0].Params) != 0 {
		t.Fatalf("Expand = %+v, %v", runs, err)
	}
	if runs[0].Scenario.Topology.Links[0].Delay.String() != "20ms" {
		t.Errorf("run topology = %+v", runs[0].Scenario.Topology.Links[0])
	}

	// Errors in the topology file name that file.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s.yaml"), "version: 1\nname: x\nduration: 10s\ntopology_file: topo.yaml\n")
	writeFile(t, filepath.Join(dir, "topo.yaml"), "nodes:\n  - name: a\n    cpus: lots\n")
	_, err = LoadScenario(filepath.Join(dir, "s.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "topo.yaml")+":3:11:") {
		t.Errorf("topology file error = %v", err)
	}
	_, err = LoadScenario(filepath.Join(dir, "s.yaml"), []string{"topology.nodes.b.cpus=1"})
	if err == nil || !strings.Contains(err.Error(), `no element "b" in topology.nodes; have: a or an index 0..0`) {
		t.Errorf("--set topology error = %v", err)
	}
}

func TestSetOverrides(t *testing.T) {
	s, err := LoadScenario(filepath.Join(scenDir, "full.yaml"), []string{
		"duration=90s",
		"workloads.load.config.rate=200",
		"components.echo-edge.config.delay=5ms",
		"components.1.config.port=9000", // by index, config not written in the file
		"topology.links.0.delay=20ms",
		"topology.nodes.edge1.labels.region=eu",
		"events.0.at=11s",
		"description=",
		"sweep={}",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration.Duration != 90*time.Second || s.Description != "" || len(s.Sweep) != 0 {
		t.Errorf("duration %s description %q sweep %v", s.Duration, s.Description, s.Sweep)
	}
	if s.Workloads[0].DecodedConfig.(*testLoadConfig).Rate != 200 ||
		s.Components[0].DecodedConfig.(*testServerConfig).Delay.String() != "5ms" ||
		s.Components[1].DecodedConfig.(*testServerConfig).Port != 9000 {
		t.Errorf("config overrides not applied: %+v %+v", s.Components[0].DecodedConfig, s.Components[1].DecodedConfig)
	}
	if s.Topology.Links[0].Delay.String() != "20ms" || s.Topology.Nodes[1].Labels["region"] != "eu" || s.Topology.Nodes[1].Labels["tier"] != "edge" {
		t.Errorf("topology overrides not applied: %+v %+v", s.Topology.Links[0], s.Topology.Nodes[1])
	}
	if s.Events[0].At.String() != "11s" {
		t.Errorf("event at = %s", s.Events[0].At)
	}
}

func TestMarshalResolvedRoundTrip(t *testing.T) {
	for _, name := range []string{"full.yaml", "with_file.yaml"} {
		s, err := LoadScenario(filepath.Join(scenDir, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.MarshalResolved()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "topology_file") || !strings.Contains(string(out), "port: 8000") {
			t.Errorf("%s: resolved scenario lacks inline topology or config defaults:\n%s", name, out)
		}
		p := filepath.Join(t.TempDir(), "scenario.yaml")
		writeFile(t, p, string(out))
		again, err := LoadScenario(p, nil)
		if err != nil {
			t.Fatalf("%s: reloading the resolved scenario: %v\n%s", name, err, out)
		}
		out2, err := again.MarshalResolved()
		if err != nil || string(out2) != string(out) {
			t.Errorf("%s: resolved scenario not stable:\n%s\n---\n%s", name, out, out2)
		}
		if !reflect.DeepEqual(again.Topology, s.Topology) {
			t.Errorf("%s: topology changed: %+v vs %+v", name, again.Topology, s.Topology)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// badBase is edited by each case of TestScenarioInvalid; line numbers below refer to it.
const badBase = `version: 1
name: bad
duration: 30s
topology:
  nodes:
    - name: device
    - name: edge1
  links:
    - between: [device, edge1]
components:
  - name: echo
    kind: test-server
    node: edge1
  - name: plain
    kind: test-plain
    node: edge1
workloads:
  - name: load
    kind: test-load
    node: device
    config: {target: echo, rate: 5}
events:
  - at: 10s
    action: pause
    node: edge1
`

func TestScenarioInvalid(t *testing.T) {
	if _, err := ParseScenario("bad.yaml", []byte(badBase), nil); err != nil {
		t.Fatalf("base scenario invalid: %v", err)
	}
	// Real kinds may be registered too; the list must name all of them, ours included.
	componentKinds := strings.Join(kind.Names(kind.RoleComponent), ", ")
	if !strings.Contains(componentKinds, "test-plain, test-server") {
		t.Fatalf("component kinds = %s", componentKinds)
	}
	tests := []struct {
		name     string
		old, new string // edit of badBase (first occurrence)
		sets     []string
		want     []string
	}{
		{"unknown top-level field", "duration: 30s", "duraton: 30s", nil,
			[]string{"bad.yaml:3:1:", `unknown field "duraton"`, `did you mean "duration"`, "allowed: version, name, description, seed, duration, warmup, repeats, topology, topology_file, components, workloads, events, sweep"}},
		{"unknown instance field", "    node: device\n", "    node: device\n    nodes: 2\n", nil,
			[]string{"bad.yaml:21:5:", `unknown field "nodes" in workloads[0]`, "allowed: name, kind, node, config"}},
		{"unknown kind", "kind: test-plain", "kind: test-plian", nil,
			[]string{"bad.yaml:15:11:", `unknown component kind "test-plian"; component kinds: ` + componentKinds}},
		{"kind of other role", "kind: test-plain", "kind: test-load", nil,
			[]string{"bad.yaml:15:11:", `kind "test-load" is a workload, not a component; component kinds: ` + componentKinds}},
		{"unknown node", "    node: device", "    node: edge9", nil,
			[]string{"bad.yaml:20:11:", `unknown node "edge9"; nodes: device, edge1`}},
		{"wrong type for duration", "duration: 30s", "duration: [30s]", nil,
			[]string{"bad.yaml:3:11:", "duration: want a duration like 10ms, got a list"}},
		{"bare number duration", "duration: 30s", "duration: 30", nil,
			[]string{"bad.yaml:3:11:", `invalid duration "30": a unit is required`}},
		{"bad bandwidth unit", "- between: [device, edge1]", "- between: [device, edge1]\n      bandwidth: 100mb", nil,
			[]string{"bad.yaml:10:18:", `invalid bandwidth "100mb": want a number with unit bit, kbit, Mbit, Gbit, bps, kbps, Mbps, Gbps`}},
		{"wrong config type", "rate: 5", "rate: fast", nil,
			[]string{"bad.yaml:21:34:", `workloads[0].config.rate: want an integer, got "fast"`}},
		{"unknown config field", "rate: 5", "rat: 5", nil,
			[]string{"bad.yaml:21:28:", `unknown field "rat" in workloads[0].config`, "allowed: target, rate"}},
		{"kind validate", "    node: edge1\n  - name: plain", "    node: edge1\n    config: {port: 0}\n  - name: plain", nil,
			[]string{"bad.yaml:14:13:", "components[0].config: port must be between 1 and 65535"}},
		{"event at beyond duration", "at: 10s", "at: 30s", nil,
			[]string{"bad.yaml:23:9:", "at must be within [0, duration) = [0, 30s), got 30s"}},
		{"event without trigger", "  - at: 10s\n    action: pause", "  - action: pause", nil,
			[]string{"bad.yaml:23:5:", "needs a trigger: at (a time like 10s) or after_requests"}},
		{"unknown action", "action: pause", "action: explode", nil,
			[]string{"bad.yaml:24:13:", `unknown action "explode"; allowed: partition, heal, link, kill, pause, resume, cpu, restart, set`}},
		{"fault fields", "action: pause\n    node: edge1", "action: pause\n    node: edge9", nil,
			[]string{"bad.yaml:23:5:", `events[0]: unknown node "edge9"; nodes: device, edge1`}},
		{"set without Set", "action: pause\n    node: edge1", "action: set\n    component: plain\n    config: {x: 1}", nil,
			[]string{"bad.yaml:25:16:", `component "plain" (kind test-plain) cannot be changed at run time; components that support set: echo`}},
		{"set unknown config", "action: pause\n    node: edge1", "action: set\n    component: echo\n    config: {dealy: 1ms}", nil,
			[]string{"bad.yaml:26:14:", `unknown field "dealy" in events[0].config`, "allowed: port, delay"}},
		{"duplicate names", "  - name: load", "  - name: echo", nil,
			[]string{"bad.yaml:18:11:", `duplicate name "echo"`}},
		{"bad version", "version: 1", "version: 2", nil,
			[]string{"bad.yaml:1:10:", "version 2 is not supported; supported versions: 1"}},
		{"warmup", "duration: 30s", "duration: 30s\nwarmup: 30s", nil,
			[]string{"bad.yaml:4:9:", "warmup must be at least 0 and less than duration"}},
		{"repeats zero", "duration: 30s", "duration: 30s\nrepeats: 0", nil,
			[]string{"bad.yaml:4:10:", "repeats must be at least 1"}},
		{"both topologies", "duration: 30s", "duration: 30s\ntopology_file: t.yaml", nil,
			[]string{"bad.yaml:4:16:", "set either topology or topology_file, not both"}},
		{"topology problem", "    - name: edge1", "    - name: Edge1", nil,
			[]string{"bad.yaml:7:13:", `invalid node name "Edge1"`}},
		{"sweep unknown path", "duration: 30s", "duration: 30s\nsweep:\n  workloads.lod.config.rate: [1, 2]", nil,
			[]string{"bad.yaml:5:3:", `no element "lod" in workloads; have: load or an index 0..0`}},
		{"sweep bad value", "duration: 30s", "duration: 30s\nsweep:\n  duration: [10s, 20]", nil,
			[]string{"bad.yaml:5:19:", `sweep duration: invalid duration "20"`}},
		{"sweep empty", "duration: 30s", "duration: 30s\nsweep:\n  duration: []", nil,
			[]string{"bad.yaml:5:3:", "needs at least one value"}},
		{"several problems", "kind: test-plain", "kind: nope", []string{},
			[]string{"bad.yaml:15:11:"}},
		{"--set unknown field", "", "", []string{"durration=1s"},
			[]string{"--set durration=1s:", `unknown field "durration" in the scenario; allowed: version, name`}},
		{"--set unknown element", "", "", []string{"components.echo-edge.config.delay=5ms"},
			[]string{`--set components.echo-edge.config.delay=5ms: no element "echo-edge" in components; have: echo, plain or an index 0..1`}},
		{"--set unknown config field", "", "", []string{"components.echo.config.dealy=5ms"},
			[]string{`unknown field "dealy" in components[0].config; allowed: port, delay`}},
		{"--set bad value", "", "", []string{"duration=soon"},
			[]string{`--set duration=soon: invalid duration "soon"`}},
		{"--set into a value", "", "", []string{"duration.x=1"},
			[]string{`--set duration.x=1: duration is a single value, it has no field "x"`}},
		{"--set syntax", "", "", []string{"duration"},
			[]string{"want path=value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(badBase, tt.old, tt.new, 1)
			if tt.old != "" && doc == badBase {
				t.Fatalf("edit %q not found", tt.old)
			}
			_, err := ParseScenario("bad.yaml", []byte(doc), tt.sets)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestScenarioReportsAllProblems(t *testing.T) {
	doc := strings.NewReplacer("name: bad", "name: ''", "kind: test-plain", "kind: nope", "node: device", "node: x", "at: 10s", "at: 1h").Replace(badBase)
	_, err := ParseScenario("bad.yaml", []byte(doc), nil)
	var es spec.Errors
	if !errors.As(err, &es) || len(es) != 4 {
		t.Fatalf("want 4 problems, got %v", err)
	}
	for i, line := range []int{2, 15, 20, 23} {
		if es[i].Line != line || es[i].File != "bad.yaml" {
			t.Errorf("problem %d at %s:%d, want line %d: %v", i, es[i].File, es[i].Line, line, es[i])
		}
	}
}

func TestExpandInvalidCombination(t *testing.T) {
	doc := strings.Replace(badBase, "duration: 30s", "duration: 30s\nwarmup: 1s\nsweep:\n  warmup: [5s, 40s]", 1)
	s, err := ParseScenario("bad.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Expand()
	if err == nil || !strings.Contains(err.Error(), "(warmup=40s)") || !strings.Contains(err.Error(), "warmup must be at least 0 and less than duration") {
		t.Errorf("Expand error = %v", err)
	}
}
