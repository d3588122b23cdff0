package kubeplatform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestFLOnCluster runs `continuum fl orchestrate` in a node pod of a run on the shared cluster,
// its --platform the run's endpoint (what a scenario's fl-orchestrator gets), on nodes whose
// scenario labels make one global aggregator and three clients. The orchestrator reads the
// labels through the platform (the scenario node's, over the cluster Node's), deploys its
// Flower services as pods beside their nodes' (PodClient) with the partition table in their
// command lines, and trains; a client's pod deleted mid-job takes its node out (a
// reconfiguration), and the job still reaches its rounds with the other two.
//
// It needs the fl image (PyTorch: about 1.7 GB to build and import), so it runs only when asked:
// CONTINUUM_FL_CLUSTER=1 (make test-kubernetes sets it).
func TestFLOnCluster(t *testing.T) {
	if os.Getenv("CONTINUUM_FL_CLUSTER") == "" {
		t.Skip("the fl image (PyTorch, about 1.7 GB) on the cluster: set CONTINUUM_FL_CLUSTER=1 (make test-kubernetes does)")
	}
	t.Parallel()
	env := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	imgDir := t.TempDir()
	start := time.Now()
	build := exec.CommandContext(ctx, env.bin, "image", "build", "--out", imgDir, "--images", "fl", "--tag", "kubeplatform-test",
		"--continuum-binary", env.bin, "--root", env.root)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}
	ref, err := importImage(ctx, env.cl.ContainerdSocket(), filepath.Join(imgDir, "fl.tar"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fl image built and imported in %v", time.Since(start).Round(time.Second))
	prov := env.prov
	prov.Image = ref

	dir := t.TempDir()
	const run = "fl-e2e"
	client := func(name string, classes ...int) platform.Node {
		l := map[string]string{"fl/type": "client", "comm/n1": "10"}
		for _, c := range classes {
			l[fmt.Sprintf("data/%d", c)] = "80"
		}
		return platform.Node{Name: name, CPUs: 0.5, Memory: 768 << 20, Labels: l}
	}
	topo := &platform.Topology{Nodes: []platform.Node{
		{Name: "n1", CPUs: 0.5, Memory: 768 << 20, Labels: map[string]string{"fl/type": "global"}},
		client("c1", 0, 1, 2, 3), client("c2", 4, 5, 6), client("c3", 7, 8, 9),
	}}
	// Undelayed links (the shared cluster has no Chaos Mesh): each client reaches n1.
	for _, c := range []string{"c1", "c2", "c3"} {
		topo.Links = append(topo.Links, platform.Link{Between: []string{"n1", c}})
	}
	p, err := prov.Up(ctx, platform.Config{Name: run, Dir: dir, Binary: env.bin, Logger: testLogger(), Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	pf := p.(*Platform)
	defer func() { _ = pf.Down() }()

	// The API token, made here: the instance's directory is pushed into its node's pod before
	// it starts, and the orchestrator takes the token it finds.
	out := filepath.Join(dir, "orch")
	tokenFile := filepath.Join(out, "secrets", "api-token")
	token, _, err := httpauth.LoadOrCreateToken(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{env.bin, "fl", "orchestrate", "--listen", "0.0.0.0:7070", "--advertise", "http://n1:7070",
		"--platform", prov.Endpoint(run), "--out", out, "--poll", "500ms", "--token-file", tokenFile}
	orch, err := pf.Start(ctx, platform.InstanceSpec{Name: "orch", Node: "n1", Args: args, Dir: out, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = orch.Stop(10 * time.Second) }()
	hc := nodeHTTP(pf, "n1", "127.0.0.1:7070", 30*time.Second)
	waitHTTPOK(t, hc, 2*time.Minute, "http://n1:7070/health")
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, "http://n1:7070"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, logsOf(dir))
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// Rounds enough to still be training when c3 goes (digits' rounds take a fraction of a second).
	const rounds = 100
	job := fmt.Sprintf(`{"strategy": "centralized", "dataset": "digits", "rounds": %d, "epochs": 2, "budget": 1000000, "seed": 1}`, rounds)
	if code, b := call("POST", "/jobs", job); code != http.StatusAccepted {
		t.Fatalf("POST /jobs: %d %s", code, b)
	}
	type status struct {
		State   string `json:"state"`
		Reason  string `json:"reason"`
		Round   int    `json:"round"`
		Configs int    `json:"configurations"`
	}
	current := func() status {
		code, b := call("GET", "/jobs/current", "")
		var st status
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
			t.Fatalf("GET /jobs/current: %d %s", code, b)
		}
		if st.State == "failed" {
			t.Fatalf("the job failed: %s\n%s", st.Reason, logsOf(dir))
		}
		return st
	}
	testenv.Eventually(t, 8*time.Minute, "the first global round", func() bool { return current().Round >= 1 })

	// The services are pods beside their nodes', from the node pods' image.
	pods, err := pf.c.cs.CoreV1().Pods(pf.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleInstance})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, p := range pods.Items {
		byName[p.Annotations[annotationInstance]] = p.Labels[LabelNode]
		if img := p.Spec.Containers[0].Image; img != ref {
			t.Errorf("service pod %s runs %s, want the node pods' image %s", p.Name, img, ref)
		}
	}
	for svc, node := range map[string]string{"fl-ga-n1": "n1", "fl-cl-c1": "c1", "fl-cl-c2": "c2", "fl-cl-c3": "c3"} {
		if byName[svc] != node {
			t.Errorf("service %s: pod on node %q, want %s (pods: %v)", svc, byName[svc], node, byName)
		}
	}

	// c3's client pod goes (as a node drained of it would): c3 leaves, the job goes on.
	if err := pf.c.cs.CoreV1().Pods(pf.ns).Delete(ctx, instancePodName(pf.run, "fl-cl-c3"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted c3's client pod at round %d", current().Round)
	testenv.Eventually(t, 3*time.Minute, "a reconfiguration without c3", func() bool {
		st := current()
		if st.State == "done" {
			_, b := call("GET", "/jobs/current", "")
			pods, _ := pf.c.cs.CoreV1().Pods(pf.ns).List(ctx, metav1.ListOptions{})
			var names []string
			for _, p := range pods.Items {
				names = append(names, fmt.Sprintf("%s(%s del=%v)", p.Name, p.Status.Phase, p.DeletionTimestamp))
			}
			t.Fatalf("the job was done at round %d without a reconfiguration for c3's pod going\n%s\npods: %v\n%s", st.Round, b, names, logsOf(dir))
		}
		return st.Configs >= 2
	})
	testenv.Eventually(t, 10*time.Minute, "the job done", func() bool { return current().State == "done" })
	final := current()
	if final.Round < rounds {
		t.Errorf("done at round %d, want %d", final.Round, rounds)
	}
	if err := orch.Stop(10 * time.Second); err != nil {
		t.Errorf("stopping the orchestrator: %v", err)
	}
	if err := pf.Down(); err != nil {
		t.Fatal(err)
	}
	// The orchestrator's records, pulled back with the run's directory.
	events, err := os.ReadFile(filepath.Join(out, "fl-events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(events, []byte(`c3 left`)) || !bytes.Contains(events, []byte(`"reconfigure"`)) {
		t.Errorf("fl-events.jsonl has no reconfiguration for c3 leaving:\n%s", events)
	}
	if b, err := os.ReadFile(filepath.Join(out, "rounds.csv")); err != nil || bytes.Count(b, []byte("\n")) < rounds+1 {
		t.Errorf("rounds.csv: %v, want a header and %d rounds:\n%s", err, rounds, b)
	}
}
