package baselinetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
)

// SharedKafka is one Kafka broker that a package's tests share, started by the first test that
// asks for it with every topic in Topics, stopped by Stop (from TestMain, after the tests). A
// broker's JVM start took a minute in make test's parallel pass: a package whose tests each
// started one paid that per test. Its tests use topics and consumer groups of their own, do
// not run in parallel while they use it, and leave it running (a test that crashes it restarts
// it: Server.Crash).
type SharedKafka struct {
	Topics []baselines.KafkaTopic

	once    sync.Once
	srv     *baselines.Server
	dir     string
	missing error // Java or Kafka is not installed
	err     error
}

// Broker is the shared broker, started on first use; topics are the caller's, each of which
// must be in Topics (the broker creates them when it starts). A missing Kafka or Java skips the
// test, or fails it under CONTINUUM_REQUIRE_ROOT=1.
func (s *SharedKafka) Broker(t testing.TB, topics ...baselines.KafkaTopic) *baselines.Server {
	t.Helper()
	for _, want := range topics {
		if !slices.Contains(s.Topics, want) {
			t.Fatalf("topic %+v: add it to the shared broker's Topics, which it creates when it starts", want)
		}
	}
	s.once.Do(func() {
		if _, s.missing = baselines.JavaBinary(""); s.missing != nil {
			return
		}
		if _, s.missing = baselines.KafkaHome(""); s.missing != nil {
			return
		}
		if s.dir, s.err = os.MkdirTemp("", "shared-kafka-"); s.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.srv, s.err = baselines.StartKafka(ctx, baselines.KafkaConfig{Config: baselines.Config{Dir: s.dir}, Topics: s.Topics,
			JavaOptions: KafkaJavaOptions()})
		if s.err != nil {
			s.err = fmt.Errorf("shared kafka broker: %w", s.err)
		}
	})
	need(t, s.missing)
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.srv
}

// Stop stops the broker, if one started, and removes its data.
func (s *SharedKafka) Stop() {
	if s.srv != nil {
		_ = s.srv.Stop()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
