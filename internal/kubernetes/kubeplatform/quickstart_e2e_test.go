package kubeplatform

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/chaos"
	"github.com/continuum-project/continuum/internal/results"
	_ "github.com/continuum-project/continuum/internal/systems/install" // the scenario's kinds
)

// TestQuickstartOnCluster brings a one-node cluster up on this host (package cluster: the
// control plane on continuum kv, containerd, kubelet), runs scenarios/kubernetes/quickstart.yaml
// on it with `continuum run --platform kubernetes`'s provider, and checks what a researcher
// would: the results directory and report as on the testbed, the load's series before and after
// the kill and the restart, the instances' logs and output, samples per node and per instance,
// and nothing of the run left in the cluster.
func TestQuickstartOnCluster(t *testing.T) {
	t.Parallel()
	env := sharedCluster(t)
	bin, root, prov := env.bin, env.root, env.prov
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	log := testLogger()
	scenario := filepath.Join(root, "scenarios", "kubernetes", "quickstart.yaml")
	if _, err := experiment.Check(scenario, experiment.Options{Platform: prov, Binary: bin}); err != nil {
		t.Fatalf("run --check (with a server-side dry run): %v", err)
	}
	// The quickstart itself has link delays: without Chaos Mesh it is refused before anything
	// starts, naming what to install; with Chaos Mesh's CRDs registered, its NetworkChaos
	// objects pass the API server's dry run.
	withLinks := filepath.Join(root, "scenarios", "quickstart.yaml")
	if _, err := experiment.Check(withLinks, experiment.Options{Platform: prov, Binary: bin}); err == nil ||
		!strings.Contains(err.Error(), "install Chaos Mesh") || !strings.Contains(err.Error(), "device-edge") {
		t.Errorf("run --check of a scenario with link delays on a cluster without Chaos Mesh: %v", err)
	}
	c, err := prov.connect()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range chaos.CRDs() {
		if _, err := c.dyn.Resource(chaos.CRDResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		fresh, err := prov.connect() // a discovery client that has not cached the old groups
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := chaos.Installed(ctx, fresh.cs.Discovery()); ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the Chaos Mesh CRDs were not served")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := experiment.Check(withLinks, experiment.Options{Platform: prov, Binary: bin}); err != nil {
		t.Errorf("run --check with Chaos Mesh's CRDs registered: %v", err)
	}

	res, err := experiment.Execute(ctx, scenario, experiment.Options{Platform: prov, Binary: bin, Out: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 {
		t.Fatalf("%d of %d runs failed (%s)", res.Failed, res.Runs, res.Dir)
	}
	run := filepath.Join(res.Dir, results.RunsDir, "001")
	for _, f := range []string{res.Report, filepath.Join(res.Dir, "summary.json"), filepath.Join(run, "run.json"),
		filepath.Join(run, "workloads", "load", results.StatsFile)} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("results: %v", err)
		}
	}

	// events.csv: the kill and the restart, both applied.
	var actions []string
	readCSV(t, filepath.Join(run, "events.csv"), []string{"action", "status", "detail"}, func(r results.CSVRow) {
		actions = append(actions, r.Str("action"))
		if r.Str("status") != "ok" {
			t.Errorf("event %s: status %q (%s)", r.Str("action"), r.Str("status"), r.Str("detail"))
		}
	})
	if strings.Join(actions, ",") != "kill,restart" {
		t.Errorf("events %v, want kill,restart", actions)
	}

	// The load's seconds: edge serves throughout; cloud serves, is killed at 4 s, and serves
	// again after its restart at 7 s.
	type second struct{ ok, errors float64 }
	series := map[string][]second{}
	readCSV(t, filepath.Join(run, "workloads", "load", "timeseries.csv"), []string{"t_s", "series", "ok", "errors"}, func(r results.CSVRow) {
		v, err := r.Floats("ok", "errors")
		if err != nil {
			t.Fatal(err)
		}
		series[r.Str("series")] = append(series[r.Str("series")], second{v[0], v[1]})
	})
	edge, cloud := series["edge"], series["cloud"]
	if len(edge) < 10 || len(cloud) < 10 {
		t.Fatalf("timeseries: %d and %d seconds, want 10", len(edge), len(cloud))
	}
	for s, row := range edge[:10] {
		if row.ok == 0 || row.errors != 0 {
			t.Errorf("edge second %d: %+v, want successes only", s, row)
		}
	}
	for s := range 3 {
		if cloud[s].ok == 0 || cloud[s].errors != 0 {
			t.Errorf("cloud second %d (before the kill): %+v, want successes only", s, cloud[s])
		}
	}
	// The load's seconds count from its own start, a little after the run's (the pod's agent
	// starts it): its second 5 lies between the kill and the restart, its second 6 may reach
	// past the restart.
	if cloud[5].ok != 0 || cloud[5].errors == 0 {
		t.Errorf("cloud second 5 (killed at 4 s, restarted at 7 s): %+v, want errors only", cloud[5])
	}
	if after := cloud[8].ok + cloud[9].ok; after == 0 {
		t.Errorf("cloud seconds 8-9 (restarted at 7 s): %+v %+v, want successes", cloud[8], cloud[9])
	}

	// The instances' logs, streamed from their pods: echo-cloud started twice.
	b, err := os.ReadFile(filepath.Join(run, results.LogsDir, "cloud.echo-cloud.stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "echo server listening"); n != 2 {
		t.Errorf("echo-cloud started %d times, want 2 (the restart):\n%s", n, b)
	}

	// samples.csv: a row per node and per instance.
	seen := map[string]bool{}
	readCSV(t, filepath.Join(run, "samples.csv"), []string{"node", "component"}, func(r results.CSVRow) {
		seen[r.Str("node")+"/"+r.Str("component")] = true
	})
	for _, want := range []string{"device/", "edge/", "cloud/", "device/load", "edge/echo-edge", "cloud/echo-cloud"} {
		if !seen[want] {
			t.Errorf("samples.csv has no rows for %q (has %v)", want, seen)
		}
	}

	// Nothing of the run is left: its namespace is gone.
	nss, err := c.cs.CoreV1().Namespaces().List(ctx, runSelector(t, run))
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		t.Errorf("namespace %s (phase %s) left after the run", ns.Name, ns.Status.Phase)
	}

	// What a crashed runner leaves, `run --platform kubernetes --cleanup RUN` deletes.
	left := podSpec{Run: "crashed-001", Namespace: Namespace("crashed-001")}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, left.namespace(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, err := prov.Cleanup(ctx, "crashed-001")
	if err != nil || len(deleted) != 1 || deleted[0] != "namespace/continuum-crashed-001" {
		t.Errorf("Cleanup = %v, %v; want namespace/continuum-crashed-001", deleted, err)
	}
	if deleted, err := prov.Cleanup(ctx, "never-ran"); err != nil || len(deleted) != 0 {
		t.Errorf("Cleanup of a run that left nothing = %v, %v", deleted, err)
	}
}

func readCSV(t *testing.T, path string, cols []string, fn func(results.CSVRow)) {
	t.Helper()
	if err := results.ReadCSV(path, cols, func(r results.CSVRow) error { fn(r); return nil }); err != nil {
		t.Fatal(err)
	}
}
