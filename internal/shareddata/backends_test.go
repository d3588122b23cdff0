package shareddata

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/testenv"
)

// The continuum binary for the kv backend, built once (or $CONTINUUM_BIN).
var continuum struct {
	once    sync.Once
	path    string
	cleanup func()
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if continuum.cleanup != nil {
		continuum.cleanup()
	}
	os.Exit(code)
}

// need skips the test when a server binary is missing, or fails it under
// CONTINUUM_REQUIRE_ROOT=1 (`make test`, where `make setup` has installed them).
func need(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// startBackend starts a real server (or cluster) for backend and returns the config that
// reaches it; the server stops at cleanup.
func startBackend(t *testing.T, backend string) Config {
	t.Helper()
	cfg, _ := startServer(t, backend)
	return cfg
}

// startServer is startBackend that also returns the single server (nil for a cluster).
func startServer(t *testing.T, backend string) (Config, *baselines.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch backend {
	case BackendKV:
		continuum.once.Do(func() { continuum.path, continuum.cleanup, continuum.err = testenv.Binary() })
		need(t, continuum.err)
		s, err := baselines.StartKV(ctx, baselines.Config{Dir: t.TempDir(), Bin: continuum.path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		return Config{Backend: backend, Endpoints: s.Target.Endpoints}, s
	case BackendEtcd:
		_, err := baselines.EtcdBinary("")
		need(t, err)
		s, err := baselines.StartEtcd(ctx, baselines.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		return Config{Backend: backend, Endpoints: s.Target.Endpoints}, s
	case BackendRedis:
		_, err := baselines.RedisBinary("")
		need(t, err)
		s, err := baselines.StartRedis(ctx, baselines.Config{Dir: t.TempDir()}, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		return Config{Backend: backend, Endpoints: s.Target.Endpoints}, s
	case BackendRedisCluster:
		_, err := baselines.RedisBinary("")
		need(t, err)
		c, err := baselines.StartRedisCluster(ctx, baselines.RedisClusterConfig{Dir: t.TempDir(), NodeTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		return Config{Backend: backend, Endpoints: c.Addrs, ReadReplicas: true}, nil
	}
	t.Fatalf("no such backend %q", backend)
	return Config{}, nil
}

// openT opens a client on cfg, closed at cleanup.
func openT(t *testing.T, cfg Config) Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ctxT is a context that ends with the test or after a minute.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for the next message of sub, failing the test after a deadline.
func recv(t *testing.T, sub *Subscription) Message {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		if !ok {
			t.Fatalf("subscription ended: %v", sub.Err())
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no message within 20s")
	}
	return Message{}
}

// nextIs receives the next message of sub and checks it is name's value.
func nextIs(t *testing.T, sub *Subscription, name, value string) Message {
	t.Helper()
	m := recv(t, sub)
	if m.Gap || m.Name != name || string(m.Value) != value {
		t.Fatalf("got %+v (value %q), want %s=%q", m, m.Value, name, value)
	}
	return m
}
