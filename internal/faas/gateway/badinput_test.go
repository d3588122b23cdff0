package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestGatewayBadInputKeepsServing serves the gateway with its own server settings (NewServer)
// and sends what misbehaving clients send: a header that never ends, a header over the limit,
// malformed request lines and paths, paths that try to reach /system/ around the check. Each
// gets a clear 4xx or is cut, functions are served meanwhile, and goroutines and descriptors come
// back to where they were.
func TestGatewayBadInputKeepsServing(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte(r.URL.Path+" "), b...))
	}))
	t.Cleanup(up.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{{Name: "fn", URL: up.URL}}, Tick: time.Hour,
		Auth: &gateway.Credentials{User: "admin", Password: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := gateway.NewServer(g.Handler())
	if srv.ReadHeaderTimeout <= 0 || srv.MaxHeaderBytes != gateway.MaxHeaderBytes || srv.IdleTimeout <= 0 {
		t.Fatalf("NewServer: header timeout %v, max header %d, idle %v: want all set", srv.ReadHeaderTimeout, srv.MaxHeaderBytes, srv.IdleTimeout)
	}
	srv.ReadHeaderTimeout = testenv.HeaderTimeout // the test's slow client is cut sooner
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); g.Close() })
	addr := ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	invoke := func(body string) {
		t.Helper()
		resp, err := client.Post("http://"+addr+"/function/fn/x", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "/x "+body {
			t.Fatalf("invoke %q: %d %q", body, resp.StatusCode, b)
		}
	}
	raw := func(req string) (int, string) { t.Helper(); return testenv.RawHTTP(t, addr, req) }
	round := func() {
		testenv.SlowHeaders(t, addr, "GET /system/functions HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ", "the gateway", func() {
			invoke("meanwhile")
			// The bad input goes in while the slow client stalls: a round waits for its cut once.
			for _, c := range []struct {
				req  string
				want int
			}{
				{"GET /function/fn HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("x", 2<<20) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
				{"GET /function/nope HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
				{"GET /function/ HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
				{"GET /function/%zz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
				{"GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
				{"GET /system/functions HTTP/1.1\r\nHost: x\r\nAuthorization: Basic !!notbase64\r\n\r\n", http.StatusUnauthorized},
				{"GET /system/functions HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + strings.Repeat("A", 100000) + "\r\n\r\n", http.StatusUnauthorized},
				{"GET /SYSTEM/functions HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
				{"GET /system%2ffunctions HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
				// Dot segments are redirected to the clean path, which then asks for credentials.
				{"GET /function/fn/../../system/functions HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusTemporaryRedirect},
				{"POST /system/scale-function/fn HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{", http.StatusUnauthorized},
				{"GET / HTTP/9.9\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported},
				{"GET /healthz HTTP/1.1\r\n\r\n", http.StatusBadRequest}, // no Host
				{"\x00\x01\x02\r\n\r\n", http.StatusBadRequest},
			} {
				code, body := raw(c.req)
				if code != c.want {
					t.Errorf("%.70q: %d %q, want %d", c.req, code, body, c.want)
				}
				if strings.Contains(body, `"name":"fn"`) {
					t.Errorf("%.70q: the function list leaked: %q", c.req, body)
				}
			}
		})
		invoke("after")
	}
	testenv.NoLeaks(t, 20*time.Second, client.CloseIdleConnections, round)
}

// FuzzGatewayRequest: whatever request the HTTP parser lets through, the gateway answers with a
// valid status without panicking; a request without the right basic auth never gets the system
// API's answer (the function list, or a scale), and the gateway still answers /healthz after it.
func FuzzGatewayRequest(f *testing.F) {
	for _, s := range []string{
		"GET /system/functions HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /system/functions HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWRtaW46czNjcmV0\r\n\r\n",
		"POST /system/scale-function/zq-hidden HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n\r\n{\"replicas\":0}",
		"POST /function/zq-hidden/a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
		"GET /function/zq-hidden/../../system/functions HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /metrics HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	f.Cleanup(up.Close)
	g, err := gateway.New(context.Background(), gateway.Config{Functions: []*gateway.Function{{Name: "zq-hidden", URL: up.URL}},
		Tick: time.Hour, Auth: &gateway.Credentials{User: "admin", Password: "s3cret"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(g.Close)
	h := g.Handler()
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // the server would have answered 400 itself
		}
		req.RemoteAddr = "192.0.2.1:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		user, pass, ok := req.BasicAuth()
		authed := ok && user == "admin" && pass == "s3cret"
		if !authed && (strings.Contains(rec.Body.String(), `"name":"zq-hidden"`) || rec.Code == http.StatusAccepted) {
			t.Fatalf("%q without credentials got the system API's answer: %d %q", raw, rec.Code, rec.Body.String())
		}
		hr := httptest.NewRecorder()
		h.ServeHTTP(hr, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if hr.Code != http.StatusOK {
			t.Fatalf("/healthz after the request: %d", hr.Code)
		}
	})
}
