package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkProxyRequest is the request path in process (no network between client, proxy
// and upstream but loopback): what a request costs the proxy in CPU and allocations.
func BenchmarkProxyRequest(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	p.u.update(0, *cfg.Sources[0].(*testSource).first)
	p.rt.setReady()
	h := p.Handler()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(ServiceHeader, "dps")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
