// Package baselinetest starts the real servers of package baselines for tests of the systems
// built on them (shareddata, pace, iot; Kafka for what is compared with it): one call per
// server or cluster, stopped at the test's cleanup, skipped when a binary is missing unless
// CONTINUUM_REQUIRE_ROOT=1 (`make test`, where `make setup` installed them) makes that a
// failure.
package baselinetest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/testenv"
)

// The continuum binary for kv servers: $CONTINUUM_BIN, or built once per test process.
var continuum struct {
	once    sync.Once
	path    string
	cleanup func()
	err     error
}

// Main runs the tests and removes what the package built for them; call it from TestMain.
// after run once the tests have run (servers a package's tests share).
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	if continuum.cleanup != nil {
		continuum.cleanup()
	}
	os.Exit(code)
}

// need skips or fails the test when err (a missing binary) is set.
func need(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// Start starts one server of kind kv, etcd or redis in a temporary directory. kv needs Main
// in the package's TestMain (it may build the continuum binary).
func Start(t testing.TB, kind string) *baselines.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := baselines.Config{Dir: t.TempDir()}
	switch kind {
	case "kv":
		continuum.once.Do(func() { continuum.path, continuum.cleanup, continuum.err = testenv.Binary() })
		need(t, continuum.err)
		cfg.Bin = continuum.path
	case "etcd":
		_, err := baselines.EtcdBinary("")
		need(t, err)
	case "redis":
		_, err := baselines.RedisBinary("")
		need(t, err)
	}
	s, err := baselines.Start(ctx, kind, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// StartMosquitto starts the MQTT broker; its address (host:port) is Target.Endpoints[0].
func StartMosquitto(t testing.TB) *baselines.Server {
	t.Helper()
	_, err := baselines.MosquittoBinary("")
	need(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := baselines.StartMosquitto(ctx, baselines.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// StartRedisCluster starts a Redis Cluster of 3 masters with a replica each, whose replicas
// take over after a 1 s node timeout.
func StartRedisCluster(t testing.TB) *baselines.RedisCluster {
	t.Helper()
	return StartRedisClusterWith(t, time.Second)
}

// StartRedisClusterWith is StartRedisCluster with another node timeout (0: Redis's 15 s,
// which a test wants when a short stall must not count as a failure).
func StartRedisClusterWith(t testing.TB, nodeTimeout time.Duration) *baselines.RedisCluster {
	t.Helper()
	_, err := baselines.RedisBinary("")
	need(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := baselines.StartRedisCluster(ctx, baselines.RedisClusterConfig{Dir: t.TempDir(), NodeTimeout: nodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// StartKafka starts one Kafka broker (KRaft, a standalone quorum) with topics; its bootstrap
// address is Target.Endpoints[0]. A broker costs seconds and ~340 MiB: share one across a
// package's tests where they allow it.
func StartKafka(t testing.TB, topics ...baselines.KafkaTopic) *baselines.Server {
	t.Helper()
	_, err := baselines.JavaBinary("")
	need(t, err)
	_, err = baselines.KafkaHome("")
	need(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := baselines.StartKafka(ctx, baselines.KafkaConfig{Config: baselines.Config{Dir: t.TempDir()}, Topics: topics,
		JavaOptions: KafkaJavaOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// KafkaJavaOptions are the java options of the brokers tests start: the client compiler (C1)
// only. A test's broker lives seconds to a minute, in which the server compiler's (C2) work
// on Kafka's hot paths was ~40% of the JVM's CPU (TestExactlyOnce's broker, its restart and
// their storage tools: 14.4 s -> 8.2 s), in make test's CPU-bound parallel pass; what the
// tests check does not depend on how the JVM compiles.
func KafkaJavaOptions() []string { return []string{"-XX:TieredStopAtLevel=1"} }
