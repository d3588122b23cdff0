package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// TestAttackHostHeaderPicksUpstreamVhost: two url functions on one upstream server that routes
// by Host (name-based virtual hosts: nginx, a Kubernetes Ingress), the public one as
// http://127.0.0.1:P, the keyed one as http://localhost:P. The gateway forwards the client's
// Host header (pr.Out.Host = pr.In.Host), so a caller of the public function without the key
// chooses which virtual host it reaches: Host: localhost:P lands on the keyed function.
func TestAttackHostHeaderPicksUpstreamVhost(t *testing.T) {
	var mu sync.Mutex
	var privateHits []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "localhost:") {
			mu.Lock()
			privateHits = append(privateHits, r.Host+r.URL.Path+" auth="+r.Header.Get("Authorization"))
			mu.Unlock()
			_, _ = w.Write([]byte("private answered"))
			return
		}
		_, _ = w.Write([]byte("pub answered"))
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gw := authGateway(t,
		&gateway.Function{Name: "pub", URL: "http://127.0.0.1:" + u.Port()},
		&gateway.Function{Name: "private", URL: "http://localhost:" + u.Port(), KeyFile: keyFile})
	if code, body := rawGet(t, gw, "/function/private/x"); code != http.StatusUnauthorized {
		t.Fatalf("private without its key: %d %q, want 401", code, body)
	}
	req, _ := http.NewRequest("GET", gw+"/function/pub/admin", nil)
	req.Host = "localhost:" + u.Port()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(privateHits) > 0 {
		t.Fatalf("a keyless caller of pub reached the keyed function's virtual host by choosing Host: %q", privateHits)
	}
}
