package kubeplatform

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/kubernetes/cluster"
	"github.com/continuum-project/continuum/internal/results"
)

// appScenario puts a user's process (the project's echo server, a program of the node pods'
// image, found in its PATH) on the edge and a user's container image (the project's image from
// an OCI tarball of this host, imported into the cluster) on the cloud; a workload drives both
// through their declared endpoints; the container is restarted at 3 s.
const appScenario = `version: 1
name: app-kinds-kubernetes
seed: 1
duration: 10s
topology:
  nodes: [{name: device}, {name: edge, cpus: 1, memory: 512Mi}, {name: cloud}]
  links: [{between: [device, edge]}, {between: [edge, cloud]}] # the cluster's network as it is
components:
  - name: web
    kind: app-process
    node: edge
    config:
      command: [continuum, echo, --listen, ":8081"]
      env: {GOMAXPROCS: "1"}
      endpoints: [{name: http, protocol: http, port: 8081}]
      ready: {log: 'echo server listening'}
      stop_signal: SIGINT
      stop_grace: 5s
  - name: app
    kind: app-container
    node: cloud
    config:
      image: IMAGES/continuum.tar
      image_name: continuum
      command: [echo, --listen, ":9090"]
      env: {APP_MODE: cloud}
      cpus: 0.5
      memory: 256MiB
      endpoints: [{name: http, protocol: http, port: 9090}]
      healthcheck: {test: [CMD, continuum, version], interval: 1s, retries: 30}
      stop_grace: 5s
workloads:
  - name: load
    kind: http-load
    node: device
    config:
      rate: 20
      timeout: 2s
      targets:
        - {name: web, component: web}
        - {name: app, component: app}
events:
  - {at: 3s, action: restart, component: app}
`

