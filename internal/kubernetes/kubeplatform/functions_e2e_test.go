package kubeplatform

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestGatewayScalesPodsOnCluster runs `continuum faas gateway` in a node pod of a run on the
// shared one-node cluster, its --platform the run's endpoint (what a scenario's faas-gateway
// gets), its function scaled to zero when idle. The gateway starts its instances as pods
// through the API server with the node pod's ServiceAccount (PodClient): the first request
// starts one (a cold start), it answers, it is deleted once the function has been idle (scale to
// zero), and the next request starts another (scale from zero). The handler's path is the
// runner's clone's, rewritten to the python image's (imagePaths).
func TestGatewayScalesPodsOnCluster(t *testing.T) {
	t.Parallel()
	env := sharedCluster(t)
	prov := env.prov
	prov.Image = testPythonImage
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const run = "gateway-e2e"
	p, err := prov.Up(ctx, platform.Config{Name: run, Dir: dir, Binary: env.bin, Logger: testLogger(),
		Topology: &platform.Topology{Nodes: []platform.Node{{Name: "edge", CPUs: 1, Memory: 512 << 20}}}})
	if err != nil {
		t.Fatal(err)
	}
	pf := p.(*Platform)
	downed := false
	defer func() {
		if !downed {
			_ = pf.Down()
		}
	}()
	out := filepath.Join(dir, "gw")
	args := []string{env.bin, "faas", "gateway", "--listen", ":8080", "--platform", prov.Endpoint(run), "--node", "edge", "--name", "gw",
		"--function", "name=hello,handler=" + filepath.Join(env.root, "python", "functions", "hello") + ",min=0,idle_timeout=3s",
		"--instance-cpus", "0.5", "--basic-auth=false", "--data-dir", out, "--out", out, "--log-dir", filepath.Join(dir, "instances")}
	gw, err := pf.Start(ctx, platform.InstanceSpec{Name: "gw", Node: "edge", Args: args, Dir: out, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	hc := nodeHTTP(pf, "edge", "127.0.0.1:8080", time.Minute)
	waitHTTPOK(t, hc, time.Minute, "http://edge:8080/healthz")
	instancePods := func() []corev1.Pod {
		l, err := pf.c.cs.CoreV1().Pods(pf.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleInstance})
		if err != nil {
			t.Fatal(err)
		}
		var live []corev1.Pod
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		return live
	}
	if n := len(instancePods()); n != 0 {
		t.Fatalf("%d instance pods before the first request, want none (min 0)", n)
	}
	call := func(what string) {
		t.Helper()
		start := time.Now()
		defer func() { t.Logf("%s: answered in %v", what, time.Since(start).Round(time.Millisecond)) }()
		resp, err := hc.Post("http://edge:8080/function/hello", "text/plain", strings.NewReader("cluster"))
		if err != nil {
			t.Fatalf("POST /function/hello: %v\n%s", err, logsOf(dir))
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != "Hello, cluster!" {
			t.Fatalf("POST /function/hello: %d %q\n%s", resp.StatusCode, b, logsOf(dir))
		}
	}

	call("the first request (from zero: the gateway starts an instance pod and waits for it)")
	pods := instancePods()
	if len(pods) != 1 {
		t.Fatalf("%d instance pods after the first request, want 1", len(pods))
	}
	first := pods[0]
	c := first.Spec.Containers[0]
	if first.Labels[LabelNode] != "edge" || c.Image != testPythonImage || c.Resources.Limits.Cpu().MilliValue() != 500 {
		t.Errorf("instance pod %s: node %s, image %s, cpu limit %dm; want edge's, the node pod's image, 500m",
			first.Name, first.Labels[LabelNode], c.Image, c.Resources.Limits.Cpu().MilliValue())
	}
	if !strings.Contains(strings.Join(c.Command, " "), "faas watchdog") {
		t.Errorf("instance pod command %q, want the watchdog", c.Command)
	}
	testenv.Eventually(t, time.Minute, "the idle function scaled to zero (its pod deleted)", func() bool { return len(instancePods()) == 0 })

	call("the request after scaling to zero (from zero again)")
	call("a request to the running instance")
	pods = instancePods()
	if len(pods) != 1 || pods[0].UID == first.UID {
		t.Fatalf("instance pods after a request to the function at zero: %d (want a new one)", len(pods))
	}
	if _, err := os.Stat(gwLog(dir)); err != nil {
		t.Errorf("the gateway's log: %v", err)
	}

	if err := gw.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping the gateway: %v", err)
	}
	downed = true
	if err := pf.Down(); err != nil {
		t.Fatal(err)
	}
	// The gateway's own account of it, pulled back with the run's directory.
	var report map[string]struct {
		ColdStarts int `json:"cold_starts"`
	}
	b, err := os.ReadFile(filepath.Join(out, "gateway.json"))
	if err == nil {
		err = json.Unmarshal(b, &report)
	}
	t.Logf("gateway.json: %s", b)
	if err != nil || report["hello"].ColdStarts != 2 {
		t.Errorf("gateway.json: %v, want hello's 2 cold starts (from zero twice)\n%s", err, b)
	}
	if _, err := pf.c.cs.RbacV1().ClusterRoles().Get(context.Background(), nodesReader(pf.ns, pf.run), metav1.GetOptions{}); err == nil {
		t.Errorf("the run's ClusterRole is left after Down")
	}
}

// nodeHTTP is an HTTP client whose every connection goes to addr inside node's pod (through the
// platform's Dial, as the runner reaches a node), whatever the URL's host.
func nodeHTTP(pf *Platform, node, addr string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return pf.Dial(ctx, node, network, addr)
	}}}
}

// waitHTTPOK waits until a GET of url through hc answers 200.
func waitHTTPOK(t *testing.T, hc *http.Client, limit time.Duration, url string) {
	t.Helper()
	testenv.EventuallyNoError(t, limit, url+" answers 200", func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

func gwLog(dir string) string { return platform.LogPath(dir, "edge", "gw", "stdout") }

// logsOf is the gateway's and its instances' logs, for a failure's message.
func logsOf(dir string) string {
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".log") {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "--- %s\n%s\n", p, data)
		}
		return nil
	})
	return b.String()
}
