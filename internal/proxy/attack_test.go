package proxy

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Attack tests (branch attack-proxy): each fails while the defect it names is in the code.

// TestAttackPartialHugeHeadsPinHeap: the loop reads a head over its 4 KiB buffer whole (up to
// 1 MiB) into a slice of its own before handing the connection over, for up to
// read_header_timeout, and nothing bounds the connections doing so (max_inflight counts
// requests being served, not heads being read). 48 clients that each send ~1 MiB of head and
// never end it pin ~64 MiB of the proxy's heap; the Helm chart runs the proxy with a 128 MiB
// memory limit (GOMEMLIMIT 48 MiB), so about a hundred such clients get it OOM-killed.
func TestAttackPartialHugeHeadsPinHeap(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = StrategyRoundRobin
	cfg.ReadHeaderTimeout = 20 * time.Second
	tp := startProxy(t, cfg)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	head := []byte("GET / HTTP/1.1\r\nHost: dps\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 1000))
	const clients = 48
	for range clients {
		cl := dialRaw(t, tp)
		go cl.c.Write(head) // never ends the head
	}
	time.Sleep(3 * time.Second)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %d MiB for %d clients", grew>>20, clients)
	if grew > 16<<20 {
		t.Fatalf("%d clients with unfinished ~1 MiB heads pin %d MiB of heap (no bound on heads being read)", clients, grew>>20)
	}
}
