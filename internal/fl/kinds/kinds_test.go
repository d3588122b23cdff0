package kinds_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/fl/flcmd"
	"github.com/continuum-project/continuum/internal/platform/platformtest"
	// The testbed registers its instances client (platform.InstancesFor), as in the binary: an
	// orchestrator on a testbed endpoint checks out.
	_ "github.com/continuum-project/continuum/internal/testbed"
)

func TestOrchestratorKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "fl-orchestrator", "port: 7171\nexclude: [n10]\npoll: 250ms\ngroup_clients: true\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	env := kind.Env{Binary: "/bin/continuum", Instance: "orch", Node: "n1", OutDir: "/r/orch", Platform: "testbed:fl@/run/c",
		Nodes: map[string]string{"n1": "10.0.0.1"}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "fl", "orchestrate", "--listen", "0.0.0.0:7171", "--advertise", "http://n1:7171",
		"--platform", "testbed:fl@/run/c", "--out", "/r/orch", "--poll", "250ms", "--exclude", "n10", "--group-clients=true"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:7171" {
		t.Errorf("args %q ready %q\nwant %q", cmd.Args, cmd.ReadyAddr, want)
	}
	if eps := k.Endpoints(cfg); len(eps) != 1 || eps[0].Protocol != kind.ProtocolHTTP || eps[0].Port != 7171 {
		t.Errorf("endpoints %+v", eps)
	}
	// A platform whose client this binary lacks is refused when the scenario is checked.
	env.Platform = "kubernetes:continuum-x/run1"
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "platform kubernetes") {
		t.Errorf("on kubernetes: %v, want a refusal naming the platform", err)
	}
	// A platform whose instances run apart from their nodes (pods) takes it: its services get
	// what they read in their command lines.
	env.Platform = platformtest.ApartEndpoint()
	if cmd, err := k.Command(env, cfg); err != nil || !slices.Contains(cmd.Args, platformtest.ApartEndpoint()) {
		t.Errorf("on a platform whose instances run apart: %q, %v", cmd.Args, err)
	}
	k, cfg = kindtest.Decode(t, "fl-orchestrator", "place: n1\n")
	if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), "place needs topology") {
		t.Errorf("place without topology: %v", err)
	}
}

func TestJobKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "fl-job", "orchestrator: orch\nstrategy: centralized\nepochs: 10\nrounds: 6\nlabels_per_client: 2\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, orch := kindtest.Decode(t, "fl-orchestrator", "port: 7070\n")
	env := kind.Env{Binary: "/bin/continuum", Instance: "job", Node: "n1", OutDir: "/r/workloads/job", Duration: 5 * time.Minute,
		Components: map[string]kind.Component{"orch": kindtest.Component(t, "n1", "fl-orchestrator", orch)}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The token file is the orchestrator's, in its component directory of the same run.
	want := []string{"/bin/continuum", "fl", "train", "--orchestrator", "http://n1:7070", "--out", "/r/workloads/job",
		"--token-file", "/r/components/orch/secrets/api-token", "--duration", "5m0s",
		"--strategy", "centralized", "--epochs", "10", "--rounds", "6", "--labels-per-client", "2"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q\nwant %q", cmd.Args, want)
	}
	for _, tc := range []struct{ src, want string }{
		{"rounds: 5\n", "orchestrator (--orchestrator): required"},
		{"orchestrator: orch\nstrategy: fastest\n", `"fastest"`},
		{"orchestrator: orch\ntarget_accuracy: 95\n", "target_accuracy (--target-accuracy): 95: want a fraction"},
		{"orchestrator: orch\ndataset: cifar10\n", "data_dir"},
	} {
		k, cfg := kindtest.Decode(t, "fl-job", tc.src)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
	_, echo := kindtest.Decode(t, "http-echo", "port: 8080\n")
	env.Components["orch"] = kindtest.Component(t, "n1", "http-echo", echo)
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "not an fl-orchestrator") {
		t.Errorf("an http-echo as the orchestrator: %v", err)
	}
}

// TestKindsReportEveryError: every bad key is reported at once, at its key, with the flag of
// the command the kind starts (one the command declares); good configs pass.
func TestKindsReportEveryError(t *testing.T) {
	train, orchestrate := pflag.NewFlagSet("train", pflag.ContinueOnError), pflag.NewFlagSet("orchestrate", pflag.ContinueOnError)
	tf, of := flcmd.DefaultTrainFlags(), flcmd.DefaultOrchestrateFlags()
	tf.Bind(train)
	of.Bind(orchestrate)
	for _, c := range []struct {
		kind, bad, good string
		flags           *pflag.FlagSet
		keys            []string
	}{
		{"fl-job", "{strategy: fastest, lr: -1, round_timeout: 0, labels_per_client: 11, dataset: cifar10}", "{orchestrator: orch}", train,
			[]string{"orchestrator", "strategy", "data_dir", "labels_per_client", "lr", "round_timeout"}},
		{"fl-orchestrator", "{port: 0, base_port: -1, poll: -1s, place: n1}", "{port: 7070, topology: t.csv, place: n1}", orchestrate,
			[]string{"port", "base_port", "poll", "place"}},
	} {
		fes := kindtest.FieldErrors(t, c.kind, c.bad, len(c.keys))
		if fes == nil {
			continue
		}
		for i, key := range c.keys {
			if fes[i].Key != key || !strings.HasPrefix(fes[i].Flag, "--") || c.flags.Lookup(strings.TrimPrefix(fes[i].Flag, "--")) == nil {
				t.Errorf("%s error %d: %+v, want key %s with a flag of its command", c.kind, i, *fes[i], key)
			}
		}
		if k, cfg := kindtest.Decode(t, c.kind, c.good); k.Validate(cfg) != nil {
			t.Errorf("%s %s: %v", c.kind, c.good, k.Validate(cfg))
		}
	}
}
