package bridge_test

import (
	"testing"

	"github.com/continuum-project/continuum/internal/testenv"
)

// TestMain fails the package when a closed bridge leaves its goroutines or its Kafka client's
// behind.
func TestMain(m *testing.M) {
	testenv.ExitUnlessLeaked(m.Run(), "stream/bridge.", "franz-go/pkg/kgo.")
}
