package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/dataplane"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/testenv"
	"golang.org/x/sys/unix"
)

// Regression tests of issue 41's proxy defects: what an instance or a client does with the
// framing of an exchange must not reach another exchange, and must not be charged to the
// other side.

// rawInstance is an instance written by hand: answer writes whatever bytes it likes on c for
// the request r (the n-th the instance got, from 1). Requests are read with net/http's parser.
type rawInstance struct {
	ln  net.Listener
	url string
	n   atomic.Int64
	mu  sync.Mutex
	// conns: each connection and whether it is idle (waiting for a request, nothing unread).
	conns map[net.Conn]*atomic.Bool
	wg    sync.WaitGroup
}

// poisonIdle writes a complete answer nobody asked for (marked LEAK-idle) on every idle
// connection and waits until each has reached the proxy's socket: a proxy that takes one of
// them for its next request without noticing hands the bytes to a client.
func (ri *rawInstance) poisonIdle(t testing.TB) int {
	ri.mu.Lock()
	var idle []net.Conn
	for c, b := range ri.conns {
		if b.Load() {
			idle = append(idle, c)
		}
	}
	ri.mu.Unlock()
	for _, c := range idle {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nLEAK-idle")
	}
	for _, c := range idle {
		if !waitSentOut(c) {
			t.Errorf("bytes written on an idle connection did not reach the proxy within 5 s")
		}
	}
	return len(idle)
}

func startRawInstance(t testing.TB, answer func(c net.Conn, r *http.Request, n int64)) *rawInstance {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ri := &rawInstance{ln: ln, url: "http://" + ln.Addr().String(), conns: map[net.Conn]*atomic.Bool{}}
	ri.wg.Add(1)
	go func() {
		defer ri.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			idle := new(atomic.Bool)
			ri.mu.Lock()
			ri.conns[c] = idle
			ri.mu.Unlock()
			ri.wg.Add(1)
			go func() {
				defer ri.wg.Done()
				defer func() {
					ri.mu.Lock()
					delete(ri.conns, c)
					ri.mu.Unlock()
					c.Close()
				}()
				br := bufio.NewReader(c)
				for {
					idle.Store(br.Buffered() == 0)
					r, err := http.ReadRequest(br)
					idle.Store(false)
					if err != nil {
						return
					}
					body, err := io.ReadAll(r.Body)
					if err != nil {
						return
					}
					r.Body = io.NopCloser(strings.NewReader(string(body)))
					answer(c, r, ri.n.Add(1))
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		ri.mu.Lock()
		for c := range ri.conns {
			c.Close()
		}
		ri.mu.Unlock()
		ri.wg.Wait()
	})
	return ri
}

// sentOut waits until what was written on c has reached the peer's socket (the kernel's
// send queue is empty: everything was acknowledged).
func sentOut(t testing.TB, c net.Conn) {
	t.Helper()
	if !waitSentOut(c) {
		t.Fatal("timed out after 5s waiting for the bytes to reach the proxy")
	}
}

// waitSentOut is sentOut's wait (for any goroutine): false after 5 s.
func waitSentOut(c net.Conn) bool {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return true
	}
	return testenv.Poll(5*time.Second, func() bool {
		n, err := -1, error(nil)
		if cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); cerr != nil {
			return true // closed meanwhile (the proxy closed its end): nothing is pending
		}
		return n == 0 || err != nil
	})
}

