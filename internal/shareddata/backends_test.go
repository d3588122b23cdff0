package shareddata

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
)

func TestMain(m *testing.M) { baselinetest.Main(m, stopSharedCluster) }

// startBackend starts a real server for backend and returns the config that reaches it; the
// server stops at cleanup. For a Redis Cluster it returns the package's shared one (starting
// six nodes takes seconds): the tests that call startBackend only read and write namespaces of
// their own and never stop a node; those that do use startServer, which starts their own.
func startBackend(t *testing.T, backend string) Config {
	t.Helper()
	if backend == BackendRedisCluster {
		return sharedRedisCluster(t)
	}
	cfg, _ := startServer(t, backend)
	return cfg
}

var shared struct {
	once    sync.Once
	cluster *baselines.RedisCluster
	dir     string
	err     error
}

func sharedRedisCluster(t *testing.T) Config {
	t.Helper()
	shared.once.Do(func() {
		if _, shared.err = baselines.RedisBinary(""); shared.err != nil {
			return
		}
		if shared.dir, shared.err = os.MkdirTemp("", "shareddata-cluster-"); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cluster, shared.err = baselines.StartRedisCluster(ctx, baselines.RedisClusterConfig{Dir: shared.dir, NodeTimeout: time.Second})
	})
	if shared.err != nil {
		if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
			t.Fatal(shared.err)
		}
		t.Skip(shared.err)
	}
	// Every test starts from an empty cluster, as from a new one (also under -count=N).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: shared.cluster.Addrs})
	defer c.Close()
	if err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() }); err != nil {
		t.Fatalf("empty the shared Redis Cluster: %v", err)
	}
	return Config{Backend: BackendRedisCluster, Endpoints: shared.cluster.Addrs, ReadReplicas: true}
}

func stopSharedCluster() {
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
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
