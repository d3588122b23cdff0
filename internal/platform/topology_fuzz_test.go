package platform

import "testing"

// FuzzParseTopology: any input gives a topology or an error, never a panic, and an accepted
// topology always yields addresses for all its nodes.
func FuzzParseTopology(f *testing.F) {
	f.Add([]byte("nodes: [{name: a}, {name: b}]\nlinks: [{between: [a, b], delay: 10ms, loss: 1%, bandwidth: 10Mbit}]\n"))
	f.Add([]byte("network: 10.1.0.0/30\nnodes: [{name: a, address: 10.1.0.2}, {name: b}]\n"))
	f.Add([]byte("nodes:\n  - name: x\n    cpus: 0.5\n    memory: 64Mi\n    power: {idle_w: 1, max_w: 2}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := ParseTopology("fuzz.yaml", data)
		if err != nil {
			return
		}
		addrs, _, err := topo.Addresses()
		if err != nil {
			t.Fatalf("valid topology without addresses: %v", err)
		}
		if len(addrs) != len(topo.Nodes) {
			t.Fatalf("%d addresses for %d nodes", len(addrs), len(topo.Nodes))
		}
	})
}
