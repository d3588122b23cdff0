package httptarget

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
)

func startServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestTargetErrorTypes(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
		case "/404":
			http.NotFound(w, r)
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/echo":
			n, _ := io.Copy(io.Discard, r.Body)
			if n != 100 {
				w.WriteHeader(http.StatusBadRequest)
			}
		}
	})
	tests := []struct {
		name, url string
		body      []byte
		want      string
	}{
		{"ok", srv.URL + "/", nil, ""},
		{"body", srv.URL + "/echo", make([]byte, 100), ""},
		{"5xx", srv.URL + "/500", nil, loadgen.ErrHTTP5xx},
		{"4xx", srv.URL + "/404", nil, loadgen.ErrHTTP4xx},
		{"timeout", srv.URL + "/slow", nil, loadgen.ErrTimeout},
		{"refused", "http://" + closedPort(t) + "/", nil, loadgen.ErrConnectionRefused},
		{"dns", "http://no-such-host.invalid/", nil, loadgen.ErrDNS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := NewTarget(http.MethodPost, tt.url, tt.body, time.Second, 4)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err = tg.Do(ctx)
			if got := loadgen.ClassifyError(err); got != tt.want {
				t.Errorf("error %v classified %q, want %q", err, got, tt.want)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		name string
		ok   bool
	}{
		{"edge=http://10.0.0.2:8080/", "edge", true},
		{"a=https://x/y?z=1", "a", true},
		{"noequals", "", false},
		{"=http://x/", "", false},
		{"a=ftp://x/", "", false},
		{"a=x:80", "", false},
	}
	for _, tt := range tests {
		name, _, err := ParseTarget(tt.in)
		if (err == nil) != tt.ok || (tt.ok && name != tt.name) {
			t.Errorf("ParseTarget(%q) = %q, %v", tt.in, name, err)
		}
	}
}

// The open-loop engine over real HTTP hits the requested rate.
func TestRunRateAccuracy(t *testing.T) {
	var hits atomic.Int64
	srv := startServer(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	cfg := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{"edge", srv.URL + "/"}}}
	cfg.Load.Rate = 200
	cfg.Load.Duration = 2 * time.Second
	cfg.Load.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["edge"]
	if s.Sent != 400 || s.OK != 400 || hits.Load() != 400 {
		t.Errorf("sent=%d ok=%d hits=%d, want 400", s.Sent, s.OK, hits.Load())
	}
	if s.ThroughputRPS < 190 || s.ThroughputRPS > 210 {
		t.Errorf("throughput %v, want ~200", s.ThroughputRPS)
	}
}

func TestRunRefused(t *testing.T) {
	cfg := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{"dead", "http://" + closedPort(t) + "/"}}}
	cfg.Load.Rate = 50
	cfg.Load.Duration = 200 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["dead"]
	if s.Sent != 10 || s.ErrorsByType[loadgen.ErrConnectionRefused] != 10 {
		t.Errorf("sent=%d errors=%v, want 10 connection_refused", s.Sent, s.ErrorsByType)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{"a", "http://x/"}}}
	tests := []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"ok", func(*Config) {}, true},
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, false},
		{"bad url", func(c *Config) { c.Endpoints = []Endpoint{{"a", "x"}} }, false},
		{"lower method", func(c *Config) { c.Method = "get" }, false},
		{"negative body", func(c *Config) { c.BodySize = -1 }, false},
		{"bad load", func(c *Config) { c.Load.Duration = 0 }, false},
	}
	for _, tt := range tests {
		c := good
		tt.mutate(&c)
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v", tt.name, err)
		}
	}
}
