package shareddata

import (
	"context"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
)

func TestMain(m *testing.M) { baselinetest.Main(m) }

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
	if backend == BackendRedisCluster {
		c := baselinetest.StartRedisCluster(t)
		return Config{Backend: backend, Endpoints: c.Addrs, ReadReplicas: true}, nil
	}
	s := baselinetest.Start(t, backend)
	return Config{Backend: backend, Endpoints: s.Target.Endpoints}, s
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
