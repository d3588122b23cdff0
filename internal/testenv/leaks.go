package testenv

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// LeakedGoroutines waits up to timeout for the goroutines whose stacks contain any of markers to
// end, and returns the stacks of those still running (empty: none). TestMain calls it after
// m.Run, so that a server or source that leaves goroutines behind fails its package.
func LeakedGoroutines(timeout time.Duration, markers ...string) string {
	deadline := time.Now().Add(timeout)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "TestMain") || strings.Contains(g, "testenv.LeakedGoroutines") {
				continue
			}
			for _, m := range markers {
				if strings.Contains(g, m) {
					leaked = append(leaked, g)
					break
				}
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

// ExitUnlessLeaked exits with code, or with 1 when the tests passed but left goroutines matching
// markers running after 10 s (printing their stacks).
func ExitUnlessLeaked(code int, markers ...string) {
	if code == 0 {
		if leaked := LeakedGoroutines(10*time.Second, markers...); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}
