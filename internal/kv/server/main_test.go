package server

import (
	"testing"

	"github.com/continuum-project/continuum/internal/testenv"
)

// TestMain fails the package if servers leave goroutines behind: the goroutines of this package,
// the store, gRPC servers and Pebble must be gone.
func TestMain(m *testing.M) {
	code := m.Run()
	binCleanup()
	testenv.ExitUnlessLeaked(code, "internal/kv/", "cockroachdb/pebble", "grpc.(*Server)")
}
