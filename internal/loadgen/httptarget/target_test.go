package httptarget

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/testenv"
)

func startServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closedPort returns a loopback address nothing listens on (and no other test is given).
func closedPort(t *testing.T) string { return testenv.FreeAddr(t) }

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
	cfg := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{Name: "edge", URL: srv.URL + "/"}}}
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
	cfg := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{Name: "dead", URL: "http://" + closedPort(t) + "/"}}}
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
	good := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{Name: "a", URL: "http://x/"}}}
	tests := []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"ok", func(*Config) {}, true},
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, false},
		{"bad url", func(c *Config) { c.Endpoints = []Endpoint{{Name: "a", URL: "x"}} }, false},
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

// A target sends the Host and service headers it was given and reports the instance header.
func TestTargetHeadersAndInstance(t *testing.T) {
	srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(InstanceHeader, r.Host+"/"+r.Header.Get(ServiceHeader))
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	tests := []struct {
		path string
		opts RequestOptions
		want string
		fail bool
	}{
		{"/", RequestOptions{Host: "dps.local", Service: "dps"}, "dps.local/dps", false},
		{"/", RequestOptions{}, srv.Listener.Addr().String() + "/", false},
		{"/fail", RequestOptions{Service: "x"}, srv.Listener.Addr().String() + "/x", true},
		{"/", RequestOptions{InstanceHeader: "X-Other"}, "", false},
	}
	for _, tt := range tests {
		tg, err := NewTargetWith(http.MethodGet, srv.URL+tt.path, nil, time.Second, 2, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tg.DoInstance(context.Background())
		tg.Close()
		if got != tt.want || (err != nil) != tt.fail {
			t.Errorf("%+v: instance %q err %v, want %q fail=%v", tt.opts, got, err, tt.want, tt.fail)
		}
	}
}

// Behind a proxy, the run counts requests per instance and writes instances.csv.
func TestRunCountsInstances(t *testing.T) {
	var n atomic.Int64
	srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ServiceHeader) != "dps" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set(InstanceHeader, []string{"s1", "s2"}[n.Add(1)%2])
	})
	cfg := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{Name: "dps", URL: srv.URL + "/", Service: "dps"}}}
	cfg.Load.Rate = 100
	cfg.Load.Duration = time.Second
	cfg.Load.QoSLatency = time.Second
	cfg.Load.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["dps"]
	if s.OK != 100 || s.Instances["s1"].Requests != 50 || s.Instances["s2"].Requests != 50 {
		t.Errorf("ok=%d instances=%+v, want 50 per instance", s.OK, s.Instances)
	}
	if s.QoS == nil || s.QoS.WithinPct != 100 {
		t.Errorf("qos = %+v, want 100%% within 1s", s.QoS)
	}
	if _, err := os.Stat(filepath.Join(cfg.Load.OutDir, "instances.csv")); err != nil {
		t.Errorf("instances.csv: %v", err)
	}
}

func TestConfigValidateHeaders(t *testing.T) {
	base := Config{Load: loadgen.DefaultConfig(), Endpoints: []Endpoint{{Name: "a", URL: "http://x/"}}}
	for _, tt := range []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"service", func(c *Config) { c.Endpoints[0].Service = "dps" }, true},
		{"host", func(c *Config) { c.Endpoints[0].Host = "dps.svc:8080" }, true},
		{"service with space", func(c *Config) { c.Endpoints[0].Service = "d ps" }, false},
		{"host with newline", func(c *Config) { c.Endpoints[0].Host = "a\nb" }, false},
		{"bad instance header", func(c *Config) { c.InstanceHeader = "X Bad" }, false},
	} {
		c := base
		c.Endpoints = append([]Endpoint(nil), base.Endpoints...)
		tt.mutate(&c)
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v", tt.name, err)
		}
	}
}

func TestApplyPerTarget(t *testing.T) {
	eps := []Endpoint{{Name: "a"}, {Name: "b"}}
	set := func(e *Endpoint, v string) { e.Service = v }
	if err := ApplyPerTarget(eps, "--service", []string{"dps", "b=other"}, set); err != nil {
		t.Fatal(err)
	}
	if eps[0].Service != "dps" || eps[1].Service != "other" {
		t.Errorf("endpoints %+v", eps)
	}
	if err := ApplyPerTarget(eps, "--service", []string{"c=x"}, set); err == nil || !strings.Contains(err.Error(), "targets: a, b") {
		t.Errorf("unknown target: %v", err)
	}
}

// With NewConnections every request opens a connection of its own (a balancer that picks per
// connection then picks per request); without it, sequential requests share one.
func TestNewConnectionsPerRequest(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		target, err := NewTargetWith(http.MethodGet, srv.URL, nil, 5*time.Second, 4, RequestOptions{NewConnections: fresh})
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if err := target.Do(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		target.Close()
		srv.Close()
		want := int64(1)
		if fresh {
			want = 5
		}
		if got := conns.Load(); got != want {
			t.Errorf("NewConnections %v: %d connections for 5 requests, want %d", fresh, got, want)
		}
	}
}
