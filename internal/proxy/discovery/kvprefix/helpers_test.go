package kvprefix

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/discovery/discoverytest"
	"github.com/continuum-project/continuum/internal/testenv"
	"github.com/continuum-project/continuum/internal/testenv/etcdtest"
)

// TestMain fails the package when a test leaves a watch, a keep-alive loop or a server
// behind: Run and Registration must stop everything they started.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.ExitUnlessLeaked(code, "discovery/kvprefix.", "etcd/client/v3.", "internal/kv/")
}

const waitTimeout = 15 * time.Second

// backend is a server speaking the etcd v3 API: real etcd, or Continuum's kv.
type backend struct {
	name  string
	start func(t *testing.T) string // returns the client endpoint
}

var backends = []backend{{"etcd", func(t *testing.T) string { return etcdtest.Start(t) }}, {"kv", startKV}}

// startKV starts Continuum's kv in this process.
func startKV(t *testing.T) string {
	t.Helper()
	return strings.TrimPrefix(kvtest.URL(t), "http://")
}

func newClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitLog waits until the logs contain want.
func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	discoverytest.WaitLog(t, logs, want, waitTimeout)
}

// newSource makes a source for endpoint with test logging; tweak adjusts it before Run.
func newSource(t *testing.T, endpoint, prefix string) (*Source, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := DefaultConfig()
	cfg.Endpoints = []string{endpoint}
	cfg.Prefix = prefix
	cfg.Logger = newLogger(logs)
	src, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return src, logs
}

// The shared harness (package discoverytest), under the names these tests use.
type (
	running    = discoverytest.Running
	syncBuffer = discoverytest.SyncBuffer
)

var (
	newLogger = discoverytest.Logger
	dump      = discoverytest.Dump
	find      = discoverytest.Find
)

// runSource runs src until the test ends, then checks that Run returned nil promptly.
func runSource(t *testing.T, src discovery.Source, logs *syncBuffer) *running {
	t.Helper()
	return discoverytest.Run(t, src, logs, waitTimeout)
}
