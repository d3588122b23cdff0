package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/spec"
)

// issueTopology is the example from the issue that introduced topologies.
const issueTopology = `nodes:
  - name: device
  - name: edge1
    cpus: 1.0
    memory: 512Mi
    power: {idle_w: 20, max_w: 80}
links:
  - between: [device, edge1]
    delay: 10ms
    jitter: 1ms
    loss: 0%
    bandwidth: 100Mbit
`

func TestParseTopologyIssueExample(t *testing.T) {
	topo, err := ParseTopology("topo.yaml", []byte(issueTopology))
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.NodeNames(); strings.Join(got, ",") != "device,edge1" {
		t.Errorf("nodes = %v", got)
	}
	edge, _ := topo.Node("edge1")
	if edge.CPUs != 1 || edge.Memory != 512<<20 || edge.Power != (Power{20, 80}) {
		t.Errorf("edge1 = %+v", edge)
	}
	dev, _ := topo.Node("device")
	if dev.Power != (Power{DefaultIdleW, DefaultMaxW}) {
		t.Errorf("device power default = %+v", dev.Power)
	}
	l, ok := topo.Link("edge1", "device")
	if !ok || l.Delay.Duration != 10*time.Millisecond || l.Jitter.Duration != time.Millisecond ||
		l.Loss != 0 || l.Bandwidth != 100e6 || l.Queue != DefaultQueue {
		t.Errorf("link = %+v", l)
	}
	if topo.Network != DefaultNetwork || topo.MTU != DefaultMTU {
		t.Errorf("defaults: network %q mtu %d", topo.Network, topo.MTU)
	}
	addrs, prefix, err := topo.Addresses()
	if err != nil || prefix.String() != DefaultNetwork || addrs["device"].String() != "10.77.0.1" || addrs["edge1"].String() != "10.77.0.2" {
		t.Errorf("Addresses = %v %v %v", addrs, prefix, err)
	}
}