// ownAnswer is a well-behaved answer naming the request's path.
func ownAnswer(r *http.Request) string {
	body := "own " + r.URL.Path
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// leaked is a complete answer an instance sends where none is due.
const leaked = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nLEAKED"

// bigField makes a request head too large for the loop's buffer: net/http's path serves it.
var bigField = "X-Big: " + strings.Repeat("b", 5<<10) + "\r\n"

// oneService is a proxy with one instance at url for service dps, round-robin.
func oneService(t *testing.T, url string, tune func(*config.Config)) *testProxy {
	t.Helper()
	cfg := testConfig(newTestSource(inst("a", "dps", url)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	if tune != nil {
		tune(&cfg)
	}
	return startProxy(t, cfg)
}

// TestProxyExtraBytesNotPooled (issue 41, defect 1): an instance that sends more than its
// answer's framing says (bytes past Content-Length, a body on HEAD or 204) must not have them
// read as the next client's answer, on the loop's path or on net/http's.
func TestProxyExtraBytesNotPooled(t *testing.T) {
	cases := []struct {
		name, method, first string
		big                 bool
	}{
		{"past-content-length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + leaked, false},
		{"body-on-head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n" + leaked, false},
		{"body-on-204", "DELETE", "HTTP/1.1 204 No Content\r\n\r\n" + leaked, false},
		{"past-content-length-fallback", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + leaked, true},
		{"body-on-head-fallback", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n" + leaked, true},
		{"body-on-204-fallback", "DELETE", "HTTP/1.1 204 No Content\r\n\r\n" + leaked, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
				if r.URL.Path == "/first" {
					io.WriteString(c, tc.first) // one write: the extra bytes arrive with the answer
					return
				}
				io.WriteString(c, ownAnswer(r))
			})
			tp := oneService(t, ri.url, nil)
			extra := ""
			if tc.big {
				extra = bigField
			}
			a := dialRaw(t, tp)
			resp, _ := a.roundTrip(tc.method+" /first HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n", tc.method)
			if resp.StatusCode >= 500 {
				t.Fatalf("first answer: %d", resp.StatusCode)
			}
			// Another client, on the instance connection the first one left (if pooled).
			for i := range 3 {
				b := dialRaw(t, tp)
				path := fmt.Sprintf("/second%d", i)
				resp, body := b.roundTrip("GET "+path+" HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n", http.MethodGet)
				if body != "own "+path {
					t.Fatalf("client %d got %d %q: another exchange's bytes (want %q)", i, resp.StatusCode, body, "own "+path)
				}
			}
		})
	}
}

// TestProxyUnsolicitedBytesOnIdleConn (issue 41, defect 2): bytes an instance writes on an idle
// pooled connection are not the answer to the next request, however soon it comes.
func TestProxyUnsolicitedBytesOnIdleConn(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", big), func(t *testing.T) {
			wrote := make(chan net.Conn, 1)
			answered := make(chan struct{})
			ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
				io.WriteString(c, ownAnswer(r))
				if r.URL.Path == "/first" {
					<-answered
					io.WriteString(c, leaked) // after the answer, on the now idle connection
					wrote <- c
				}
			})
			tp := oneService(t, ri.url, nil)
			extra := ""
			if big {
				extra = bigField
			}
			if _, body := dialRaw(t, tp).roundTrip("GET /first HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n", http.MethodGet); body != "own /first" {
				t.Fatalf("first: %q", body)
			}
			close(answered)
			sentOut(t, <-wrote)
			if _, body := dialRaw(t, tp).roundTrip("GET /second HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); body != "own /second" {
				t.Fatalf("second client got %q: the bytes the instance sent unasked", body)
			}
		})
	}
}

