package chaos

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

// threeTier loads scenarios/topologies/three-tier.yaml: device -10ms- edge -50ms- cloud.
func threeTier(t *testing.T) *platform.Topology {
	t.Helper()
	// go test runs in the package's directory (runtime.Caller's file is module-relative under
	// -trimpath, which make test uses).
	topo, err := platform.LoadTopology(filepath.Join("..", "..", "..", "..", "scenarios", "topologies", "three-tier.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func path(t *testing.T, n *Network, a, b string) Path {
	t.Helper()
	for _, p := range n.Paths() {
		if p.A == a && p.B == b || p.A == b && p.B == a {
			return p
		}
	}
	t.Fatalf("no path %s-%s in %+v", a, b, n.Paths())
	return Path{}
}

func apply(t *testing.T, n *Network, f platform.Fault) string {
	t.Helper()
	detail, err := n.Apply(f)
	if err != nil {
		t.Fatalf("Apply(%+v): %v", f, err)
	}
	return detail
}

func ms(d int) *spec.Duration {
	v := spec.Duration{Duration: time.Duration(d) * time.Millisecond}
	return &v
}

func TestPathsThreeTier(t *testing.T) {
	n := NewNetwork(threeTier(t))
	ps := n.Paths()
	if len(ps) != 3 || ps[0].A != "device" || ps[0].B != "edge" || ps[1].B != "cloud" || ps[2].A != "edge" {
		t.Fatalf("pairs not in declaration order: %+v", ps)
	}
	dc := path(t, n, "device", "cloud")
	if !dc.Reachable || dc.Delay != 60*time.Millisecond {
		t.Fatalf("device-cloud = %+v, want reachable with 60ms", dc)
	}
	if dc.Bandwidth != 100_000_000 {
		t.Fatalf("device-cloud bandwidth %d, want the narrower link's 100 Mbit/s", dc.Bandwidth)
	}
	if ec := path(t, n, "edge", "cloud"); ec.Bandwidth != 1_000_000_000 || ec.Delay != 50*time.Millisecond {
		t.Fatalf("edge-cloud = %+v", ec)
	}

	if d := apply(t, n, platform.Fault{Action: platform.FaultPartition, Node: "cloud"}); d != "isolated cloud" {
		t.Fatalf("detail %q", d)
	}
	if path(t, n, "device", "cloud").Reachable || path(t, n, "edge", "cloud").Reachable {
		t.Fatal("cloud reachable while isolated")
	}
	if !path(t, n, "device", "edge").Reachable {
		t.Fatal("device-edge cut by isolating cloud")
	}
	if d := apply(t, n, platform.Fault{Action: platform.FaultHeal}); d != "healed 1 partition(s)" {
		t.Fatalf("detail %q", d)
	}
	if p := path(t, n, "device", "cloud"); !p.Reachable || p.Delay != 60*time.Millisecond {
		t.Fatalf("after heal: %+v", p)
	}
}

// TestLinkFaultReroutes adds a direct device-cloud link slower than the two-hop route, then makes
// the two-hop route slower still: traffic takes the shorter route each time.
func TestLinkFaultReroutes(t *testing.T) {
	topo := threeTier(t)
	topo.Links = append(topo.Links, platform.Link{Between: []string{"device", "cloud"}, LinkProps: platform.LinkProps{Delay: *ms(80)}})
	n := NewNetwork(topo)
	if p := path(t, n, "device", "cloud"); p.Delay != 60*time.Millisecond {
		t.Fatalf("device-cloud %v, want the 60ms two-hop route", p.Delay)
	}
	d := apply(t, n, platform.Fault{Action: platform.FaultLink, Link: []string{"edge", "cloud"}, Delay: ms(100)})
	if d != "link edge-cloud delay=100ms" {
		t.Fatalf("detail %q", d)
	}
	p := path(t, n, "device", "cloud")
	if p.Delay != 80*time.Millisecond || p.Bandwidth != 0 {
		t.Fatalf("device-cloud %+v, want the direct 80ms unlimited link", p)
	}
	// Cutting the direct link falls back to the (now 110 ms) two-hop route.
	apply(t, n, platform.Fault{Action: platform.FaultPartition, Link: []string{"cloud", "device"}})
	if p := path(t, n, "device", "cloud"); !p.Reachable || p.Delay != 110*time.Millisecond {
		t.Fatalf("with the direct link cut: %+v", p)
	}
	apply(t, n, platform.Fault{Action: platform.FaultHeal, Link: []string{"device", "cloud"}})
	if p := path(t, n, "device", "cloud"); p.Delay != 80*time.Millisecond {
		t.Fatalf("after healing the link: %+v", p)
	}
}

func TestLossJitterAndBandwidthCombine(t *testing.T) {
	n := NewNetwork(threeTier(t))
	loss := spec.Percent(0.1)
	apply(t, n, platform.Fault{Action: platform.FaultLink, Link: []string{"device", "edge"}, Loss: &loss, Jitter: ms(2)})
	loss2 := spec.Percent(0.2)
	bw := spec.Bandwidth(10_000_000)
	d := apply(t, n, platform.Fault{Action: platform.FaultLink, Link: []string{"edge", "cloud"}, Loss: &loss2, Jitter: ms(5), Bandwidth: &bw})
	if d != "link edge-cloud jitter=5ms loss=20% bandwidth=10000000bit/s" {
		t.Fatalf("detail %q", d)
	}
	p := path(t, n, "device", "cloud")
	if want := 1 - 0.9*0.8; math.Abs(p.Loss-want) > 1e-9 {
		t.Fatalf("loss %g, want %g", p.Loss, want)
	}
	if p.Jitter != 7*time.Millisecond || p.Delay != 60*time.Millisecond || p.Bandwidth != 10_000_000 {
		t.Fatalf("path %+v, want jitter 7ms, delay 60ms, bandwidth 10 Mbit/s", p)
	}
	if p := path(t, n, "device", "edge"); math.Abs(p.Loss-0.1) > 1e-9 || p.Bandwidth != 100_000_000 {
		t.Fatalf("device-edge %+v", p)
	}
}

func TestGroupsSplit(t *testing.T) {
	n := NewNetwork(threeTier(t))
	d := apply(t, n, platform.Fault{Action: platform.FaultPartition, Groups: [][]string{{"device", "edge"}, {"cloud"}}})
	if d != "split [device,edge] | [cloud]" {
		t.Fatalf("detail %q", d)
	}
	apply(t, n, platform.Fault{Action: platform.FaultPartition, Node: "device"})
	if path(t, n, "edge", "cloud").Reachable || path(t, n, "device", "edge").Reachable {
		t.Fatal("split or isolation not in force")
	}
	// Healing the split leaves the isolation: overlapping partitions heal independently.
	if d := apply(t, n, platform.Fault{Action: platform.FaultHeal, Groups: [][]string{{"cloud"}, {"edge", "device"}}}); !strings.HasPrefix(d, "healed groups") {
		t.Fatalf("detail %q", d)
	}
	if !path(t, n, "edge", "cloud").Reachable || path(t, n, "device", "edge").Reachable {
		t.Fatalf("after healing the split: %+v", n.Paths())
	}
}

func TestApplyErrors(t *testing.T) {
	n := NewNetwork(threeTier(t))
	bad := spec.Percent(0.5)
	cases := []struct {
		name string
		f    platform.Fault
		want []string
	}{
		{"process fault", platform.Fault{Action: platform.FaultKill, Node: "edge"}, []string{`"kill" is not a network fault`, "partition, heal, link"}},
		{"unknown action", platform.Fault{Action: "flood"}, []string{`"flood"`, "partition, heal, link"}},
		{"unknown node", platform.Fault{Action: platform.FaultPartition, Node: "moon"}, []string{`unknown node "moon"`, "device, edge, cloud"}},
		{"missing link", platform.Fault{Action: platform.FaultLink, Link: []string{"device", "cloud"}, Loss: &bad}, []string{"no link between device and cloud", "[device, edge]"}},
		{"link without changes", platform.Fault{Action: platform.FaultLink, Link: []string{"device", "edge"}}, []string{"at least one of delay"}},
		{"jitter over delay", platform.Fault{Action: platform.FaultLink, Link: []string{"device", "edge"}, Jitter: ms(20)}, []string{"jitter 20ms must not exceed delay 10ms"}},
		{"heal nothing matching", platform.Fault{Action: platform.FaultHeal, Node: "edge"}, []string{"no active partition matches node edge", "active: none"}},
		{"partition without target", platform.Fault{Action: platform.FaultPartition}, []string{"exactly one of node"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := n.Apply(c.f)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if p := path(t, n, "device", "edge"); !p.Reachable || p.Delay != 10*time.Millisecond || p.Jitter != 0 {
		t.Fatalf("a failed fault changed the network: %+v", p)
	}
}

func TestNeedsChaosMesh(t *testing.T) {
	plain := &platform.Topology{Nodes: []platform.Node{{Name: "a"}, {Name: "b"}}, Links: []platform.Link{{Between: []string{"a", "b"}}}}
	cases := []struct {
		name   string
		topo   *platform.Topology
		faults []platform.Fault
		want   string
	}{
		{"nothing", plain, nil, ""},
		{"process faults only", plain, []platform.Fault{{Action: platform.FaultKill, Node: "a"}, {Action: platform.FaultCPU, Node: "b"}}, ""},
		{"link delay", threeTier(t), nil, "link device-edge sets delay, bandwidth"},
		{"partition", plain, []platform.Fault{{Action: platform.FaultKill}, {Action: platform.FaultPartition, Node: "a"}}, "partition fault"},
		{"heal", plain, []platform.Fault{{Action: platform.FaultHeal}}, "heal fault"},
		{"link fault", plain, []platform.Fault{{Action: platform.FaultLink}}, "link fault"},
		{"unconnected nodes", &platform.Topology{Nodes: []platform.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			Links: []platform.Link{{Between: []string{"a", "b"}}}}, nil, "nodes a and c have no route between them"},
	}
	for _, c := range cases {
		got := NeedsChaosMesh(c.topo, c.faults)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: NeedsChaosMesh = %q, want %q", c.name, got, c.want)
		}
	}
}
