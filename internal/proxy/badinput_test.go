package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/testenv"
)

// openFDs counts this process's open file descriptors.
// TestProxyBadInputKeepsServing sends what misbehaving clients and instances send — a client
// that never finishes its headers (slowloris), headers larger than the limit, an instance that
// resets the connection, pipelined requests — and checks that each gets a clear status, that
// well-behaved requests are served meanwhile, and that afterwards the goroutines and open file
// descriptors return to what they were before (waiting with a deadline for the closes).
func TestProxyBadInputKeepsServing(t *testing.T) {
	h := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" {
			// Answer nothing and reset the connection (RST, not FIN).
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			return
		}
		io.WriteString(w, "path "+r.URL.Path)
	}
	// Two instances: the one that resets goes into cooldown, the other keeps serving.
	a, b := upstreamServer(t, "a", h), upstreamServer(t, "b", h)
	cfg := testConfig(newTestSource(inst("a", "dps", a.URL), inst("b", "dps", b.URL)))
	// Round-robin: the data path is every strategy's, and qos's spare connections (dialed and
	// expired in the background) would make the counts move without any leak.
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.ReadHeaderTimeout = testenv.HeaderTimeout
	tp := startProxy(t, cfg)
	var base [2]int
	do := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, tp.url+path, nil)
		req.Header.Set(http1.ServiceHeader, "dps")
		resp, err := tp.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// quiet closes the idle connections of the client and of the proxy's pools: what is left
	// open then is what requests left behind.
	quiet := func() {
		tp.client.CloseIdleConnections()
		for _, s := range tp.p.rt.All() {
			s.Conns.CloseIdleConnections()
		}
	}
	// The first round of bad input sets up what stays (pools, spares, the services' background
	// work); the baseline is taken after it, and two more rounds must not add to it.
	for round := 1; round <= 3; round++ {
		badInputRound(t, tp, do)
		if round == 1 {
			var baseG, baseFD int
			testenv.Eventually(t, 10*time.Second, "a steady baseline", func() bool {
				quiet() // the counts settle over the polls as the closes land
				g, fd := runtime.NumGoroutine(), testenv.OpenFDs(t)
				steady := g == baseG && fd == baseFD
				baseG, baseFD = g, fd
				return steady
			})
			base = [2]int{baseG, baseFD}
		}
	}
	// Nothing leaks: once the clients are gone, goroutines and descriptors come back down.
	var g, fd int
	deadline := time.Now().Add(10 * time.Second)
	for {
		quiet()
		g, fd = runtime.NumGoroutine(), testenv.OpenFDs(t)
		if g <= base[0] && fd <= base[1] {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after 10 s: %d goroutines, %d fds; baseline %d, %d\n%s", g, fd, base[0], base[1], buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("baseline %d goroutines, %d fds; after two more rounds: %d, %d", base[0], base[1], g, fd)
}

// badInputRound is one round of bad input; do sends a request for the service and returns the
// status and body.
func badInputRound(t *testing.T, tp *testProxy, do func(method, path string) (int, string)) {
	t.Helper()
	addr := strings.TrimPrefix(tp.url, "http://")
	get := func(path string) (int, string) { t.Helper(); return do(http.MethodGet, path) }
	if code, body := get("/warm"); code != http.StatusOK || body != "path /warm" {
		t.Fatalf("first request: %d %q", code, body)
	}

	// Slowloris: a client that starts its headers and stalls is cut after ReadHeaderTimeout,
	// and others are served meanwhile.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "GET /slow HTTP/1.1\r\nHost: dps\r\nX-Slow: ")
	if code, body := get("/meanwhile"); code != http.StatusOK || body != "path /meanwhile" {
		t.Fatalf("served while a slow client stalls: %d %q", code, body)
	}
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(slow) // until the proxy closes it
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the proxy kept a client that never finished its headers for 10 s (read %q)", rest)
	}
	if len(rest) > 0 && !strings.HasPrefix(string(rest), "HTTP/1.1 408") {
		t.Fatalf("slow client got %q: want nothing or 408", rest)
	}

	// Oversized headers: 431 from the server, and the connection is not reused.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2<<20)
	go fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: dps\r\nX-Big: %s\r\n\r\n", big) // the proxy may stop reading mid-way
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("oversized headers: %v", err)
	}
	resp.Body.Close()
	c.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversized headers: %d, want 431", resp.StatusCode)
	}

	// An instance that resets the connection: 502 naming the instance and what happened (a
	// POST, which may have reached the instance, is not retried elsewhere).
	code, body := do(http.MethodPost, "/reset")
	if code != http.StatusBadGateway || !strings.Contains(body, `"error"`) || !strings.Contains(body, "connection reset") || !strings.Contains(body, "dps") {
		t.Fatalf("upstream reset: %d %q, want 502 with a JSON error naming the service and instance", code, body)
	}
	if code, body := get("/after-reset"); code != http.StatusOK || body != "path /after-reset" {
		t.Fatalf("after a reset: %d %q", code, body)
	}

	// Pipelining: three requests written at once are answered in order.
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var reqs strings.Builder
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&reqs, "GET /p%d HTTP/1.1\r\nHost: x\r\n%s: dps\r\n\r\n", i, http1.ServiceHeader)
	}
	if _, err := io.WriteString(c, reqs.String()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := 1; i <= 3; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("pipelined response %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != fmt.Sprintf("path /p%d", i) {
			t.Fatalf("pipelined response %d: %d %q", i, resp.StatusCode, b)
		}
	}
	c.Close()

	slow.Close()
}

