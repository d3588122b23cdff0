package watchdog_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/testenv"
)

// catWatchdog is a classic-mode watchdog whose function is cat: the body comes back, with no
// Python in the way, so the test is about the watchdog's HTTP surface alone.
func catWatchdog(t testing.TB, tune func(*watchdog.Config)) *watchdog.Watchdog {
	t.Helper()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	cfg := watchdog.Config{Mode: watchdog.ModeClassic, Process: []string{cat}, ExecTimeout: 10 * time.Second,
		MaxBody: 1 << 10, Listen: "127.0.0.1:0"}
	if tune != nil {
		tune(&cfg)
	}
	w, err := watchdog.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWatchdogBadInputKeepsServing runs the watchdog's own server (Serve) and sends what
// misbehaving clients send: a header that never ends (slowloris), a header over the limit, a
// body over the limit with and without a Content-Length, malformed request lines and paths.
// Each gets a clear 4xx (or is cut), the function keeps answering meanwhile, and goroutines and
// descriptors come back to where they were.
func TestWatchdogBadInputKeepsServing(t *testing.T) {
	w := catWatchdog(t, func(c *watchdog.Config) { c.ReadHeaderTimeout = testenv.HeaderTimeout })
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx, func(a net.Addr) { addrc <- a }) }()
	var addr string
	select {
	case a := <-addrc:
		addr = a.String()
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	echo := func(body string) {
		t.Helper()
		resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != body {
			t.Fatalf("echo %q: %d %q", body, resp.StatusCode, b)
		}
	}
	raw := func(req string) (int, string) { t.Helper(); return testenv.RawHTTP(t, addr, req) }
	round := func() {
		testenv.SlowHeaders(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ", "the watchdog", func() {
			echo("meanwhile")
			// The bad input goes in while the slow client stalls: a round waits for its cut once.
			big := strings.Repeat("b", 2<<10)
			for _, c := range []struct {
				req  string
				want int
			}{
				{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("x", 2<<20) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
				{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + fmt.Sprint(len(big)) + "\r\n\r\n" + big, http.StatusRequestEntityTooLarge},
				{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + big + "\r\n0\r\n\r\n", http.StatusRequestEntityTooLarge},
				{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", http.StatusBadRequest},
				{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", http.StatusBadRequest},
				{"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
				{"GET nopath HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
				{"GET / HTTP/9.9\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported},
				{"GET / HTTP/1.1\r\n\r\n", http.StatusBadRequest}, // no Host
				{"\x00\x01\x02\r\n\r\n", http.StatusBadRequest},
			} {
				if code, body := raw(c.req); code != c.want {
					t.Errorf("%.60q: %d %q, want %d", c.req, code, body, c.want)
				}
			}
			// Odd but valid paths reach the function, which answers (cat: the body back).
			for _, p := range []string{"/a/../../b", "//x", "/%2e%2e/", "/_/healthz", "/" + strings.Repeat("p", 8000)} {
				if code, body := raw("POST " + p + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"); code >= 500 {
					t.Errorf("POST %.40s: %d %q, want no server error", p, code, body)
				}
			}
		})
		echo("after")
	}
	testenv.NoLeaks(t, 20*time.Second, client.CloseIdleConnections, round)
}

// FuzzWatchdogRequest: whatever request the HTTP parser lets through, the watchdog answers it
// with a valid status without panicking, /_/health stays 200 after it, and a body over the limit
// never reaches the function (cat would echo it back).
func FuzzWatchdogRequest(f *testing.F) {
	for _, s := range []string{
		"GET /_/health HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"POST /a?b=c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"GET /_/metrics HTTP/1.1\r\nHost: x\r\n\r\n",
		"DELETE //../x HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	w := catWatchdog(f, func(c *watchdog.Config) { c.MaxBody = 64 })
	f.Cleanup(w.Close)
	h := w.Handler()
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // the server would have answered 400 itself
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		if rec.Code == http.StatusOK && rec.Body.Len() > 64 && req.URL.Path != "/_/metrics" {
			t.Fatalf("a body over the limit reached the function: %d bytes back", rec.Body.Len())
		}
		hr := httptest.NewRecorder()
		h.ServeHTTP(hr, httptest.NewRequest(http.MethodGet, "/_/health", nil))
		if hr.Code != http.StatusOK {
			t.Fatalf("/_/health after the request: %d", hr.Code)
		}
	})
}
