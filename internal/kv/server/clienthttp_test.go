package server

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

	"github.com/continuum-project/continuum/internal/testenv"
)

// The client URL serves etcd's /health and /metrics over HTTP/1.1 on the same port as gRPC, as
// etcd does; gRPC clients are unaffected.
func TestClientURLServesHealthAndMetrics(t *testing.T) {
	s, cli := startKV(t)
	if _, err := cli.Put(ctxT(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	base := s.ClientURLs()[0]
	for path, want := range map[string]string{
		"/health":  `{"health":"true","reason":""}`,
		"/metrics": "etcd_debugging_mvcc_current_revision 2",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s%s = %d %.200q, want 200 with %q", base, path, resp.StatusCode, b, want)
		}
	}
	if resp, err := http.Get(base + "/nope"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	// gRPC after the HTTP requests, on the same port.
	if r, err := cli.Get(ctxT(t), "k"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("gRPC Get after HTTP: %v %v", r, err)
	}
}

// TestClientURLBadInputKeepsServing: a client that connects and sends nothing, one that sends
// half the HTTP/2 preface and stalls, one that dribbles an HTTP/1 header, oversized headers and
// malformed request lines neither block gRPC nor HTTP clients nor leak: once the server closes,
// no goroutine of it is left (TestMain checks), and while it runs the goroutine count comes back.
func TestClientURLBadInputKeepsServing(t *testing.T) {
	s, cli := startKV(t)
	addr := strings.TrimPrefix(s.ClientURLs()[0], "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	raw := func(req string) int {
		t.Helper()
		c := dial()
		defer c.Close()
		go io.WriteString(c, req)
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%.60q: %v", req, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	round := func() {
		silent := dial()
		defer silent.Close()
		halfH2 := dial()
		defer halfH2.Close()
		io.WriteString(halfH2, "PRI * HTTP/2.0\r\n")
		slow := dial()
		defer slow.Close()
		io.WriteString(slow, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		// Served meanwhile, on both protocols.
		if _, err := cli.Put(ctxT(t), "k", "v"); err != nil {
			t.Fatalf("gRPC while clients stall: %v", err)
		}
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP while clients stall: %v %v", resp, err)
		}
		resp.Body.Close()
		for _, c := range []struct {
			req  string
			want int
		}{
			{"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("x", 2<<20) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
			{"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			{"GET health HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			{"POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\nabc", http.StatusOK},
			{"GARBAGE\r\n\r\n", http.StatusBadRequest},
			{"PRX * HTTP/2.0\r\n\r\n", http.StatusHTTPVersionNotSupported}, // almost the preface: the HTTP server refuses it
		} {
			if got := raw(c.req); got != c.want {
				t.Errorf("%.60q: %d, want %d", c.req, got, c.want)
			}
		}
	}
	round()
	var base int
	testenv.Eventually(t, 20*time.Second, "a steady goroutine count", func() bool {
		g := runtime.NumGoroutine()
		steady := g == base
		base = g
		return steady
	})
	round()
	// The stalled connections of the round are closed by the test (deferred) and by the server
	// (header and sniff timeouts); what they held goes with them.
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("goroutines back to %d", base), func() bool {
		return runtime.NumGoroutine() <= base
	})
}
