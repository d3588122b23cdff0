package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/testenv"
)

// rawClient is one client connection to the proxy written by hand, so that the test controls
// every byte (HTTP/1.0, pipelining, keep-alive) and reads the answers with net/http's parser.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, tp *testProxy) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawClient{t: t, c: c, br: bufio.NewReader(c)}
}

// roundTrip writes raw and reads one answer (for method) with its body.
func (rc *rawClient) roundTrip(raw, method string) (*http.Response, string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, raw); err != nil {
		rc.t.Fatal(err)
	}
	return rc.read(method)
}

func (rc *rawClient) read(method string) (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("reading the answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("reading the body: %v", err)
	}
	resp.Body.Close()
	return resp, string(b)
}

// closed reports whether the proxy closed the connection (EOF before another byte).
func (rc *rawClient) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rc.br.ReadByte()
	return err == io.EOF
}

// TestProxyLoopHTTP11 covers what a client of a reverse proxy relies on, through the loop:
// keep-alive, HEAD, 204, chunked answers to HTTP/1.1 and to HTTP/1.0 clients, trailers,
// hop-by-hop and Connection-listed fields, X-Forwarded-*, request bodies both ways, and
// heads too large for the loop (net/http serves them).
func TestProxyLoopHTTP11(t *testing.T) {
	var mu sync.Mutex
	var seen http.Header
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		seen.Set("Host", r.Host)
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/head":
			w.Header().Set("Content-Length", "11")
			w.Header().Set("X-Head", "yes")
			if r.Method != http.MethodHead {
				io.WriteString(w, "hello world")
			}
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		case "/chunked":
			w.Header().Set("Trailer", "X-Sum")
			w.Header().Set("Connection", "X-Hop")
			w.Header().Set("X-Hop", "must not pass")
			w.Header().Set("Keep-Alive", "timeout=5")
			io.WriteString(w, "part1,")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part2")
			w.Header().Set("X-Sum", "42")
		case "/bighead":
			w.Header().Set("X-Big", strings.Repeat("b", 8<<10))
			io.WriteString(w, "big head")
		default:
			fmt.Fprintf(w, "%s %s %d:%s", r.Method, r.URL.RequestURI(), len(body), body)
		}
	})
	tp := startProxy(t, testConfig(newTestSource(inst("a", "dps", up.URL))))
	rc := dialRaw(t, tp)

	// Keep-alive: several requests on one connection.
	for i := range 3 {
		resp, body := rc.roundTrip(fmt.Sprintf("GET /k%d HTTP/1.1\r\nHost: dps\r\n\r\n", i), http.MethodGet)
		if resp.StatusCode != 200 || body != fmt.Sprintf("GET /k%d 0:", i) || resp.Close || resp.Header.Get(http1.InstanceHeader) != "a" {
			t.Fatalf("request %d: %d %q close=%v %v", i, resp.StatusCode, body, resp.Close, resp.Header)
		}
	}
	// HEAD: the length of the GET, no body, and the connection goes on.
	resp, body := rc.roundTrip("HEAD /head HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodHead)
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != 11 || resp.Header.Get("X-Head") != "yes" {
		t.Fatalf("HEAD: %d %q length %d %v", resp.StatusCode, body, resp.ContentLength, resp.Header)
	}
	if resp, body := rc.roundTrip("GET /head HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); body != "hello world" {
		t.Fatalf("GET after HEAD: %d %q", resp.StatusCode, body)
	}
	if resp, body := rc.roundTrip("DELETE /nocontent HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodDelete); resp.StatusCode != 204 || body != "" {
		t.Fatalf("204: %d %q", resp.StatusCode, body)
	}
	// A chunked answer: chunked to the client, trailers passed on, hop-by-hop fields and those
	// the instance's Connection names dropped.
	resp, body = rc.roundTrip("GET /chunked HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
	if body != "part1,part2" || resp.ContentLength != -1 || resp.Trailer.Get("X-Sum") != "42" {
		t.Fatalf("chunked: %q length %d trailer %v", body, resp.ContentLength, resp.Trailer)
	}
	if resp.Header.Get("X-Hop") != "" || resp.Header.Get("Keep-Alive") != "" {
		t.Fatalf("chunked: hop-by-hop fields passed: %v", resp.Header)
	}
	// Request bodies: by length, chunked; hop-by-hop request fields dropped; X-Forwarded-*.
	resp, body = rc.roundTrip("POST /len?x=1 HTTP/1.1\r\nHost: dps.example\r\nContent-Length: 5\r\nConnection: X-Secret\r\nX-Secret: s\r\nProxy-Authorization: p\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Host: evil\r\n\r\nhello", http.MethodPost)
	if body != "POST /len?x=1 5:hello" {
		t.Fatalf("body by length: %d %q", resp.StatusCode, body)
	}
	mu.Lock()
	if seen.Get("X-Secret") != "" || seen.Get("Proxy-Authorization") != "" || seen.Get("X-Forwarded-For") != "10.0.0.1, 127.0.0.1" ||
		seen.Get("X-Forwarded-Host") != "dps.example" || seen.Get("X-Forwarded-Proto") != "http" || seen.Get("Host") != "dps.example" {
		t.Errorf("the instance saw %v", seen)
	}
	mu.Unlock()
	if _, body := rc.roundTrip("PUT /ch HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n", http.MethodPut); body != "PUT /ch 5:abcde" {
		t.Fatalf("chunked request body: %q", body)
	}
	// A request head larger than the loop's buffer: net/http serves it, and closes the
	// connection after it (the next head is the loop's to read and check, framing.go).
	resp, body = rc.roundTrip("GET /large HTTP/1.1\r\nHost: dps\r\nX-Large: "+strings.Repeat("l", 16<<10)+"\r\n\r\n", http.MethodGet)
	if resp.StatusCode != 200 || body != "GET /large 0:" || !resp.Close || !rc.closed() {
		t.Fatalf("large head: %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	if _, body := dialRaw(t, tp).roundTrip("GET /after-large HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); body != "GET /after-large 0:" {
		t.Fatalf("after a large head: %q", body)
	}
	// Everything before the large head was the loop's.
	if n := tp.p.loop.Load().HandedOver.Load(); n != 1 {
		t.Fatalf("%d connections handed to net/http, want 1 (the large head's)", n)
	}

	// An answer head larger than the instance connection's buffer: net/http's parser reads it.
	rc2 := dialRaw(t, tp)
	resp, body = rc2.roundTrip("GET /bighead HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
	if resp.StatusCode != 200 || body != "big head" || len(resp.Header.Get("X-Big")) != 8<<10 || resp.Header.Get(http1.InstanceHeader) != "a" {
		t.Fatalf("large answer head: %d %q", resp.StatusCode, body)
	}
	if _, body := rc2.roundTrip("GET /x HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); body != "GET /x 0:" {
		t.Fatalf("after a large answer head: %q", body)
	}
	// Connection: close is honoured.
	resp, _ = rc2.roundTrip("GET /bye HTTP/1.1\r\nHost: dps\r\nConnection: close\r\n\r\n", http.MethodGet)
	if !resp.Close || !rc2.closed() {
		t.Fatalf("Connection: close: close=%v, connection left open", resp.Close)
	}

	// HTTP/1.0: closed after the answer unless keep-alive; a chunked answer ends with the close.
	rc3 := dialRaw(t, tp)
	resp, body = rc3.roundTrip("GET /ka HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\n\r\n", http.MethodGet)
	if body != "GET /ka 0:" || resp.Close || resp.Header.Get("Connection") != "keep-alive" {
		t.Fatalf("HTTP/1.0 keep-alive: %q close=%v %v", body, resp.Close, resp.Header)
	}
	resp, body = rc3.roundTrip("GET /chunked HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\n\r\n", http.MethodGet)
	if body != "part1,part2" || !resp.Close || len(resp.TransferEncoding) != 0 {
		t.Fatalf("HTTP/1.0, chunked answer: %q close=%v te=%v", body, resp.Close, resp.TransferEncoding)
	}
	rc4 := dialRaw(t, tp)
	_, body = rc4.roundTrip("GET /plain HTTP/1.0\r\nHost: dps\r\n\r\n", http.MethodGet)
	if body != "GET /plain 0:" || !rc4.closed() {
		t.Fatalf("HTTP/1.0: %q, connection left open", body)
	}
}

// TestProxyLoopHandsOverMalformed: what the loop does not parse gets net/http's answer, and
// the proxy keeps serving.
func TestProxyLoopHandsOverMalformed(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	tp := startProxy(t, testConfig(newTestSource(inst("a", "dps", up.URL))))
	for _, tc := range []struct {
		raw  string
		code int
	}{
		{"GET / HTTP/1.1\r\n\r\n", http.StatusBadRequest},                                                        // no Host
		{"GET / HTTP/1.1\r\nHost: dps\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", http.StatusBadRequest}, // conflicting lengths
		{"GET / HTTP/1.1\r\nHost: dps\r\nExpect: teapot\r\n\r\n", http.StatusExpectationFailed},
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", http.StatusBadRequest},
	} {
		rc := dialRaw(t, tp)
		if resp, _ := rc.roundTrip(tc.raw, http.MethodGet); resp.StatusCode != tc.code {
			t.Errorf("%q: %d, want %d", tc.raw, resp.StatusCode, tc.code)
		}
	}
	rc := dialRaw(t, tp)
	if resp, body := rc.roundTrip("GET / HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); resp.StatusCode != 200 || body != "a got 0 bytes" {
		t.Fatalf("after malformed requests: %d %q", resp.StatusCode, body)
	}
}

// TestProxyLoopErrorsKeepConnection: the proxy's own error answers keep the connection when
// the request was read whole (a 404 for an unknown service is not a reason to reconnect).
func TestProxyLoopErrorsKeepConnection(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	tp := startProxy(t, testConfig(newTestSource(inst("a", "dps", up.URL))))
	rc := dialRaw(t, tp)
	resp, body := rc.roundTrip("POST / HTTP/1.1\r\nHost: nosuch\r\nContent-Length: 3\r\n\r\nabc", http.MethodPost)
	if resp.StatusCode != http.StatusNotFound || resp.Close || !strings.Contains(body, `"service":"nosuch"`) {
		t.Fatalf("unknown service: %d close=%v %q", resp.StatusCode, resp.Close, body)
	}
	if resp, _ := rc.roundTrip("GET / HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n", http.MethodGet); resp.StatusCode != http.StatusBadRequest || resp.Close {
		t.Fatalf("no service: %d close=%v", resp.StatusCode, resp.Close)
	}
	if resp, body := rc.roundTrip("GET / HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); resp.StatusCode != 200 || body != "a got 0 bytes" {
		t.Fatalf("after errors: %d %q", resp.StatusCode, body)
	}
	// A malformed chunked body: 400 naming it, the connection closed (the rest of the body
	// cannot be found), and the instance not blamed: it stays in the pool.
	resp, body = rc.roundTrip("POST / HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", http.MethodPost)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "request body") || !resp.Close || !rc.closed() {
		t.Fatalf("malformed chunked body: %d close=%v %q", resp.StatusCode, resp.Close, body)
	}
	if in, ok := tp.pools(t).instance("dps", "a"); !ok || !in.InPool || in.Failures != 0 {
		t.Fatalf("the instance after a client's malformed body: %+v", in)
	}
}

// TestProxyLoopShutdownDrains: when Serve's context ends, a request in flight through the loop
// is answered (with Connection: close), an idle keep-alive connection is closed, and Serve
// returns with no goroutine of the loop left.
func TestProxyLoopShutdownDrains(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done "+r.URL.Path)
	})
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln, nil) }()
	tp := &testProxy{p: p, url: "http://" + ln.Addr().String()}

	idle := dialRaw(t, tp)
	idle.waitServing()
	busy := dialRaw(t, tp)
	io.WriteString(busy.c, "GET /slow HTTP/1.1\r\nHost: dps\r\n\r\n")
	<-entered
	cancel()
	if !idle.closed() {
		t.Fatal("an idle keep-alive connection was left open by the shutdown")
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	resp, body := busy.read(http.MethodGet)
	if resp.StatusCode != http.StatusOK || body != "done /slow" || !resp.Close {
		t.Fatalf("request in flight at shutdown: %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	checkNoGoroutines(t)
}

// TestProxyLoopBodyOutlastsTimeout: the service's timeout bounds the wait for the answer's
// head, not its body, whichever way the body is framed; and the connection to the instance,
// whose deadline the loop re-arms lazily, serves the next request.
func TestProxyLoopBodyOutlastsTimeout(t *testing.T) {
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fast" {
			io.WriteString(w, "fast")
			return
		}
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", "10")
		}
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // three times the service's timeout
		io.WriteString(w, "-last")
	})
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.Defaults.Timeout = config.Dur(100 * time.Millisecond)
	tp := startProxy(t, cfg)
	rc := dialRaw(t, tp)
	for _, path := range []string{"/chunked", "/length"} {
		resp, body := rc.roundTrip("GET "+path+" HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
		if resp.StatusCode != http.StatusOK || body != "first-last" {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, body)
		}
		for i := range 3 {
			if resp, body := rc.roundTrip("GET /fast HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); resp.StatusCode != http.StatusOK || body != "fast" {
				t.Fatalf("after %s, request %d: %d %q", path, i, resp.StatusCode, body)
			}
		}
	}
	// Idle longer than the timeout: the pooled connection's old deadline has passed.
	time.Sleep(250 * time.Millisecond)
	if resp, body := rc.roundTrip("GET /fast HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet); resp.StatusCode != http.StatusOK || body != "fast" {
		t.Fatalf("after an idle spell: %d %q", resp.StatusCode, body)
	}
}

