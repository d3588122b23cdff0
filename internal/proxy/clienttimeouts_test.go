package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/dataplane"
	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestProxyNewConnGetsHeaderTimeout (issue 41, defect 5): a connection that sends nothing is
// closed after read_header_timeout, as one that sends part of a head is.
func TestProxyNewConnGetsHeaderTimeout(t *testing.T) {
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) { io.WriteString(c, ownAnswer(r)) })
	tp := oneService(t, ri.url, func(cfg *config.Config) { cfg.ReadHeaderTimeout = 200 * time.Millisecond })
	c := dialRaw(t, tp)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.br.ReadByte()
	if err != io.EOF {
		t.Fatalf("a silent new connection: %v, want it closed (EOF) after read_header_timeout", err)
	}
}

// TestProxySlowUploadNotBlamedOnInstance (issue 41, defect 3): a client that uploads its body
// slower than the service's timeout (but never stalls for that long) is not answered 504, and
// the instance is not put in cooldown for it.
func TestProxySlowUploadNotBlamedOnInstance(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", big), func(t *testing.T) {
			ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
				b, _ := io.ReadAll(r.Body)
				body := fmt.Sprintf("got %q", b)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			})
			tp := oneService(t, ri.url, func(cfg *config.Config) { cfg.Defaults.Timeout = config.Dur(time.Second) })
			extra := ""
			if big {
				extra = bigField
			}
			c := dialRaw(t, tp)
			const body = "abcdefgh"
			io.WriteString(c.c, "POST /up HTTP/1.1\r\nHost: dps\r\n"+extra+"Content-Length: 8\r\n\r\n")
			for i := range len(body) {
				time.Sleep(200 * time.Millisecond) // the client's pace: 1.6 s for the body, each gap well within 1 s
				io.WriteString(c.c, body[i:i+1])
			}
			resp, got := c.read(http.MethodPost)
			if resp.StatusCode != http.StatusOK || got != `got "abcdefgh"` {
				t.Fatalf("slow upload: %d %q, want 200 with the instance's answer", resp.StatusCode, got)
			}
			if in, _ := tp.pools(t).instance("dps", "a"); in.Failures != 0 || !in.CooldownUntil.IsZero() {
				t.Fatalf("the instance was blamed for the client's slow upload: %+v", in)
			}
		})
	}
}

// TestProxyStalledUploadTimesOut (issue 41, defect 4): a client that stops sending its body
// is cut after the service's timeout (408), and frees its slot, the instance's connection and
// the instance's outstanding count; the instance is not blamed.
func TestProxyStalledUploadTimesOut(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", big), func(t *testing.T) {
			ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) { io.WriteString(c, ownAnswer(r)) })
			tp := oneService(t, ri.url, func(cfg *config.Config) {
				cfg.Defaults.Timeout = config.Dur(300 * time.Millisecond)
				cfg.MaxInflight = 1
			})
			extra := ""
			if big {
				extra = bigField
			}
			c := dialRaw(t, tp)
			io.WriteString(c.c, "POST /stall HTTP/1.1\r\nHost: dps\r\n"+extra+"Content-Length: 10\r\n\r\nhalf.")
			c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(c.br, nil)
			if err != nil {
				t.Fatalf("a client stalled mid-body was not cut within 10 s: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || !c.closed() {
				t.Fatalf("stalled upload: %d, want 408 and the connection closed", resp.StatusCode)
			}
			testenv.Eventually(t, 5*time.Second, "the slot and the instance's count are freed", func() bool {
				in, _ := tp.pools(t).instance("dps", "a")
				return in.Outstanding == 0
			})
			if _, body := dialRaw(t, tp).roundTrip("GET /next HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); body != "own /next" {
				t.Fatalf("after the stalled client (max_inflight 1): %q", body)
			}
			if in, _ := tp.pools(t).instance("dps", "a"); in.Failures != 0 {
				t.Fatalf("the instance was blamed for the client's stall: %+v", in)
			}
		})
	}
}

// TestProxyClientThatNeverReadsIsCut: a client that reads nothing of a long answer is cut after
// write_timeout, on the loop's path and on net/http's, and the instance's connection is freed
// (its writes fail) rather than held for as long as the client keeps TCP open.
func TestProxyClientThatNeverReadsIsCut(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", big), func(t *testing.T) {
			freed := make(chan error, 1)
			ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n") // until close
				chunk := make([]byte, 64<<10)
				for {
					c.SetWriteDeadline(time.Now().Add(20 * time.Second))
					if _, err := c.Write(chunk); err != nil {
						freed <- err
						return
					}
				}
			})
			tp := oneService(t, ri.url, func(cfg *config.Config) { cfg.WriteTimeout = 300 * time.Millisecond })
			extra := ""
			if big {
				extra = bigField
			}
			c := dialRaw(t, tp)
			c.c.(*net.TCPConn).SetReadBuffer(4 << 10)
			io.WriteString(c.c, "GET /stream HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n")
			// The client reads nothing.
			select {
			case err := <-freed:
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("the instance's connection was held for 20 s by a client that reads nothing")
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the instance's connection still held after 15 s")
			}
		})
	}
}

