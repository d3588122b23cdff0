package compat

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestClientURLHTTP: etcd serves /health and /metrics over HTTP/1.1 on its client URL beside
// gRPC; kv does the same, with the same /health answer and the same metric names for what both
// count (scrape configs and probes written for etcd work unchanged).
func TestClientURLHTTP(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		c := s.client(t)
		if _, err := c.Put(testCtx(t, 10*time.Second), "k", "v"); err != nil {
			t.Fatal(err)
		}
		get := func(path string) (int, string, string) {
			t.Helper()
			resp, err := http.Get("http://" + s.endpoint + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
		}
		// etcd's exact answer: no newline, no Content-Type of its own.
		if code, ct, body := get("/health"); code != http.StatusOK || body != `{"health":"true","reason":""}` || ct != "text/plain; charset=utf-8" {
			t.Errorf("GET /health = %d %q %q, want etcd's 200 %q %q", code, ct, body, "text/plain; charset=utf-8", `{"health":"true","reason":""}`)
		}
		code, ct, body := get("/metrics")
		if code != http.StatusOK || !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET /metrics = %d %q", code, ct)
		}
		for _, m := range []string{"etcd_debugging_mvcc_current_revision 2", "grpc_server_handled_total{"} {
			if !strings.Contains(body, m) {
				t.Errorf("/metrics lacks %q", m)
			}
		}
		// gRPC still answers on the port after the HTTP requests.
		if r, err := c.Get(testCtx(t, 10*time.Second), "k"); err != nil || len(r.Kvs) != 1 {
			t.Fatalf("gRPC after HTTP: %v %v", r, err)
		}
	})
}
