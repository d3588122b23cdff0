package testbed

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestInstancesClient drives a testbed through the client components get for its endpoint
// (platform.InstancesFor): an instance starts on its node and is reached at the node's name, a
// second start of the name takes it over, an ended one says how it ended, Stop forgets it (and
// stopping nothing is no error), nodes carry their labels and are isolated by a partition of
// them, and what cannot cross the control socket is refused.
func TestInstancesClient(t *testing.T) {
	tb := startTestbed(t, `
nodes:
  - {name: a, labels: {fl/type: client}}
  - {name: b}
links: [{between: [a, b], delay: 1ms}]
`)
	ctx := context.Background()
	in, err := platform.InstancesFor(EndpointFor(filepath.Dir(tb.dir), tb.Name))
	if err != nil {
		t.Fatal(err)
	}
	host, err := in.Start(ctx, platform.InstanceSpec{Name: "w1", Node: "a", Args: []string{"sleep", "600"}})
	if err != nil || host != "a" {
		t.Fatalf("start w1 on a: host %q, %v; want a", host, err)
	}
	if got := in.Addr("b", 8080); got != "b:8080" {
		t.Errorf("Addr(b, 8080) = %q", got)
	}
	state := func() platform.State {
		t.Helper()
		st, err := in.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if w, ok := state().Instance("w1"); !ok || !w.Running || w.Node != "a" {
		t.Errorf("w1 after its start: %+v (found %v), want running on a", w, ok)
	}
	// The same name again: the sleeping instance is stopped, the new one exits 3 at once.
	if _, err := in.Start(ctx, platform.InstanceSpec{Name: "w1", Node: "a", Args: []string{"sh", "-c", "exit 3"}}); err != nil {
		t.Fatalf("start w1 again: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "w1 to end with exit 3", func() bool {
		w, ok := state().Instance("w1")
		return ok && !w.Running && w.Ended == "exit 3"
	})
	if err := in.Stop(ctx, "w1", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, ok := state().Instance("w1"); ok {
		t.Error("w1 still listed after Stop")
	}
	if err := in.Stop(ctx, "w1", time.Second); err != nil {
		t.Errorf("stopping an instance that is not there: %v, want no error", err)
	}

	nodes := map[string]platform.NodeState{}
	for _, n := range state().Nodes {
		nodes[n.Name] = n
	}
	if nodes["a"].Labels["fl/type"] != "client" || nodes["a"].Isolated || nodes["b"].Isolated {
		t.Errorf("nodes before the partition: %+v", nodes)
	}
	if _, err := tb.Inject(Fault{Action: FaultPartition, Node: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range state().Nodes {
		if n.Isolated != (n.Name == "a") {
			t.Errorf("node %s isolated %v after a partition of a", n.Name, n.Isolated)
		}
	}

	_, err = in.Start(ctx, platform.InstanceSpec{Name: "w2", Node: "b", Args: []string{"true"}, Stdout: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "Stdout") {
		t.Errorf("an instance with a Stdout writer: %v, want it refused", err)
	}
	if _, err := in.Start(ctx, platform.InstanceSpec{Name: "w3", Args: []string{"true"}}); err == nil {
		t.Error("an instance without a node was started")
	}
	if err := in.(*Instances).Client.StopWithin("w1", time.Hour); err == nil || !strings.Contains(err.Error(), "grace") {
		t.Errorf("a grace of an hour: %v, want it refused naming the grace", err)
	}
}
