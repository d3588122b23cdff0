package server

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package if servers leave goroutines behind (a leak check without a
// dependency: the goroutines of this package, the store, gRPC servers and Pebble must be gone).
func TestMain(m *testing.M) {
	code := m.Run()
	binCleanup()
	if code == 0 {
		if leaked := waitGoroutines(10 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func waitGoroutines(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "internal/kv/") && !strings.Contains(g, "TestMain") && !strings.Contains(g, "waitGoroutines") ||
				strings.Contains(g, "cockroachdb/pebble") || strings.Contains(g, "grpc.(*Server)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
