package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestUpstreamHostIsTheFunctionsNotTheClients: two url functions on one upstream server that
// routes by Host (name-based virtual hosts: nginx, a Kubernetes Ingress), the public one as
// http://127.0.0.1:P, the keyed one as http://localhost:P. The function's server gets the
// function URL's host as Host (the client's goes in X-Forwarded-Host, as on OpenFaaS), so a
// caller of the public function cannot choose which virtual host it reaches: once the client's
// Host was forwarded, and Host: localhost:P landed on the keyed function without its key.
func TestUpstreamHostIsTheFunctionsNotTheClients(t *testing.T) {
	var mu sync.Mutex
	var privateHits, pubSeen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		pubSeen = append(pubSeen, r.Host+" "+r.Header.Get("X-Forwarded-Host"))
		mu.Unlock()
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
	if want := "127.0.0.1:" + u.Port() + " localhost:" + u.Port(); len(pubSeen) != 1 || pubSeen[0] != want {
		t.Fatalf("upstream saw Host and X-Forwarded-Host %q, want one request with %q", pubSeen, want)
	}
}

// TestRequestsAfterCloseBeganGet503: Close's doc (and docs/faas.md) say requests that arrive
// once Close has begun get 503 at once, even while ready instances remain (Close removes them
// only after waiting for the drains under way, up to the whole shutdown grace). pick once
// handed out a ready instance without looking at closing, so new calls were still forwarded.
func TestRequestsAfterCloseBeganGet503(t *testing.T) {
	p := newRecProvider(t)
	fn := recFunction("fn", 2)
	fn.ExecTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{fn}, Provider: p, Tick: time.Hour,
		ShutdownGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	released := false
	release := func() {
		if !released {
			released = true
			close(p.hold)
		}
	}
	defer release()
	for i := 0; i < 2; i++ { // one stuck call on each instance
		go func() {
			if resp, err := http.Get(srv.URL + "/function/fn/hold"); err == nil {
				resp.Body.Close()
			}
		}()
	}
	testenv.Eventually(t, 30*time.Second, "two calls under way", func() bool { return g.Status()[0].Inflight == 2 })
	if err := g.Scale("fn", 1, "test"); err != nil { // one instance drains, stuck on its call
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "one instance draining", func() bool { return g.Status()[0].Draining == 1 })
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	<-gateway.ClosingOf(g) // Close has begun: it waits for the drain
	select {
	case <-closed:
		t.Fatal("Close returned before the grace: the set-up did not hold")
	default:
	}
	code, body := rawGet(t, srv.URL, "/function/fn/x")
	release()
	<-closed
	if code != http.StatusServiceUnavailable {
		t.Fatalf("a call arriving after Close began got %d %q, want 503 at once", code, body)
	}
}