// TestProxyFallback304KeepsContentLength (issue 41, defect 7): a 304 whose head only net/http's
// parser reads keeps the instance's Content-Length (RFC 9110 8.6), as on the loop's path; it
// never becomes 0.
func TestProxyFallback304KeepsContentLength(t *testing.T) {
	for _, tc := range []struct{ big, bigReq bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		big := tc.big
		t.Run(fmt.Sprintf("answer-head-over-4k=%v,net/http-server=%v", tc.big, tc.bigReq), func(t *testing.T) {
			ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
				if r.URL.Path == "/nm" {
					extra := ""
					if big {
						extra = bigField // over the loop's 4 KiB: net/http's parser reads the answer
					}
					io.WriteString(c, "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n"+extra+"Content-Length: 1234\r\n\r\n")
					return
				}
				io.WriteString(c, ownAnswer(r))
			})
			tp := oneService(t, ri.url, nil)
			c := dialRaw(t, tp)
			extra := ""
			if tc.bigReq {
				extra = bigField
			}
			resp, body := c.roundTrip("GET /nm HTTP/1.1\r\nHost: dps\r\n"+extra+"If-None-Match: \"x\"\r\n\r\n", http.MethodGet)
			// The loop passes the instance's value on; net/http's server drops Content-Length
			// from every 304 (its suppressedHeaders304), which RFC 9110 8.6 allows. Neither
			// may say 0.
			want := "1234"
			if tc.bigReq {
				want = ""
			}
			if resp.StatusCode != http.StatusNotModified || body != "" || resp.Header.Get("Content-Length") != want {
				t.Fatalf("304: %d %q Content-Length %q, want %q", resp.StatusCode, body, resp.Header.Get("Content-Length"), want)
			}
			if tc.bigReq {
				c = dialRaw(t, tp) // net/http served one request on the connection and closed it
			}
			if _, body := c.roundTrip("GET /after HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); body != "own /after" {
				t.Fatalf("after the 304: %q", body)
			}
		})
	}
}

// TestProxyForwardsTargetAsSent: the request target reaches the instance as the client sent it
// (in origin form), on the loop's path and on net/http's: routing reads it, nothing re-encodes,
// cleans or decodes it after.
func TestProxyForwardsTargetAsSent(t *testing.T) {
	seen := make(chan string, 1)
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		seen <- r.RequestURI
		io.WriteString(c, ownAnswer(r))
	})
	tp := oneService(t, ri.url, nil)
	for _, tc := range []struct{ target, want string }{
		{"/a%2Fb/c", "/a%2Fb/c"},
		{"/{x}/%7e/", "/{x}/%7e/"},
		{"/a/../b/./c", "/a/../b/./c"},
		{"/p;q=1?x=%2F&y={}&z=%zz", "/p;q=1?x=%2F&y={}&z=%zz"},
		{"/%2e%2e/secret", "/%2e%2e/secret"},
		{"http://dps/{x}/a%2Fb?q=1", "/{x}/a%2Fb?q=1"},
		{"http://dps?q=1", "/?q=1"},
	} {
		for _, big := range []bool{false, true} {
			extra := ""
			if big {
				extra = bigField
			}
			resp, _ := dialRaw(t, tp).roundTrip("GET "+tc.target+" HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n", http.MethodGet)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s (net/http's path %v): %d", tc.target, big, resp.StatusCode)
				continue
			}
			if got := <-seen; got != tc.want {
				t.Errorf("%s (net/http's path %v): the instance saw %q, want %q", tc.target, big, got, tc.want)
			}
		}
	}
}

// TestProxyOverlongAnswerHeadBounded: an answer head that never ends is cut at the bound (502
// naming it) on net/http's parser path as the loop's own parser is bounded by its buffer,
// rather than read into memory until the service's timeout.
func TestProxyOverlongAnswerHeadBounded(t *testing.T) {
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Endless: " + strings.Repeat("e", 1000) + "\r\n"
		for {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	tp := oneService(t, ri.url, func(cfg *config.Config) { cfg.Defaults.Timeout = config.Dur(time.Minute) })
	for _, big := range []bool{false, true} {
		extra := ""
		if big {
			extra = bigField
		}
		c := dialRaw(t, tp)
		c.c.SetDeadline(time.Now().Add(20 * time.Second))
		resp, body := c.roundTrip("GET /endless HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n", http.MethodGet)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "answer head") {
			t.Fatalf("endless answer head (net/http's path %v): %d %q, want 502 naming the head's bound", big, resp.StatusCode, body)
		}
	}
}

