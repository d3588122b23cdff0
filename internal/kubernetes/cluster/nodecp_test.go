package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/kubernetes/image"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testenv"
)

// kubeBinDir is the Kubernetes binaries' directory; without them the test is skipped, or fails
// under make test (CONTINUUM_REQUIRE_ROOT=1), whose setup installs them.
func kubeBinDir(t *testing.T) string {
	t.Helper()
	d, err := controlplane.FindBinDir()
	if err != nil {
		if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return d
}

// continuumBin is $CONTINUUM_BIN (make test's) or a continuum built for the test.
func continuumBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("CONTINUUM_BIN"); b != "" {
		return b
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "continuum")
	if err := image.GoBuild(context.Background(), root, "./cmd/continuum", b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestControlPlaneInANode: the control plane runs in a testbed node (issue 44's cloud node):
// the store and the components in its network namespace and cgroup, the apiserver listening on
// the node's address with a certificate valid for it. The host's clients reach it through
// Config.Dial; another node reaches it across the emulated link; the host's own namespace does
// not see it.
func TestControlPlaneInANode(t *testing.T) {
	requireRoot(t)
	binDir := kubeBinDir(t)
	bin := continuumBin(t)
	topo, err := testbed.ParseTopology("test.yaml", []byte("nodes: [{name: cloud}, {name: edge}]\nlinks: [{between: [cloud, edge], delay: 5ms}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := testbed.Up(topo, testbed.Options{Name: fmt.Sprintf("cp%d", os.Getpid()%100000), StateDir: t.TempDir(), Launcher: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Down(); err != nil {
			t.Errorf("testbed down: %v", err)
		}
	})
	if _, err := tb.Start(testbed.ProcSpec{Name: "store", Node: "cloud", Args: []string{bin, "kv", "--name", "store",
		"--data-dir", filepath.Join(t.TempDir(), "store"), "--listen-client-urls", "http://127.0.0.1:2379"}}); err != nil {
		t.Fatal(err)
	}
	addr, _ := tb.NodeAddr("cloud")
	cfg := controlplane.DefaultConfig()
	cfg.Dir, cfg.BinDir, cfg.EtcdServers, cfg.Address = t.TempDir(), binDir, []string{"http://127.0.0.1:2379"}, addr.String()
	cfg.Wrap = func(argv []string) ([]string, error) {
		return tb.WrapArgv("cloud", filepath.Base(argv[0]), false, argv)
	}
	cfg.Dial = func(ctx context.Context, network, a string) (net.Conn, error) {
		return tb.Dial(ctx, "cloud", network, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if want := "https://" + net.JoinHostPort(addr.String(), strconv.Itoa(cfg.APIServerPort)); cfg.APIServerPort != 0 && cp.Server() != want {
		t.Errorf("server %s, want %s", cp.Server(), want)
	}
	// The admin client verifies the serving certificate against the node's address.
	if _, err := cp.Client().CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the admin client, through Dial: %v", err)
	}
	_, port, _ := net.SplitHostPort(cp.Server()[len("https://"):])
	// From edge, across the 5 ms link: a TCP handshake takes at least its round trip.
	testenv.Eventually(t, 30*time.Second, "edge connects to the apiserver", func() bool {
		start := time.Now()
		c, err := tb.Dial(ctx, "edge", "tcp", net.JoinHostPort(addr.String(), port))
		if err != nil {
			return false
		}
		c.Close()
		if rtt := time.Since(start); rtt < 10*time.Millisecond {
			t.Errorf("a handshake from edge took %v, less than the link's 10 ms round trip", rtt)
		}
		return true
	})
	// The host's namespace has no route to the node's address and no apiserver of its own.
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	if c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
		c.Close()
		t.Errorf("the apiserver's port answers in the host's namespace too")
	}
	if ok, why := cp.Readyz(ctx); !ok {
		t.Errorf("readyz: %s", why)
	}
}
