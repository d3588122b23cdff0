package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestChartOnCluster installs deploy/helm/continuum with every component but the FL
// orchestrator (whose image carries PyTorch: 1.7 GB unpacked, built on request) on a one-node
// cluster, waits for every pod to be Ready, and talks to each component: kv through the writer
// Service and a replica, the proxy on the node's port routing to a Service it discovered, a
// function through the gateway (and its autoscaler adding instances under load), the realtime database, and a record posted to the stream bridge
// that the aggregator writes into the database through Kafka (a real broker on the node).
//
// It takes minutes (three images, Kafka, the chart's pods) and runs in `make test`'s serial
// pass: `make test` once left it out, and a chart whose proxy crash-looped on an unreadable
// Secret shipped (issue 42). `make test-kubernetes` runs it alone; -short skips it.
func TestChartOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("the chart's end-to-end run (images, Kafka, every component, ~2.5 min)")
	}
	requireRoot(t)
	binDir, err := controlplane.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("CONTINUUM_BIN")
	if bin == "" {
		t.Fatal("CONTINUUM_BIN: the static continuum binary (make build) and bin/continuum-proxy beside it")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	images := t.TempDir()
	build := exec.Command(bin, "image", "build", "--out", images, "--images", "continuum,proxy,python", "--tag", "e2e",
		"--continuum-binary", bin, "--proxy-binary", filepath.Join(filepath.Dir(bin), "continuum-proxy"), "--root", root)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}

	cfg := DefaultConfig()
	cfg.StateDir = filepath.Join(t.TempDir(), "cluster")
	cfg.BinDir, cfg.ContinuumBin = binDir, bin
	for _, n := range []string{"continuum", "proxy", "python"} {
		cfg.Images = append(cfg.Images, filepath.Join(images, n+".tar"))
	}
	if cfg.SandboxImage, err = SandboxFrom(cfg.Images); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl, err := Up(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Down(context.Background()); err != nil {
			t.Error(err)
		}
	})
	node := gateway(cfg.PodCIDR).String()

	kafka, err := baselines.StartKafka(ctx, baselines.KafkaConfig{
		Config: baselines.Config{Dir: t.TempDir()}, Host: node,
		Topics: []baselines.KafkaTopic{{Name: "events", Partitions: 1, Replication: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kafka.Stop() })

	values := fmt.Sprintf(`
images:
  continuum: {tag: e2e}
  proxy: {tag: e2e}
  python: {tag: e2e}
kv: {replicaCount: 3}
faas: {enabled: true}
stream:
  kafka: {brokers: [%q]}
  realtimeDB: {enabled: true}
  bridge: {enabled: true}
  aggregator: {enabled: true, topics: [events], path: /records}
`, kafka.Target.Endpoints[0])
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	// --wait=legacy polls until every resource is ready or the timeout passes. Helm 4.3.1's
	// default watcher once ended its wait 35 s into the 4 minutes, reporting the aggregator's
	// Deployment "InProgress" without a deadline error, while the pod was ready moments later
	// (make test on a busy machine; the watch seems to have ended early).
	helm := exec.CommandContext(ctx, filepath.Join(binDir, "helm"), "install", "c1", filepath.Join(root, "deploy", "helm", "continuum"),
		"-f", vf, "--wait=legacy", "--timeout", "4m")
	helm.Env = append(os.Environ(), "KUBECONFIG="+cl.Kubeconfig())
	if b, err := helm.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s\n%s", err, b, podSummary(ctx, cl))
	}

	svcIP := func(name string) string {
		s, err := cl.client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Spec.ClusterIP
	}
	hc := &http.Client{Timeout: 5 * time.Second}

	t.Run("kv", func(t *testing.T) {
		w, err := clientv3.New(clientv3.Config{Endpoints: []string{svcIP("c1-continuum-kv") + ":2379"}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Put(ctx, "smoke", "through the writer Service"); err != nil {
			t.Fatal(err)
		}
		pod, err := cl.client.CoreV1().Pods("default").Get(ctx, "c1-continuum-kv-2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := clientv3.New(clientv3.Config{Endpoints: []string{pod.Status.PodIP + ":2379"}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		testenv.Eventually(t, time.Minute, "member 2 holds the write made through member 0", func() bool {
			g, err := r.Get(ctx, "smoke")
			return err == nil && len(g.Kvs) == 1 && string(g.Kvs[0].Value) == "through the writer Service"
		})
	})

	rtdb := "http://" + svcIP("c1-continuum-realtime-db") + ":9000"
	t.Run("realtime-db", func(t *testing.T) {
		// helm --wait returns once the pods are Ready; kube-proxy may program the Service's
		// rules a moment later (connection refused until then).
		testenv.EventuallyNoError(t, time.Minute, "the realtime database's Service takes a write", func() error {
			_, err := doHTTP(hc, http.MethodPut, rtdb+"/smoke.json", `{"a":1}`, http.StatusOK)
			return err
		})
		if got := mustHTTP(t, hc, http.MethodGet, rtdb+"/smoke.json", "", http.StatusOK); strings.TrimSpace(got) != `{"a":1}` {
			t.Fatalf("GET /smoke.json = %s", got)
		}
	})

	t.Run("proxy", func(t *testing.T) {
		// The proxy on the node's hostPort routes by header to the instances it discovered.
		testenv.Eventually(t, time.Minute, "the proxy routes to the realtime database's pod", func() bool {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+node+":8080/smoke.json", nil)
			req.Header.Set("X-Continuum-Service", "c1-continuum-realtime-db")
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == `{"a":1}`
		})
	})

	t.Run("faas", func(t *testing.T) {
		gw := "http://" + svcIP("c1-continuum-faas-gateway") + ":8080"
		testenv.Eventually(t, time.Minute, "the gateway answers for the hello function", func() bool {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/function/hello", strings.NewReader("chart"))
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		// /system/ needs the basic auth the chart generated into its Secret.
		sec, err := cl.client.CoreV1().Secrets("default").Get(ctx, "c1-continuum-faas-gateway-basic-auth", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		user, pass := string(sec.Data["basic-auth-user"]), string(sec.Data["basic-auth-password"])
		if resp, err := hc.Get(gw + "/system/functions"); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET /system/functions without credentials: %v %v, want 401", resp, err)
		} else {
			resp.Body.Close()
		}
		// Above 5 requests/s the rps autoscaler adds instances (min 1, max 5 in the chart).
		testenv.Eventually(t, 2*time.Minute, "the gateway scales hello past one instance under load", func() bool {
			for range 20 {
				resp, err := hc.Post(gw+"/function/hello", "text/plain", strings.NewReader("load"))
				if err == nil {
					resp.Body.Close()
				}
			}
			var fns []struct {
				Name              string `json:"name"`
				AvailableReplicas int    `json:"availableReplicas"`
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw+"/system/functions", nil)
			req.SetBasicAuth(user, pass)
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			if json.NewDecoder(resp.Body).Decode(&fns) != nil {
				return false
			}
			for _, f := range fns {
				if f.Name == "hello" && f.AvailableReplicas >= 2 {
					return true
				}
			}
			return false
		})
	})

	t.Run("stream", func(t *testing.T) {
		bridge := "http://" + svcIP("c1-continuum-stream-bridge") + ":8090"
		// Posts need the token the chart generated into its Secret.
		testenv.EventuallyNoError(t, time.Minute, "the bridge's Service refuses a post without the token", func() error {
			_, err := doHTTP(hc, http.MethodPost, bridge+"/topics/events", `{"id":"m0","v":1}`, http.StatusUnauthorized)
			return err
		})
		sec, err := cl.client.CoreV1().Secrets("default").Get(ctx, "c1-continuum-stream-bridge-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, bridge+"/topics/events", strings.NewReader(`{"id":"m1","v":42}`))
		req.Header.Set("Authorization", "Bearer "+string(sec.Data["token"]))
		if resp, err := hc.Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST with the bridge's token: %v %v, want 200", resp, err)
		} else {
			resp.Body.Close()
		}
		testenv.Eventually(t, 2*time.Minute, "the aggregator writes the record into the database", func() bool {
			resp, err := hc.Get(rtdb + "/records/m1.json")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var rec map[string]any
			return json.NewDecoder(resp.Body).Decode(&rec) == nil && rec["v"] == float64(42)
		})
	})
}

func mustHTTP(t *testing.T, hc *http.Client, method, url, body string, want int) string {
	t.Helper()
	b, err := doHTTP(hc, method, url, body, want)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// doHTTP sends one request and returns the body, or an error unless the status is want.
func doHTTP(hc *http.Client, method, url, body string, want int) (string, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return string(b), fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return string(b), nil
}

// podSummary lists the pods and their states, for a failed install's message.
func podSummary(ctx context.Context, cl *Cluster) string {
	pods, err := cl.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s/%s %s", p.Namespace, p.Name, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil {
				fmt.Fprintf(&b, " %s: %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
			}
			if !c.Ready && c.State.Running != nil {
				fmt.Fprintf(&b, " %s: running, not ready", c.Name)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
