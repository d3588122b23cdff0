package kvtarget

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/server"
)

// TestLagProbeAcrossCluster: against a two-member continuum kv cluster the probe's writes become
// visible on the other member; against one member writing to itself, at once.
func TestLagProbeAcrossCluster(t *testing.T) {
	a, b := startPair(t)
	p, err := NewLagProbe(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.Do(ctx)
		cancel()
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	// A reader outside the cluster never sees the writes: not_visible at the deadline.
	cfg := server.DefaultConfig()
	cfg.DataDir, cfg.ListenClientURLs = t.TempDir(), []string{"http://127.0.0.1:0"}
	lone, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	q, err := NewLagProbe(a, lone.ClientURLs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = q.Do(ctx)
	var e *Error
	if !errors.As(err, &e) || e.ErrorType() != "not_visible" {
		t.Fatalf("probe to a reader outside the cluster: %v, want not_visible", err)
	}
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func startPair(t *testing.T) (string, string) {
	t.Helper()
	var urls [2]string
	peers := [2]string{"http://127.0.0.1:" + freeTCPPort(t), "http://127.0.0.1:" + freeTCPPort(t)}
	ic := map[string][]string{"a": {peers[0]}, "b": {peers[1]}}
	for i, name := range []string{"a", "b"} {
		cfg := server.DefaultConfig()
		cfg.Name, cfg.DataDir = name, t.TempDir()
		cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
		cfg.InitialCluster, cfg.ListenPeerURLs, cfg.InitialClusterToken = ic, []string{peers[i]}, "lag"
		s, err := server.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		urls[i] = s.ClientURLs()[0]
	}
	return urls[0], urls[1]
}
