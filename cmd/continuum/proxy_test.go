package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestProxyCommand runs `continuum proxy` as a user would: a configuration with a file
// source, one request routed by header, /debug/pools, and a clean exit on SIGTERM.
func TestProxyCommand(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "from upstream") }))
	defer up.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "instances.yaml"),
		[]byte(fmt.Sprintf("instances:\n  - {id: u1, service: dps, url: %q, node: here}\n", up.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(conf, []byte("discovery:\n  - file: instances.yaml\nservices:\n  dps: {qos: {latency: 80ms}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	listen, admin := freeLoopback(t), freeLoopback(t)
	cmd := exec.Command(bin, "proxy", "--config", conf, "--listen", listen, "--admin-listen", admin, "--node", "n1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("no exit within 15 s of SIGTERM")
		}
	}()
	testenv.Eventually(t, 15*time.Second, "proxy ready", func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	req, _ := http.NewRequest(http.MethodGet, "http://"+listen+"/x", nil)
	req.Header.Set("X-Continuum-Service", "dps")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "from upstream" || resp.Header.Get("X-Continuum-Instance") != "u1" {
		t.Fatalf("got %d %q instance %q", resp.StatusCode, body, resp.Header.Get("X-Continuum-Instance"))
	}
	resp, err = http.Get("http://" + admin + "/debug/pools")
	if err != nil {
		t.Fatal(err)
	}
	pools, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var view struct {
		Node     string `json:"node"`
		Services []struct {
			Instances []struct {
				ID     string `json:"id"`
				InPool bool   `json:"in_pool"`
			} `json:"instances"`
		} `json:"services"`
	}
	if err := json.Unmarshal(pools, &view); err != nil || view.Node != "n1" || len(view.Services) != 1 ||
		len(view.Services[0].Instances) != 1 || !view.Services[0].Instances[0].InPool {
		t.Errorf("/debug/pools (%v): want node n1 with its one instance in the pool:\n%s", err, pools)
	}
}

func TestProxyCommandRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(conf, []byte("discovery:\n  - file: nope.yaml\nservices:\n  dps: {strategy: fastest}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "proxy", "--config", conf).CombinedOutput()
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, want := range []string{"proxy.yaml:2:", "nope.yaml", "proxy.yaml:4:", `"fastest"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
