package bridge_test

import (
	"testing"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestMain fails the package when a closed bridge leaves its goroutines or its Kafka client's
// behind.
func TestMain(m *testing.M) {
	code := m.Run()
	kafka.Stop()
	testenv.ExitUnlessLeaked(code, "stream/bridge.", "franz-go/pkg/kgo.")
}

// kafka is the broker the tests that produce share (a JVM start took a minute in make test's
// parallel pass), with every topic they use.
var kafka = baselinetest.SharedKafka{Topics: []baselines.KafkaTopic{
	{Name: "auth", Partitions: 1, Replication: 1}, // TestTokenRequired
	{Name: "in", Partitions: 3, Replication: 1},   // TestProduce
}}
