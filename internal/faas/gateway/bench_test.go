package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// BenchmarkProxy: one request through the gateway to a trivial upstream (the gateway's own
// per-request cost; `continuum bench faas` measures it as a process on one core).
func BenchmarkProxy(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer up.Close()
	g, err := gateway.New(context.Background(), gateway.Config{Functions: []*gateway.Function{{Name: "echo", URL: up.URL}}})
	if err == nil {
		defer g.Close()
	} else {
		b.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	b.RunParallel(func(pb *testing.PB) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		for pb.Next() {
			resp, err := c.Get(srv.URL + "/function/echo")
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
