package chaos

import (
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

// FuzzApply applies sequences of network faults, valid or not, and checks that the network stays
// consistent: every pair once, delays never negative, loss a fraction, unique object names, and
// a heal of everything restoring every route.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{2, 9, 9, 1, 0, 7, 3})
	topo := &platform.Topology{
		Nodes: []platform.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
		Links: []platform.Link{
			{Between: []string{"a", "b"}, LinkProps: platform.LinkProps{Delay: spec.Duration{Duration: 5 * time.Millisecond}}},
			{Between: []string{"b", "c"}, LinkProps: platform.LinkProps{Delay: spec.Duration{Duration: 7 * time.Millisecond}, Bandwidth: 8000}},
			{Between: []string{"a", "c"}, LinkProps: platform.LinkProps{Delay: spec.Duration{Duration: 20 * time.Millisecond}}},
			{Between: []string{"c", "d"}},
		},
	}
	names := topo.NodeNames()
	f.Fuzz(func(t *testing.T, ops []byte) {
		n := NewNetwork(topo)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			node := names[int(arg)%len(names)]
			other := names[int(arg/4)%len(names)]
			var fault platform.Fault
			switch op % 6 {
			case 0:
				fault = platform.Fault{Action: platform.FaultPartition, Node: node}
			case 1:
				fault = platform.Fault{Action: platform.FaultPartition, Link: []string{node, other}}
			case 2:
				fault = platform.Fault{Action: platform.FaultPartition, Groups: [][]string{{node}, {other}}}
			case 3:
				fault = platform.Fault{Action: platform.FaultHeal, Node: node}
			case 4:
				d := spec.Duration{Duration: time.Duration(arg) * time.Millisecond}
				loss := spec.Percent(float64(arg%101) / 100)
				fault = platform.Fault{Action: platform.FaultLink, Link: []string{node, other}, Delay: &d, Loss: &loss}
			default:
				fault = platform.Fault{Action: []string{"kill", "cpu", "", "heal"}[arg%4]}
			}
			n.Apply(fault) // errors are fine; the state must stay consistent
		}
		ps := n.Paths()
		if len(ps) != len(names)*(len(names)-1)/2 {
			t.Fatalf("%d paths", len(ps))
		}
		for _, p := range ps {
			if p.Delay < 0 || p.Loss < 0 || p.Loss > 1 || !p.Reachable && (p.Delay != 0 || p.Bandwidth != 0) {
				t.Fatalf("bad path %+v", p)
			}
		}
		seen := map[string]bool{}
		for _, o := range n.Objects("ns", "run", nil) {
			if seen[o.GetName()] {
				t.Fatalf("name %s twice", o.GetName())
			}
			seen[o.GetName()] = true
		}
		if _, err := n.Apply(platform.Fault{Action: platform.FaultHeal}); err != nil {
			t.Fatal(err)
		}
		for _, p := range n.Paths() {
			if !p.Reachable {
				t.Fatalf("%s-%s unreachable after healing everything", p.A, p.B)
			}
		}
	})
}
