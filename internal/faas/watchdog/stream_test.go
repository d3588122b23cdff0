package watchdog_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/testenv"
)

// chunked is a body of n bytes whose length the client does not know in advance, so it travels
// chunked (the watchdog cannot refuse it by its Content-Length).
func chunked(n int) io.Reader { return io.MultiReader(strings.NewReader(strings.Repeat("x", n))) }

// TestOversizedChunkedBody: a chunked body over the limit is answered 413 in both modes, and the
// handler never runs on the part of it that was read (issue 30, defect 3: http mode answered 502
// and its upstream had received a cut body).
func TestOversizedChunkedBody(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	h := writeHandler(t, "def handle(event, context):\n"+
		"    with open("+strconv.Quote(marker)+", 'a') as f:\n        f.write('%d\\n' % len(event.body))\n"+
		"    return {'body': 'got %d' % len(event.body)}\n")
	for _, mode := range []string{watchdog.ModeClassic, watchdog.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			srv := start(t, mode, h, func(c *watchdog.Config) { c.MaxBody = 1000 })
			// Under the limit: served (the handler runs once).
			resp, err := http.Post(srv.URL+"/", "text/plain", chunked(999))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "got 999" {
				t.Fatalf("999 bytes chunked: %d %s", resp.StatusCode, b)
			}
			_ = os.Remove(marker)
			resp, err = http.Post(srv.URL+"/", "text/plain", chunked(50_000))
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("50000 bytes chunked with a limit of 1000: %d %s, want 413", resp.StatusCode, b)
			}
			// Still serving; and the handler never saw the oversized body.
			resp, err = http.Post(srv.URL+"/", "text/plain", strings.NewReader("ok"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "got 2" {
				t.Fatalf("after the 413: %d %s", resp.StatusCode, b)
			}
			ran, _ := os.ReadFile(marker)
			if strings.TrimSpace(string(ran)) != "2" {
				t.Errorf("the handler ran with body lengths %q; want only the 2-byte request after the 413", ran)
			}
		})
	}
}

// streamingUpstream is an http-mode upstream (a Python process) that answers /stream with one
// event, flushed, then waits for the file release to exist before the second event: a proxy that
// does not flush holds the first event back until the second, so the client cannot see it first.
const streamingUpstream = `import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

release = sys.argv[2]

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        def chunk(s):
            b = s.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()
        chunk("data: first\n\n")
        deadline = time.time() + 60
        while not os.path.exists(release) and time.time() < deadline:
            time.sleep(0.01)
        chunk("data: second\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
    def log_message(self, *a):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`

// TestStreamingThroughWatchdog: an http-mode function's streamed response reaches the client
// event by event (issue 30, defect 4: the first event came with the last).
func TestStreamingThroughWatchdog(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "stream.py")
	if err := os.WriteFile(script, []byte(streamingUpstream), 0o644); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(dir, "release")
	p := python(t)
	addr := testenv.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	w, err := watchdog.New(t.Context(), watchdog.Config{Mode: watchdog.ModeHTTP, UpstreamAddr: addr, Env: p.Env(),
		Process: []string{p.Interpreter, script, port, release}, ExecTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(func() { srv.Close(); w.Close() })
	defer func() { _ = os.WriteFile(release, nil, 0o644) }()
	if line := testenv.FirstLineWithin(t, srv.URL+"/stream", "data:", 20*time.Second); line != "data: first" {
		t.Fatalf("first line %q", line)
	}
}
