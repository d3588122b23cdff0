package kvtest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestStartRestartAt: a started member answers; closed and started again At the same data and
// address, it still holds what was written.
func TestStartRestartAt(t *testing.T) {
	dir := t.TempDir()
	s := Start(t, At(dir, "127.0.0.1:0"))
	url := s.ClientURLs()[0]
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	addr := strings.TrimPrefix(url, "http://")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("client URL %q: %v", url, err)
	}
	Start(t, At(dir, addr))
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after the restart: %v %v, want k=v", resp, err)
	}
	if u := URL(t); !strings.HasPrefix(u, "http://127.0.0.1:") || u == url {
		t.Errorf("URL: %q, want another loopback member", u)
	}
}