// TestProxyRequestForms: an HTTP/1.0 client naming the service by header only (no Host), the
// absolute form, a chunked body and Expect: 100-continue all reach the instance as they should:
// an origin-form request line, a Host, the whole body.
func TestProxyRequestForms(t *testing.T) {
	type seen struct{ host, uri, body string }
	got := make(chan seen, 4)
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.RequestURI, string(b)}
		io.WriteString(w, "ok")
	})
	tp := startProxy(t, testConfig(newTestSource(inst("a", "dps", up.URL))))
	addr := strings.TrimPrefix(tp.url, "http://")
	send := func(head, body string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, head)
		br := bufio.NewReader(c)
		if strings.Contains(head, "Expect: 100-continue") {
			// The body goes only after the interim answer.
			line, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
				t.Fatalf("want 100 Continue first, got %q, %v", line, err)
			}
			br.ReadString('\n') // the blank line ending it
		}
		io.WriteString(c, body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", head, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("%q: %d %q", head, resp.StatusCode, b)
		}
	}
	send("GET /ten?x=1 HTTP/1.0\r\n"+http1.ServiceHeader+": dps\r\n\r\n", "")
	if s := <-got; s.uri != "/ten?x=1" || s.host != strings.TrimPrefix(up.URL, "http://") {
		t.Errorf("HTTP/1.0 without Host: instance saw %+v", s)
	}
	send("GET http://dps.example/abs?y=2 HTTP/1.1\r\nHost: dps.example\r\nConnection: close\r\n\r\n", "")
	if s := <-got; s.uri != "/abs?y=2" || s.host != "dps.example" {
		t.Errorf("absolute form: instance saw %+v", s)
	}
	send("POST /c HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
	if s := <-got; s.body != "hello world" {
		t.Errorf("chunked body: instance saw %+v", s)
	}
	send("PUT /e HTTP/1.1\r\nHost: dps\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n", "data")
	if s := <-got; s.body != "data" {
		t.Errorf("Expect: 100-continue: instance saw %+v", s)
	}
}

// TestProxyConnectRefused: CONNECT is answered 405 and the connection closed, on the loop
// (an origin-form target) and on net/http's server (authority form), never forwarded.
func TestProxyConnectRefused(t *testing.T) {
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the instance got a %s %s", r.Method, r.RequestURI)
	})
	tp := oneService(t, up.URL, nil)
	for _, target := range []string{"/x", "dps:443"} {
		cl := dialRaw(t, tp)
		resp, body := cl.roundTrip("CONNECT "+target+" HTTP/1.1\r\nHost: dps\r\n\r\n", http.MethodGet)
		if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(body, "CONNECT is not served") || !cl.closed() {
			t.Fatalf("CONNECT %s: %d %q", target, resp.StatusCode, body)
		}
	}
}
