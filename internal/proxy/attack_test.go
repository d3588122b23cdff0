package proxy

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Attack tests (branch attack-proxy): each fails while the defect it names is in the code.

// TestAttackUpgradedConnectionOutlivesServe: an upgraded (WebSocket) connection open at
// shutdown is neither cut nor waited for: Serve returns while the splice (handler.ServeHTTP
// -> switchProtocols) goes on, and the client keeps talking to the instance through a proxy
// that has "stopped" (net/http's Shutdown does not track hijacked connections, and nothing
// else closes them). Serve promises to return once every goroutine it started has.
func TestAttackUpgradedConnectionOutlivesServe(t *testing.T) {
	up := upstreamServer(t, "ws", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			io.WriteString(w, "plain")
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo-proto\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString("echo " + line)
			rw.Flush()
		}
	})
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = StrategyRoundRobin
	cfg.ShutdownTimeout = 300 * time.Millisecond
	tp, cancel, served := serveManually(t, cfg)
	cl := dialRaw(t, tp)
	io.WriteString(cl.c, "GET / HTTP/1.1\r\nHost: dps\r\nConnection: Upgrade\r\nUpgrade: echo-proto\r\n\r\n")
	resp, err := http.ReadResponse(cl.br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	time.Sleep(200 * time.Millisecond)
	cl.c.SetDeadline(time.Now().Add(2 * time.Second))
	io.WriteString(cl.c, "after\n")
	if line, err := cl.br.ReadString('\n'); err == nil {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		t.Fatalf("after Serve returned the upgraded connection still carries traffic (%q); switchProtocols still running: %v",
			line, strings.Contains(stacks, "switchProtocols"))
	}
}

// TestAttackHandedOverUnreadBodyHoldsConnection: a request net/http's server serves (a head
// over the loop's 4 KiB) whose body the proxy never reads (an unknown service: 404 at once)
// leaves net/http discarding the rest of the body after the answer with no deadline at all
// (the loop cleared its own before the hand-over, the fallback server has no ReadTimeout, and
// clientBody's per-read bound only applies to reads the proxy makes). A client that declares
// a body and sends none of it holds the connection (and its goroutine) for ever, where the
// loop closes at once and the docs promise every client wait is bounded (read_header_timeout,
// the service's timeout for a stalled body).
func TestAttackHandedOverUnreadBodyHoldsConnection(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = StrategyRoundRobin
	cfg.Defaults.Timeout = dur(500 * time.Millisecond)
	cfg.ReadHeaderTimeout = 500 * time.Millisecond
	tp := startProxy(t, cfg)
	for _, tc := range []struct{ name, extra string }{{"loop", ""}, {"handed-over", bigField}} {
		cl := dialRaw(t, tp)
		io.WriteString(cl.c, "POST / HTTP/1.1\r\nHost: nosuch\r\nContent-Length: 1000\r\n"+tc.extra+"\r\n0123456789")
		resp, _ := cl.read(http.MethodPost)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d", tc.name, resp.StatusCode)
		}
		start := time.Now()
		cl.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := cl.br.ReadByte()
		if err != io.EOF {
			t.Errorf("%s: connection still open %v after the answer to a request whose declared body never comes (read: %v)",
				tc.name, time.Since(start).Round(time.Second), err)
		}
	}
}

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
