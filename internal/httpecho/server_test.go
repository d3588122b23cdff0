package httpecho

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestServer(t *testing.T, st Settings) (*Server, *httptest.Server) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Name = "node-a"
	cfg.Settings = st
	cfg.Logger = quietLogger()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEcho(t *testing.T) {
	_, hs := newTestServer(t, Settings{})
	tests := []struct {
		name, method, path, body string
		code                     int
		want                     string
	}{
		{"get", "GET", "/", "", 200, "echo from node-a: received 0 bytes\n"},
		{"post body", "POST", "/anything", "hello", 200, "echo from node-a: received 5 bytes\n"},
		{"healthz", "GET", "/healthz", "", 200, "ok\n"},
		{"config", "GET", "/admin/config", "", 200, `{"delay":"0s","cpu_work":"0s","response_size":0}` + "\n"},
		{"config post", "POST", "/admin/config", "{}", 405, "method not allowed (allowed: GET, PUT)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, tt.method, hs.URL+tt.path, tt.body)
			if code != tt.code || body != tt.want {
				t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, code, body, tt.code, tt.want)
			}
		})
	}
}

func TestResponseSize(t *testing.T) {
	for _, size := range []int{1, 10, 100, 100000} {
		_, hs := newTestServer(t, Settings{ResponseSize: size})
		code, body := do(t, "GET", hs.URL+"/", "")
		if code != 200 || len(body) != size {
			t.Errorf("response_size %d: got %d bytes (status %d)", size, len(body), code)
		}
	}
}

func timeRequest(t *testing.T, url string) time.Duration {
	t.Helper()
	start := time.Now()
	if code, _ := do(t, "GET", url, ""); code != 200 {
		t.Fatalf("status %d", code)
	}
	return time.Since(start)
}

func TestDelayChangeAtRunTime(t *testing.T) {
	s, hs := newTestServer(t, Settings{})
	if d := timeRequest(t, hs.URL+"/"); d > 100*time.Millisecond {
		t.Fatalf("no delay configured but request took %v", d)
	}
	code, body := do(t, "PUT", hs.URL+"/admin/config", `{"delay":"150ms"}`)
	if code != 200 || !strings.Contains(body, `"delay":"150ms"`) {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if got := s.Settings().Delay; got != 150*time.Millisecond {
		t.Fatalf("delay %v after PUT", got)
	}
	if d := timeRequest(t, hs.URL+"/"); d < 150*time.Millisecond {
		t.Errorf("request took %v, want >= 150ms after the change", d)
	}
	// Partial update keeps the other fields.
	do(t, "PUT", hs.URL+"/admin/config", `{"response_size":64}`)
	if st := s.Settings(); st.Delay != 150*time.Millisecond || st.ResponseSize != 64 {
		t.Errorf("settings %+v after partial PUT", st)
	}
}

func TestAdminConfigBadInput(t *testing.T) {
	s, hs := newTestServer(t, Settings{Delay: 5 * time.Millisecond})
	tests := []struct {
		body, want string
	}{
		{`{"delay":20}`, "delay: want a duration string"},
		{`{"delay":"fast"}`, `delay "fast": want a duration`},
		{`{"delay":"-1s"}`, "delay -1s: must be between"},
		{`{"cpu_work":"2h"}`, "cpu_work 2h0m0s: must be between"},
		{`{"response_size":-1}`, "response_size -1: must be between"},
		{`{"response_size":"1k"}`, "response_size: want a whole number"},
		{`{"dealy":"1s"}`, `unknown field "dealy" (allowed: cpu_work, delay, response_size)`},
		{`[1]`, "body: want a JSON object"},
		{`{"delay":"1s"} x`, "body: trailing data"},
		{``, "body: want a JSON object"},
	}
	for _, tt := range tests {
		code, body := do(t, "PUT", hs.URL+"/admin/config", tt.body)
		if code != 400 || !strings.Contains(body, tt.want) {
			t.Errorf("PUT %s: %d %q, want 400 containing %q", tt.body, code, body, tt.want)
		}
	}
	if st := s.Settings(); st.Delay != 5*time.Millisecond {
		t.Errorf("a rejected PUT changed the settings: %+v", st)
	}
}

func TestCPUWork(t *testing.T) {
	clock, ok := threadCPU()
	if !ok {
		t.Skip("no thread CPU clock")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := clock()
	burnCPU(30 * time.Millisecond)
	if used := clock() - start; used < 30*time.Millisecond {
		t.Errorf("burnt %v of CPU, want >= 30ms", used)
	}
}

// Shutdown stops accepting but lets a request in its delay finish, and leaks no goroutines.
func TestGracefulShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Settings.Delay = 300 * time.Millisecond
	cfg.Logger = quietLogger()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/"
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	type result struct {
		code int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := client.Get(url)
		if err != nil {
			res <- result{0, err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res <- result{resp.StatusCode, nil}
	}()
	testenv.Eventually(t, 30*time.Second, "one active connection", func() bool { return s.active.Load() == 1 })
	cancel()
	r := <-res
	if r.err != nil || r.code != 200 {
		t.Errorf("in-flight request: %d %v, want 200", r.code, r.err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := client.Get(url); err == nil {
		t.Error("server still accepts after shutdown")
	}
	tr.CloseIdleConnections()
	testenv.Eventually(t, 30*time.Second, "the server goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg Config
		ok  bool
	}{
		{DefaultConfig(), true},
		{Config{Listen: "8080"}, false},
		{Config{Listen: ":80", Settings: Settings{Delay: -time.Second}}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v", tt.cfg, err)
		}
	}
	if err := Run(context.Background(), Config{Listen: "bad"}); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Run with bad listen: %v", err)
	}
}