// TestProxyInstanceIDNeverSplitsAnswer (issue 41, attack 2): an instance ID is written into
// every answer's X-Continuum-Instance field, and sources take IDs from places anyone who
// registers an instance writes (a kv key takes any bytes). An ID with CRLF once split the
// answer (a header, or a whole second answer, of the registrant's choosing). Such an instance
// is refused where snapshots are united, for every source, with a log naming the source and
// ID; the others serve, and each client gets exactly its one answer, on both servers.
func TestProxyInstanceIDNeverSplitsAnswer(t *testing.T) {
	up := upstreamServer(t, "b", nil)
	id := "a\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Split: 1\r\n\r\nINJECTED"
	var logs testenv.SyncBuffer
	tp := oneService(t, up.URL, func(c *config.Config) {
		c.Sources = []discovery.Source{newTestSource(inst(id, "dps", up.URL), inst("b", "dps", up.URL))}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	for _, extra := range []string{"", bigField} {
		cl := dialRaw(t, tp)
		resp, body := cl.roundTrip("GET /x HTTP/1.1\r\nHost: dps\r\n"+extra+"\r\n", http.MethodGet)
		if got := resp.Header.Get(http1.InstanceHeader); got != "b" || body != "b got 0 bytes" || resp.Header.Get("X-Split") != "" {
			t.Fatalf("answer %d %q from %q", resp.StatusCode, body, got)
		}
		if rest := peekConn(cl); rest != "" {
			t.Fatalf("bytes after the answer: %q", rest)
		}
	}
	if l := logs.String(); !strings.Contains(l, "source=test") || !strings.Contains(l, `Content-Length: 0`) {
		t.Errorf("the refusal is not logged with the source and the ID:\n%s", l)
	}
	// Defence in depth: an instance made without the union refuses the ID too, and the loop's
	// writer leaves controls out of any value it makes.
	if _, err := pool.NewInstance(inst(id, "dps", up.URL), 8, 8); err == nil {
		t.Error("newInstance took an ID with CRLF")
	}
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	dataplane.WriteFieldValue(bw, "a\r\nb\x00c\td\x7f")
	bw.Flush()
	if buf.String() != "abc\td" {
		t.Errorf("writeFieldValue wrote %q", buf.String())
	}
}

func peekConn(rc *rawClient) string {
	rc.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	b := make([]byte, 256)
	n, _ := rc.br.Read(b)
	return string(b[:n])
}

// TestProxyAnswerFramedTwoWaysRefused: an instance's answer whose framing reads two ways
// (Content-Length with Transfer-Encoding; Transfer-Encoding in HTTP/1.0) is the instance's
// failure: the client gets 502 naming it, never a guess at where the answer ends, and the
// connection is not pooled (the next request gets its own answer).
func TestProxyAnswerFramedTwoWaysRefused(t *testing.T) {
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		switch r.URL.Path {
		case "/cl-te":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+leaked)
		case "/cl-te-big": // a head over the loop's buffer: net/http's parser reads it
			io.WriteString(c, "HTTP/1.1 200 OK\r\n"+bigField+"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+leaked)
		case "/te-10":
			io.WriteString(c, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+leaked)
		default:
			io.WriteString(c, ownAnswer(r))
		}
	})
	tp := oneService(t, ri.url, nil)
	for _, tc := range []struct{ path, extra string }{
		{"/cl-te", ""}, {"/te-10", ""}, {"/cl-te-big", ""}, // the loop's server
		{"/cl-te", bigField}, {"/te-10", bigField}, // net/http's server (a request head over 4 KiB)
	} {
		path := tc.path
		resp, body := dialRaw(t, tp).roundTrip("GET "+path+" HTTP/1.1\r\nHost: dps\r\n"+tc.extra+"\r\n", http.MethodGet)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "framed two ways") {
			t.Fatalf("%s (head %d bytes): %d %q", path, len(tc.extra), resp.StatusCode, body)
		}
		// The instance is in cooldown after the failure: wait until it serves again.
		testenv.Eventually(t, 5*time.Second, "the instance serves again", func() bool {
			resp, body := dialRaw(t, tp).roundTrip("GET /own HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
			if resp.StatusCode == http.StatusOK && body != "own /own" {
				t.Fatalf("after %s: someone else's answer %q", path, body)
			}
			return resp.StatusCode == http.StatusOK
		})
	}
}