func TestLoadTopology(t *testing.T) {
	p := filepath.Join(t.TempDir(), "topo.yaml")
	if err := os.WriteFile(p, []byte(issueTopology), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTopology(p); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTopology(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestAddressesSkipPinned(t *testing.T) {
	topo := &Topology{Network: "192.168.5.0/29", Nodes: []Node{{Name: "a"}, {Name: "b", Address: "192.168.5.1"}, {Name: "c"}}}
	addrs, _, err := topo.Addresses()
	if err != nil {
		t.Fatal(err)
	}
	if addrs["a"].String() != "192.168.5.2" || addrs["b"].String() != "192.168.5.1" || addrs["c"].String() != "192.168.5.3" {
		t.Errorf("addrs = %v", addrs)
	}
	topo.Network = "192.168.5.0/30" // 2 host addresses for 3 nodes
	if _, _, err := topo.Addresses(); err == nil || !strings.Contains(err.Error(), "no room for 3 nodes") {
		t.Errorf("full network: %v", err)
	}
}

func TestTopologyInvalid(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"no nodes", "nodes: []\n", []string{"topo.yaml:1:8:", "at least one node"}},
		{"bad name", "nodes:\n  - name: Edge_1\n", []string{"topo.yaml:2:11:", `invalid node name "Edge_1"`, "lowercase letters, digits and '-'"}},
		{"long name", "nodes:\n  - name: " + strings.Repeat("a", 33) + "\n", []string{"topo.yaml:2:11:", "at most 32 characters"}},
		{"missing name", "nodes:\n  - cpus: 1\n", []string{"topo.yaml:2:5:", "name is required"}},
		{"dup name", "nodes:\n  - name: a\n  - name: a\n", []string{"topo.yaml:3:11:", `duplicate node name "a"`}},
		{"unknown field", "nodes:\n  - name: a\n    cpu: 2\n", []string{"topo.yaml:3:5:", `unknown field "cpu"`, "allowed: name, address, cpus, memory, power, labels"}},
		{"cpus", "nodes:\n  - name: a\n    cpus: -1\n", []string{"topo.yaml:3:11:", "cpus must be between 0 (unlimited) and 1024"}},
		{"memory", "nodes:\n  - name: a\n    memory: 1Mi\n", []string{"topo.yaml:3:13:", "at least 4Mi"}},
		{"power", "nodes:\n  - name: a\n    power: {idle_w: 90, max_w: 80}\n", []string{"topo.yaml:3:12:", "idle_w (90) must not exceed max_w (80)"}},
		{"unknown link node", "nodes:\n  - name: a\n  - name: b\nlinks:\n  - between: [a, c]\n", []string{"topo.yaml:5:18:", `unknown node "c"; nodes: a, b`}},
		{"self link", "nodes:\n  - name: a\nlinks:\n  - between: [a, a]\n", []string{"topo.yaml:4:14:", "two distinct nodes"}},
		{"three ends", "nodes:\n  - name: a\nlinks:\n  - between: [a, b, c]\n", []string{"topo.yaml:4:14:", "exactly two nodes"}},
		{"dup link", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n  - between: [b, a]\n", []string{"topo.yaml:4:14:", "duplicate link between b and a"}},
		{"jitter", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    delay: 1ms\n    jitter: 2ms\n", []string{"topo.yaml:5:13:", "jitter must not exceed delay"}},
		{"negative delay", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    delay: -1ms\n", []string{"topo.yaml:4:12:", "delay must not be negative"}},
		{"loss", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    loss: 150%\n", []string{"topo.yaml:4:11:", "between 0% and 100%"}},
		{"loss no unit", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    loss: 0.1\n", []string{"topo.yaml:4:11:", "followed by %"}},
		{"bandwidth unit", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    bandwidth: 100mb\n", []string{"topo.yaml:4:16:", "bit, kbit, Mbit, Gbit, bps, kbps, Mbps, Gbps"}},
		{"delay type", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    delay: [1]\n", []string{"topo.yaml:4:12:", "want a duration like 10ms"}},
		{"queue", "nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    queue: -5\n", []string{"topo.yaml:4:12:", "queue must not be negative"}},
		{"network", "network: 10.0.0.0/33\nnodes: [{name: a}]\n", []string{"topo.yaml:1:10:", "want an IPv4 CIDR"}},
		{"network host bits", "network: 10.0.0.1/24\nnodes: [{name: a}]\n", []string{"topo.yaml:1:10:", "did you mean 10.0.0.0/24"}},
		{"network room", "network: 10.0.0.0/30\nnodes: [{name: a}, {name: b}, {name: c}]\n", []string{"topo.yaml:1:10:", "no room for 3 nodes"}},
		{"address outside", "network: 10.0.0.0/24\nnodes:\n  - name: a\n    address: 10.0.1.1\n", []string{"topo.yaml:4:14:", "not a host address of network 10.0.0.0/24"}},
		{"address dup", "nodes:\n  - name: a\n    address: 10.77.0.9\n  - name: b\n    address: 10.77.0.9\n", []string{"topo.yaml:5:14:", "already used by node \"a\""}},
		{"mtu", "mtu: 100\nnodes: [{name: a}]\n", []string{"topo.yaml:1:6:", "mtu must be between 576 and 65535"}},
		{"several", "nodes:\n  - name: A\n    cpus: 2000\n", []string{"topo.yaml:2:11:", "topo.yaml:3:11:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTopology("topo.yaml", []byte(tt.doc))
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

func TestFaultValidate(t *testing.T) {
	topo, err := ParseTopology("topo.yaml", []byte(issueTopology+"  - between: [edge1, cloud]\n"+"# cloud\n"))
	if err == nil {
		t.Fatal("link to undeclared node accepted")
	}
	topo, err = ParseTopology("topo.yaml", []byte(issueTopology))
	if err != nil {
		t.Fatal(err)
	}
	comps := []string{"echo"}
	d := func(s string) *spec.Duration { v, _ := spec.ParseDuration(s); return &v }
	pct := func(s string) *spec.Percent { v, _ := spec.ParsePercent(s); return &v }
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		fault Fault
		comps []string
		want  string // "" = valid
	}{
		{"partition node", Fault{Action: FaultPartition, Node: "edge1"}, comps, ""},
		{"partition link", Fault{Action: FaultPartition, Link: []string{"edge1", "device"}}, comps, ""},
		{"partition groups", Fault{Action: FaultPartition, Groups: [][]string{{"device"}, {"edge1"}}}, comps, ""},
		{"partition none", Fault{Action: FaultPartition}, comps, "exactly one of node"},
		{"partition two", Fault{Action: FaultPartition, Node: "edge1", Link: []string{"edge1", "device"}}, comps, "exactly one of node"},
		{"partition one group", Fault{Action: FaultPartition, Groups: [][]string{{"device"}}}, comps, "at least two groups"},
		{"partition group twice", Fault{Action: FaultPartition, Groups: [][]string{{"device"}, {"device", "edge1"}}}, comps, `node "device" is in groups[0] and groups[1]`},
		{"heal all", Fault{Action: FaultHeal}, comps, ""},
		{"heal node", Fault{Action: FaultHeal, Node: "edge1"}, comps, ""},
		{"link", Fault{Action: FaultLink, Link: []string{"device", "edge1"}, Delay: d("50ms"), Loss: pct("5%")}, comps, ""},
		{"link no props", Fault{Action: FaultLink, Link: []string{"device", "edge1"}}, comps, "at least one of delay, jitter, loss, bandwidth"},
		{"link missing", Fault{Action: FaultLink, Delay: d("1ms")}, comps, "link needs link: [a, b]"},
		{"link unknown", Fault{Action: FaultLink, Link: []string{"device", "cloud"}, Delay: d("1ms")}, comps, `unknown node "cloud"; nodes: device, edge1`},
		{"link jitter", Fault{Action: FaultLink, Link: []string{"device", "edge1"}, Delay: d("1ms"), Jitter: d("2ms")}, comps, "jitter must not exceed delay"},
		{"kill node", Fault{Action: FaultKill, Node: "edge1"}, comps, ""},
		{"kill component", Fault{Action: FaultKill, Component: "echo"}, comps, ""},
		{"kill unknown component", Fault{Action: FaultKill, Component: "nope"}, comps, `unknown component "nope"; components: echo`},
		{"kill component cli", Fault{Action: FaultKill, Component: "nope"}, nil, ""},
		{"kill nothing", Fault{Action: FaultKill}, comps, "exactly one of node or component"},
		{"pause", Fault{Action: FaultPause, Node: "device"}, comps, ""},
		{"pause no node", Fault{Action: FaultPause}, comps, "pause needs node; nodes: device, edge1"},
		{"resume unknown", Fault{Action: FaultResume, Node: "x"}, comps, `unknown node "x"; nodes: device, edge1`},
		{"cpu", Fault{Action: FaultCPU, Node: "edge1", CPUs: f(0.5)}, comps, ""},
		{"cpu missing", Fault{Action: FaultCPU, Node: "edge1"}, comps, "cpu needs node and cpus"},
		{"cpu negative", Fault{Action: FaultCPU, Node: "edge1", CPUs: f(-1)}, comps, "cpus must be between 0"},
		{"restart", Fault{Action: FaultRestart, Component: "echo"}, comps, ""},
		{"restart node", Fault{Action: FaultRestart, Node: "edge1"}, comps, "node does not apply to action restart (it takes: component)"},
		{"misplaced field", Fault{Action: FaultPartition, Node: "edge1", Delay: d("1ms")}, comps, "delay does not apply to action partition"},
		{"unknown action", Fault{Action: "explode"}, comps, "unknown action \"explode\"; allowed: partition, heal, link, kill, pause, resume, cpu, restart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.fault.Validate(topo, tt.comps)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want containing %q", err, tt.want)
			}
		})
	}
}
