package kubeplatform

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/results"
)

// TestProxyDiscoversEndpointSlicesOnCluster runs scenarios/kubernetes/proxy.yaml on the shared
// one-node cluster: `continuum proxy` in the client's node pod, its discovery the kubernetes
// platform's source (the run's EndpointSlices, read with the node pod's ServiceAccount), in
// front of service dps, whose instances s1 and s2 run in two other node pods; s2 is killed at
// 5 s. Both instances answer before the kill, only s1 at the end (the killed instance's node pod
// left the Service, so its endpoint left the slice), and the service's Service is gone after
// the run. Beside the proxy, the same load goes to http://dps:8000/, the service's cluster IP:
// kube-proxy's balancing, the round-robin baseline of seeds/004, answers too.
func TestProxyDiscoversEndpointSlicesOnCluster(t *testing.T) {
	t.Parallel()
	env := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	scenario := filepath.Join(env.root, "scenarios", "kubernetes", "proxy.yaml")
	targets := "workloads.load.config.targets=[{name: dps, component: proxy, service: dps}, {name: kube-proxy, url: 'http://dps:8000/'}]"
	res, err := experiment.Execute(ctx, scenario, experiment.Options{Platform: env.prov, Binary: env.bin, Out: t.TempDir(), Logger: testLogger(),
		Sets: []string{targets}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 {
		t.Fatalf("%d of %d runs failed (%s)", res.Failed, res.Runs, res.Dir)
	}
	run := filepath.Join(res.Dir, results.RunsDir, "001")
	// Per second and per instance, the answers the load got through the proxy (the proxy names
	// the instance that answered). The load's seconds count from its own start, a little after
	// the run's.
	type counts struct{ before, after map[string]float64 }
	c := counts{before: map[string]float64{}, after: map[string]float64{}}
	var errs float64
	readCSV(t, filepath.Join(run, "workloads", "load", results.InstancesFile), []string{"t_s", "series", "instance", "ok", "errors"}, func(r results.CSVRow) {
		if r.Str("series") != "dps" {
			return // kube-proxy's answers name no instance
		}
		v, err := r.Floats("t_s", "ok", "errors")
		if err != nil {
			t.Fatal(err)
		}
		errs += v[2]
		switch inst := r.Str("instance"); {
		case v[1] == 0:
			// no answers (the "(none)" row counts requests that got no instance's answer)
		case v[0] < 4:
			c.before[inst] += v[1]
		case v[0] >= 7:
			c.after[inst] += v[1]
		}
	})
	t.Logf("answers per instance before the kill %v, from 7 s %v; errors %v", c.before, c.after, errs)
	if len(c.before) != 2 {
		t.Errorf("instances answering before the kill: %v, want s1's and s2's node pods (worker1, worker2)", c.before)
	}
	if len(c.after) != 1 || c.after["worker1"] == 0 {
		t.Errorf("instances answering from 7 s: %v, want only s1's (s2 killed at 5 s)", c.after)
	}
	var stats results.Stats
	if err := results.ReadJSON(filepath.Join(run, "workloads", "load", results.StatsFile), &stats); err != nil {
		t.Fatal(err)
	}
	kp := stats.Series["kube-proxy"]
	t.Logf("through kube-proxy (the service's cluster IP): %d sent, %d ok, %d errors", kp.Sent, kp.OK, kp.Errors)
	if kp.Sent == 0 || kp.OK < kp.Sent*8/10 {
		t.Errorf("through kube-proxy: %d of %d answered, want most (the service's cluster IP balances over its instances)", kp.OK, kp.Sent)
	}
	svc, err := env.prov.connect()
	if err != nil {
		t.Fatal(err)
	}
	sel := runSelector(t, run)
	sel.LabelSelector += "," + LabelRole + "=" + RoleService
	if l, err := svc.cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, sel); err != nil || len(l.Items) != 0 {
		t.Errorf("declared services' Services after the run: %v %v", l, err)
	}
}
