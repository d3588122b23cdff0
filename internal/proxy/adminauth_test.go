package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/testenv"
)

// An admin address other machines can reach is refused without a token, with a message that
// says why and both ways out; loopback, "-" and any address with a token are accepted.
func TestAdminPublicBindNeedsToken(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{":9090", "", false}, {"0.0.0.0:9090", "", false}, {"[::]:9090", "", false},
		{"10.0.0.7:9090", "", false}, {"worker3:9090", "", false},
		{"127.0.0.1:9090", "", true}, {"127.0.0.2:9090", "", true}, {"[::1]:9090", "", true},
		{"localhost:9090", "", true}, {"-", "", true},
		{":9090", "/etc/continuum/admin-token", true}, {"10.0.0.7:9090", "/t", true},
	} {
		cfg := testConfig(newTestSource())
		cfg.AdminListen, cfg.AdminTokenFile = c.addr, c.token
		err := cfg.Validate()
		if c.ok != (err == nil) {
			t.Errorf("admin_listen %q token %q: err = %v, want ok=%v", c.addr, c.token, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "admin_token_file (--admin-token-file)") ||
			!strings.Contains(err.Error(), "reachable from other machines") || !strings.Contains(err.Error(), config.DefaultAdminListen)) {
			t.Errorf("admin_listen %q: error %q does not say why and what to do", c.addr, err)
		}
	}
	if config.DefaultConfig().AdminListen != "127.0.0.1:9090" {
		t.Errorf("default admin_listen %q: want loopback", config.DefaultConfig().AdminListen)
	}
	// Run refuses before it listens on anything: the data port stays free.
	cfg := testConfig(newTestSource())
	data := testenv.FreeAddr(t)
	cfg.Listen, cfg.AdminListen = data, ":0"
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "admin_token_file") {
		t.Fatalf("Run with a public admin bind and no token: %v", err)
	}
	ln, err := net.Listen("tcp", data)
	if err != nil {
		t.Fatalf("the data port was left bound after the refusal: %v", err)
	}
	ln.Close()
}

// The configuration file's admin_token_file is relative to the file.
func TestAdminTokenFileFromConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(path, []byte("admin_listen: \":9090\"\nadmin_token_file: token\ndiscovery:\n  - file: instances.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "instances.yaml"), []byte("instances: []\n"), 0o644)
	cfg, err := config.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminTokenFile != filepath.Join(dir, "token") || cfg.Validate() != nil {
		t.Errorf("admin_token_file = %q (validate: %v), want %s", cfg.AdminTokenFile, cfg.Validate(), filepath.Join(dir, "token"))
	}
	// The token file must exist and hold a token.
	cfg.Logger = quiet
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "admin_token_file") {
		t.Errorf("New with a missing token file: %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "token"), []byte("\n"), 0o600)
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("New with an empty token file: %v", err)
	}
}

func adminGet(t *testing.T, tp *testProxy, path, auth string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, tp.admin+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := tp.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// With a token, /metrics and /debug/pools need it (401 and a Bearer challenge otherwise);
// /healthz and /readyz answer probes without it, /readyz without the sources' details.
func TestAdminToken(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.AdminTokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(cfg.AdminTokenFile, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tp := startProxy(t, cfg)
	for _, path := range []string{"/metrics", "/debug/pools"} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer t0ken2", "Basic dDBrZW4=", "t0ken"} {
			code, h, body := adminGet(t, tp, path, auth)
			if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") || strings.Contains(body, "dps") {
				t.Errorf("GET %s with %q: %d %q (WWW-Authenticate %q), want 401 with a Bearer challenge and nothing else", path, auth, code, body, h.Get("WWW-Authenticate"))
			}
		}
		if code, _, body := adminGet(t, tp, path, "Bearer t0ken"); code != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s with the token: %d", path, code)
		}
	}
	if code, _, _ := adminGet(t, tp, "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without the token: %d, want 200", code)
	}
	code, _, body := adminGet(t, tp, "/readyz", "")
	var r map[string]any
	if err := json.Unmarshal([]byte(body), &r); code != http.StatusOK || err != nil || r["ready"] != true || r["sources"] != nil {
		t.Errorf("/readyz without the token: %d %q, want 200 {ready: true} without sources", code, body)
	}
	if _, _, body := adminGet(t, tp, "/readyz", "Bearer t0ken"); !strings.Contains(body, `"sources"`) {
		t.Errorf("/readyz with the token: %q, want the sources", body)
	}
}

