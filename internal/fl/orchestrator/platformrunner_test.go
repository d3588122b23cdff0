package orchestrator

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// recordingPlatform is a platform.Instances that records starts and stops and reports a fixed
// state.
type recordingPlatform struct {
	started []platform.InstanceSpec
	stopped []string
	state   platform.State
}

func (r *recordingPlatform) Start(_ context.Context, s platform.InstanceSpec) (string, error) {
	r.started = append(r.started, s)
	return s.Node, nil
}

func (r *recordingPlatform) Stop(_ context.Context, name string, _ time.Duration) error {
	r.stopped = append(r.stopped, name)
	return nil
}

func (r *recordingPlatform) State(context.Context) (platform.State, error) { return r.state, nil }
func (r *recordingPlatform) Addr(node string, port int) string {
	return fmt.Sprintf("%s:%d", node, port)
}
func (r *recordingPlatform) SharesNode(string) bool { return true }

// The platform runner starts a service on its host node with its command, environment and
// output directory; observes as exited only the FL services that ended (how they ended) and as
// isolated the nodes the platform says are; and the members are the nodes with an fl/type label.
func TestPlatformRunnerAndMembers(t *testing.T) {
	rp := &recordingPlatform{state: platform.State{
		Instances: []platform.InstanceState{
			{Name: "fl-cl-n4", Ended: "exit 1"}, {Name: "fl-ga-n1", Running: true}, {Name: "other", Ended: "signal killed"},
		},
		Nodes: []platform.NodeState{
			{Name: "n1", Labels: map[string]string{"fl/type": "global"}}, {Name: "n4", Isolated: true, Labels: map[string]string{"fl/type": "client", "comm/n1": "10", "data/0": "100"}},
			{Name: "host"},
		},
	}}
	r := &PlatformRunner{Platform: rp, LogDir: "/logs"}
	ctx := context.Background()
	host, err := r.Start(ctx, Service{Name: "fl-cl-n4", Node: "n4", Host: "n4", Args: []string{"python", "-m", "x"}, Env: []string{"A=1"}, Out: "/out/n4"})
	if err != nil || host != "n4" {
		t.Fatalf("Start = %q, %v; want the platform's host n4", host, err)
	}
	want := platform.InstanceSpec{Name: "fl-cl-n4", Node: "n4", Args: []string{"python", "-m", "x"}, Env: []string{"A=1"}, Dir: "/out/n4",
		DataDirs: []string{"/out/n4"}, LogDir: "/logs"}
	if !reflect.DeepEqual(rp.started, []platform.InstanceSpec{want}) {
		t.Errorf("started %+v, want %+v", rp.started, want)
	}
	if _, err := r.Start(ctx, Service{Name: "fl-x"}); err == nil {
		t.Error("a service without a host node was started")
	}
	// fl-cl-n5 started, then gone from the platform (its pod deleted by someone else): exited.
	if _, err := r.Start(ctx, Service{Name: "fl-cl-n5", Node: "n5", Host: "n5", Args: []string{"python"}, Out: "/out/n5"}); err != nil {
		t.Fatal(err)
	}
	obs, err := r.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obs.Exited, map[string]string{"fl-cl-n4": "exit 1", "fl-cl-n5": gone}) || !reflect.DeepEqual(obs.Isolated, map[string]bool{"n4": true}) {
		t.Errorf("observation %+v", obs)
	}
	// Stopped by the orchestrator: no longer its to report.
	if err := r.Stop(ctx, "fl-cl-n5"); err != nil {
		t.Fatal(err)
	}
	if obs, _ := r.Observe(ctx); obs.Exited["fl-cl-n5"] != "" {
		t.Errorf("a service stopped by the orchestrator observed as %q", obs.Exited["fl-cl-n5"])
	}
	if r.Apart("n1") {
		t.Error("Apart on a platform whose instances share their node")
	}
	members, err := PlatformMembers(rp)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 2 || members[0].Host != "n1" || members[1].Host != "n4" {
		t.Errorf("members %+v, want n1 and n4 (the labelled nodes) on their own hosts", members)
	}
	rp.state.Nodes = []platform.NodeState{{Name: "host"}}
	if _, err := PlatformMembers(rp)(ctx); err == nil {
		t.Error("no labelled node: no error")
	}
}