// TestProxyLeftStreamFreesInflightSlot (issue 41, attack 3): a client that opens a quiet
// stream (server-sent events, a long poll that sent its head) and leaves must free its
// max_inflight slot, goroutine and instance connection without waiting for the instance's
// next write: the loop checks on the client while the body is silent (clientCheckEvery) and
// ends the exchange, counted as 499. Once every slot was held for as long as the instance
// stayed quiet, and everyone else got 503. Answer heads the loop parses and heads over its
// buffer (net/http's parser) alike.
func TestProxyLeftStreamFreesInflightSlot(t *testing.T) {
	release := make(chan struct{})
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		if r.URL.Path == "/events" {
			extra := ""
			if r.URL.RawQuery == "big" {
				extra = bigField
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"+extra+"\r\ndata: hello\n\n")
			<-release // no event for a while
			c.Close()
			return
		}
		io.WriteString(c, ownAnswer(r))
	})
	tp := oneService(t, ri.url, func(c *config.Config) { c.MaxInflight = 4 })
	t.Cleanup(func() { close(release) }) // first: the instance's cleanup waits for its handlers
	for i := range 4 {
		cl := dialRaw(t, tp)
		q := ""
		if i%2 == 1 {
			q = "?big"
		}
		io.WriteString(cl.c, "GET /events"+q+" HTTP/1.1\r\nHost: dps\r\n\r\n")
		resp, err := http.ReadResponse(cl.br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %v %v", resp, err)
		}
		cl.c.Close() // the client leaves
	}
	if resp, _ := dialRaw(t, tp).roundTrip("GET /fast HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with 4 streams in flight and max_inflight 4: %d (the test no longer tests)", resp.StatusCode)
	}
	testenv.Eventually(t, 10*time.Second, "the left streams free their slots", func() bool {
		return tp.p.h.Inflight.Load() == 0
	})
	resp, body := dialRaw(t, tp).roundTrip("GET /fast HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a new client got %d %q", resp.StatusCode, body)
	}
	if m := grep(tp.metrics(t), `code="499"`); !strings.Contains(m, " 4") {
		t.Errorf("the left streams are not counted as 499: %q", m)
	}
}

// TestProxyUnreadBodyBounded (issue 41, attack 6): a request whose body the proxy never
// reads (an unknown service: 404 at once) and whose client never sends the body it declared
// must not hold its connection: the loop closes it after the answer; on net/http's server (a
// head over the loop's 4 KiB) the drain net/http does after the answer is bounded by
// unreadBodyDrain. net/http's drain once had no deadline at all (the loop cleared its own at
// the hand-over, the fallback server has no ReadTimeout).
func TestProxyUnreadBodyBounded(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.Defaults.Timeout = config.Dur(500 * time.Millisecond)
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

// TestProxyBigHeadsBoundedHeap (issue 41, attack 7): the loop reads a head over its 4 KiB
// buffer whole (up to 1 MiB) into a slice of its own before handing the connection over, for
// up to read_header_timeout; at most maxBigHeads connections do so at once. Before, 48 clients
// that each sent ~1 MiB of head and never ended it pinned ~51 MiB of heap (the Helm chart's
// limit is 128 MiB, GOMEMLIMIT 48 MiB: ~100 such clients got the proxy killed). Meanwhile
// requests with small heads are served, and a big head that finds no token within
// read_header_timeout gets 431.
func TestProxyBigHeadsBoundedHeap(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.ReadHeaderTimeout = 20 * time.Second
	tp := startProxy(t, cfg)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	head := []byte("GET / HTTP/1.1\r\nHost: dps\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 1000))
	const clients = 48
	loop := tp.p.loop.Load()
	for range clients {
		cl := dialRaw(t, tp)
		go cl.c.Write(head) // never ends the head
	}
	testenv.Eventually(t, 10*time.Second, "every token taken", func() bool { return len(loop.BigHeads) == min(dataplane.MaxBigHeads, clients) })
	// Wait until the heads being read stop growing (the readers have what the clients sent):
	// two samples 200 ms apart within 1 MiB of each other.
	prev := int64(-1 << 40)
	testenv.Eventually(t, 20*time.Second, "the heads being read stop growing", func() bool {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		g := int64(m.HeapInuse) - int64(before.HeapInuse)
		stable := g > 4<<20 && g-prev < 1<<20
		prev = g
		time.Sleep(200 * time.Millisecond) // the sampling interval
		return stable
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %d MiB for %d clients", grew>>20, clients)
	if grew > 16<<20 {
		t.Fatalf("%d clients with unfinished ~1 MiB heads pin %d MiB of heap (no bound on heads being read)", clients, grew>>20)
	}
	if resp, body := dialRaw(t, tp).roundTrip("GET /small HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); resp.StatusCode != http.StatusOK {
		t.Fatalf("a small head while the big ones are read: %d %q", resp.StatusCode, body)
	}
}

// TestProxyBigHeadWithoutTokenGets431: a head over the loop's buffer that finds no token
// (maxBigHeads) within read_header_timeout is answered 431 naming the bound, and closed.
func TestProxyBigHeadWithoutTokenGets431(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	tp := oneService(t, up.URL, func(c *config.Config) { c.ReadHeaderTimeout = 300 * time.Millisecond })
	loop := tp.p.loop.Load()
	for range dataplane.MaxBigHeads {
		loop.BigHeads <- struct{}{} // as if maxBigHeads clients were sending big heads
	}
	cl := dialRaw(t, tp)
	resp, body := cl.roundTrip("GET / HTTP/1.1\r\nHost: dps\r\n"+bigField+"\r\n", http.MethodGet)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, "at most 8 at once") {
		t.Fatalf("big head without a token: %d %q", resp.StatusCode, body)
	}
	cl.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := cl.br.ReadByte(); err == nil || pool.IsTimeout(err) {
		t.Fatalf("the connection stays open after the 431: %v", err) // EOF, or a reset (the head's rest unread)
	}
	for range dataplane.MaxBigHeads {
		<-loop.BigHeads
	}
	resp, body = dialRaw(t, tp).roundTrip("GET / HTTP/1.1\r\nHost: dps\r\n"+bigField+"\r\n", http.MethodGet)
	if resp.StatusCode != http.StatusOK || body != "a got 0 bytes" {
		t.Fatalf("big head with tokens free: %d %q", resp.StatusCode, body)
	}
}