// TestAdminBadInputKeepsServing: the admin listener cuts a client that never finishes its
// headers, answers oversized headers 431 and malformed or unknown paths and methods with a 4xx,
// keeps serving meanwhile, and leaves no goroutine or descriptor behind.
func TestAdminBadInputKeepsServing(t *testing.T) {
	cfg := testConfig(newTestSource())
	cfg.ReadHeaderTimeout = testenv.HeaderTimeout
	cfg.AdminTokenFile = filepath.Join(t.TempDir(), "token")
	_ = os.WriteFile(cfg.AdminTokenFile, []byte("t0ken"), 0o600)
	tp := startProxy(t, cfg)
	addr := strings.TrimPrefix(tp.admin, "http://")
	raw := func(req string) (int, string) { t.Helper(); return testenv.RawHTTP(t, addr, req) }
	round := func() {
		testenv.SlowHeaders(t, addr, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ", "the admin server", func() {
			if code, _, _ := adminGet(t, tp, "/healthz", ""); code != http.StatusOK {
				t.Fatalf("served while a slow client stalls: %d", code)
			}
		})
		for _, c := range []struct {
			req  string
			want int
		}{
			{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("x", 2<<20) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
			{"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound},
			{"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			// A path with dot segments is redirected to its clean form (which then answers 404
			// or asks for the token): never served as another path.
			{"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusTemporaryRedirect},
			{"GET debug/pools HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			{"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", http.StatusMethodNotAllowed},
			{"DELETE /debug/pools HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusMethodNotAllowed},
			{"GET /debug/pools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + strings.Repeat("t", 100000) + "\r\n\r\n", http.StatusUnauthorized},
			{"GET /metrics HTTP/1.1\r\n\r\n", http.StatusBadRequest}, // no Host
			{"GARBAGE\r\n\r\n", http.StatusBadRequest},
		} {
			if code, body := raw(c.req); code != c.want {
				t.Errorf("%.60q: %d %q, want %d", c.req, code, body, c.want)
			}
		}
		if code, _, _ := adminGet(t, tp, "/metrics", "Bearer t0ken"); code != http.StatusOK {
			t.Fatalf("after bad input: /metrics %d", code)
		}
	}
	testenv.NoLeaks(t, 10*time.Second, tp.client.CloseIdleConnections, round)
}

// FuzzAdminRequest: whatever request the HTTP parser lets through, the admin handler answers
// with a valid status without panicking, and without the token it never shows the metrics, the
// pools or the sources (the instance's URL appears in none of its answers).
func FuzzAdminRequest(f *testing.F) {
	for _, s := range []string{
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /debug/pools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n",
		"GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: bearer  t0ken \r\n\r\n",
		"GET /healthz HTTP/1.0\r\n\r\n",
		"GET /debug/../debug/pools HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	cfg := testConfig(newTestSource(inst("a", "dps", "http://198.51.100.7:8080")))
	cfg.AdminTokenFile = filepath.Join(f.TempDir(), "token")
	if err := os.WriteFile(cfg.AdminTokenFile, []byte("t0ken"), 0o600); err != nil {
		f.Fatal(err)
	}
	p, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	h := p.adminHandler()
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(raw))))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		if hasToken(req, "t0ken") {
			return
		}
		body := rec.Body.String()
		if strings.Contains(body, "198.51.100.7") || strings.Contains(body, "continuum_proxy") || strings.Contains(body, `"sources"`) {
			t.Fatalf("%q without the token got %d %q", raw, rec.Code, body)
		}
	})
}