// TestAppKindsOnCluster runs the app system's two kinds on the Kubernetes platform: a process
// in its node pod, a container image as a pod of its own (limits, env, command, readiness by a
// healthcheck run inside it, ports reached at its node's address, a restart as a new pod, its
// output in the run's logs), and checks what run --check refuses there.
func TestAppKindsOnCluster(t *testing.T) {
	t.Parallel()
	env := sharedCluster(t)
	start := time.Now()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "IMAGES", env.images)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	scenario := write("app.yaml", appScenario)
	opts := experiment.Options{Platform: env.prov, Binary: env.bin}
	if _, err := experiment.Check(scenario, opts); err != nil {
		t.Fatalf("run --check: %v", err)
	}
	// What a node pod cannot do is refused before anything starts, naming the key.
	limited := write("limited.yaml", strings.Replace(appScenario, `env: {GOMAXPROCS: "1"}`, `memory: 64MiB`, 1))
	if _, err := experiment.Check(limited, opts); err == nil || !strings.Contains(err.Error(), "platform kubernetes cannot give instance web its own memory") {
		t.Errorf("run --check of a process with a memory limit: %v", err)
	}
	// `run --platform kubernetes` finds the containerd of a cluster of this host by its kubeconfig.
	if got := cluster.ContainerdFor(env.cl.Kubeconfig()); got != env.cl.ContainerdSocket() {
		t.Errorf("ContainerdFor(the cluster's kubeconfig) = %q, want %q", got, env.cl.ContainerdSocket())
	}
	if got := cluster.ContainerdFor(filepath.Join(dir, "kubeconfig")); got != "" {
		t.Errorf("ContainerdFor(another kubeconfig) = %q, want none", got)
	}
	noImport := env.prov
	noImport.Containerd = ""
	if _, err := experiment.Check(scenario, experiment.Options{Platform: noImport, Binary: env.bin}); err == nil || !strings.Contains(err.Error(), "--containerd") {
		t.Errorf("run --check of a local image without the cluster's containerd: %v", err)
	}

	// The container pods as the cluster has them, seen while the run runs.
	c, err := env.prov.connect()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	pods := map[string]corev1.Pod{}
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for wctx.Err() == nil {
			list, err := c.cs.CoreV1().Pods("").List(wctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleContainer})
			if err == nil {
				mu.Lock()
				for _, p := range list.Items {
					pods[p.Name] = p
				}
				mu.Unlock()
			}
			select {
			case <-wctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res, err := experiment.Execute(ctx, scenario, experiment.Options{Platform: env.prov, Binary: env.bin, Out: t.TempDir(), Logger: testLogger()})
	stopWatch()
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(res.Dir, results.RunsDir, "001")
	if res.Failed != 0 {
		b, _ := os.ReadFile(filepath.Join(run, results.RunFile))
		t.Fatalf("%d of %d runs failed: %s", res.Failed, res.Runs, b)
	}

	// Two pods (the restart made the second), each with the instance's limits, env and command,
	// where the node pod of cloud runs, and the image imported under the platform's own name.
	mu.Lock()
	defer mu.Unlock()
	if len(pods) != 2 {
		t.Errorf("container pods seen: %d, want 2 (a restart is a new pod)", len(pods))
	}
	for name, p := range pods {
		ct := p.Spec.Containers[0]
		if p.Labels[LabelNode] != "cloud" || p.Spec.Hostname != "cloud" || !strings.HasPrefix(ct.Image, "continuum.local/image:") {
			t.Errorf("pod %s: labels %v, hostname %q, image %s", name, p.Labels, p.Spec.Hostname, ct.Image)
		}
		if ct.Resources.Limits.Cpu().MilliValue() != 500 || ct.Resources.Limits.Memory().Value() != 256<<20 {
			t.Errorf("pod %s: limits %v", name, ct.Resources.Limits)
		}
		if strings.Join(ct.Args, " ") != "echo --listen :9090" || len(ct.Env) != 1 || ct.Env[0].Value != "cloud" {
			t.Errorf("pod %s: args %q env %v", name, ct.Args, ct.Env)
		}
	}

	// The load reached both through their declared endpoints: the process all along, the
	// container before its restart and after it.
	type second struct{ ok, errors float64 }
	series := map[string][]second{}
	readCSV(t, filepath.Join(run, "workloads", "load", "timeseries.csv"), []string{"series", "ok", "errors"}, func(r results.CSVRow) {
		v, err := r.Floats("ok", "errors")
		if err != nil {
			t.Fatal(err)
		}
		series[r.Str("series")] = append(series[r.Str("series")], second{v[0], v[1]})
	})
	web, app := series["web"], series["app"]
	if len(web) < 10 || len(app) < 10 {
		t.Fatalf("timeseries: %d and %d seconds, want 10", len(web), len(app))
	}
	for s, row := range web[:10] {
		if row.ok == 0 || row.errors != 0 {
			t.Errorf("web second %d: %+v, want successes only", s, row)
		}
	}
	if app[0].ok+app[1].ok == 0 {
		t.Errorf("app seconds 0-1 (before its restart): %+v %+v, want successes", app[0], app[1])
	}
	if app[8].ok+app[9].ok == 0 {
		errs, _ := os.ReadFile(filepath.Join(run, "workloads", "load", results.ErrorsFile))
		t.Errorf("app seconds 8-9 (after its restart at 3 s): %+v %+v, want successes; seconds %+v; errors:\n%s", app[8], app[9], app, errs)
	}

	// The container's output, streamed from its pods: started twice. Its healthcheck ran inside
	// it (the image's continuum printed its version) before the workload started.
	b, err := os.ReadFile(filepath.Join(run, results.LogsDir, "cloud.app.stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "echo server listening"); n != 2 {
		t.Errorf("app started %d times, want 2 (the restart):\n%s", n, b)
	}
	probes, _ := filepath.Glob(filepath.Join(run, results.LogsDir, "probes", "cloud.app.ready-*.stdout.log"))
	var probed bool
	for _, p := range probes {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "continuum") {
			probed = true
		}
	}
	if !probed {
		t.Errorf("no healthcheck output from inside the container in %v", probes)
	}
	// The process's log came from its node pod; it stopped on SIGINT at the end.
	if b, err := os.ReadFile(filepath.Join(run, results.LogsDir, "edge.web.stderr.log")); err != nil || !strings.Contains(string(b), "echo server listening") {
		t.Errorf("web's log: %v\n%s", err, b)
	}

	// Samples: the node pods, the process, the container pod, not the platform's own forward.
	seen := map[string]bool{}
	readCSV(t, filepath.Join(run, "samples.csv"), []string{"node", "component"}, func(r results.CSVRow) {
		seen[r.Str("node")+"/"+r.Str("component")] = true
	})
	if !seen["edge/web"] || !seen["cloud/app"] || seen["cloud/app.ports"] {
		t.Errorf("samples.csv rows %v: want edge/web and cloud/app (from its kubelet), and no cloud/app.ports", seen)
	}

	// Nothing of the run is left.
	left, err := c.cs.CoreV1().Pods("").List(context.Background(), runSelector(t, run))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left.Items {
		t.Errorf("pod %s/%s left after the run", p.Namespace, p.Name)
	}
	t.Logf("the test took %v past the shared cluster", time.Since(start).Round(time.Second))
}