// TestProxyLoopInstanceClosedIdleConnection: an instance that closes a keep-alive connection
// while it is idle in the pool (its idle timeout) costs the next request a retry on a fresh
// connection, not a wait: the loop sends a request without a read before its wait
// (rawConn.writeAwait), so the closed connection must still wake it.
func TestProxyLoopInstanceClosedIdleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	closed := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// One answer per connection, then close it as an idle timeout would.
				defer func() { c.Close(); closed <- struct{}{} }()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	cfg := testConfig(newTestSource(inst("a", "dps", "http://"+ln.Addr().String())))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.Defaults.Timeout = config.Dur(time.Minute) // a wait for the timeout would fail the test's deadline
	tp := startProxy(t, cfg)
	rc := dialRaw(t, tp)
	for i := range 5 {
		start := time.Now()
		resp, body := rc.roundTrip("GET / HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
		if resp.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("request %d took %v", i, d)
		}
		<-closed // the instance has closed the connection the proxy keeps in its pool
	}
}

// TestProxyLoopShutdownCutsStalledInstance (issue 41, attack 4): when the shutdown's grace
// is over, the loop cuts the instance connections of the requests still in flight, not only
// the clients': an instance that sends an answer's head and part of its body, then nothing
// (or no head at all, within a long timeout), once held Serve's shutdown for ever (the
// goroutine blocked reading the instance, closeAll closing only the client).
func TestProxyLoopShutdownCutsStalledInstance(t *testing.T) {
	release := make(chan struct{})
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		switch r.URL.Path {
		case "/stall":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
			<-release
			return
		case "/nohead":
			<-release
			return
		}
		io.WriteString(c, ownAnswer(r))
	})
	t.Cleanup(func() { close(release) }) // runs before the instance's cleanup (LIFO)
	cfg := testConfig(newTestSource(inst("a", "dps", ri.url)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.ShutdownTimeout = 300 * time.Millisecond
	cfg.Defaults.Timeout = config.Dur(time.Minute)
	tp, cancel, served := serveManually(t, cfg)
	noHead := dialRaw(t, tp)
	io.WriteString(noHead.c, "GET /nohead HTTP/1.1\r\nHost: dps\r\n\r\n")

	cl := dialRaw(t, tp)
	io.WriteString(cl.c, "GET /stall HTTP/1.1\r\nHost: dps\r\n\r\n")
	resp, err := http.ReadResponse(cl.br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("head of the stalled answer: %v %v", resp, err)
	}
	testenv.Eventually(t, 5*time.Second, "both requests in flight", func() bool { return tp.p.h.Inflight.Load() == 2 })
	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return 5 s after cancel with ShutdownTimeout 300ms: an instance that stalls holds the shutdown for ever")
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the stalled answer reads as complete: its client connection must be aborted")
	}
}
