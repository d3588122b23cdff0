package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/testenv"
)

// testSource delivers a first snapshot, then whatever the test sends.
type testSource struct {
	name    string
	first   *discovery.Snapshot // nil: deliver nothing until the first update
	updates chan discovery.Snapshot
}

func newTestSource(insts ...discovery.Instance) *testSource {
	return &testSource{name: "test", first: &discovery.Snapshot{Instances: insts}, updates: make(chan discovery.Snapshot)}
}

func (s *testSource) Name() string { return s.name }

func (s *testSource) Run(ctx context.Context, update func(discovery.Snapshot)) error {
	if s.first != nil {
		update(*s.first)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case snap := <-s.updates:
			update(snap)
		}
	}
}

func inst(id, service, rawURL string) discovery.Instance {
	return discovery.Instance{ID: id, Service: service, URL: rawURL, Node: "node-" + id, Ready: true}
}

// upstreamServer starts an instance that answers with its name unless h is given.
func upstreamServer(t *testing.T, name string, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s got %d bytes", name, len(b))
		}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closedURL is an http URL on a loopback port nothing listens on (and no other test is given).
func closedURL(t *testing.T) string { return "http://" + testenv.FreeAddr(t) }

type testProxy struct {
	p      *Proxy
	url    string // data plane, http://127.0.0.1:port
	admin  string
	client *http.Client
}

// testConfig is a proxy config with fast probes and short backoffs.
func testConfig(sources ...discovery.Source) config.Config {
	cfg := config.DefaultConfig()
	cfg.Node = "test-node"
	cfg.Sources = sources
	cfg.Logger = quiet
	d := &cfg.Defaults
	d.QoS.Latency = config.Dur(time.Second)
	d.Probe.Interval = config.Dur(50 * time.Millisecond)
	d.Probe.Timeout = config.Dur(time.Second)
	d.Cooldown = config.BackoffConfig{Base: config.Dur(50 * time.Millisecond), Max: config.Dur(200 * time.Millisecond)}
	return cfg
}

// startProxy serves cfg on loopback until the test ends, then checks that Serve returned and
// left no goroutine behind.
func startProxy(t testing.TB, cfg config.Config) *testProxy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln, adm) }()
	tp := &testProxy{p: p, url: "http://" + ln.Addr().String(), admin: "http://" + adm.Addr().String(),
		client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		tp.client.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after cancel")
		}
		checkNoGoroutines(t)
	})
	testenv.Eventually(t, 30*time.Second, "readiness", func() bool {
		resp, err := tp.client.Get(tp.admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return tp
}

// checkNoGoroutines fails if a goroutine of the proxy is still running.
func checkNoGoroutines(t testing.TB) {
	t.Helper()
	markers := []string{"proxy.(*service).maintain", "proxy.(*union).run", "proxy.(*Proxy).Serve",
		"proxy.(*service).defaultProbe", "proxy.(*upstream).RoundTrip", "proxy.(*handler).ServeHTTP", "proxy.(*clientConn).serve", "proxy.(*server).serve"}
	var stacks string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		leaked := false
		for _, m := range markers {
			leaked = leaked || strings.Contains(stacks, m)
		}
		if !leaked {
			return
		}
	}
	t.Errorf("goroutines left behind:\n%s", stacks)
}

// do sends a request for service (by header) and returns the response with its body read.
func (tp *testProxy) do(t *testing.T, method, service, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, tp.url+"/path?q=1", rd)
	if err != nil {
		t.Fatal(err)
	}
	if service != "" {
		req.Header.Set(http1.ServiceHeader, service)
	}
	resp, err := tp.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func (tp *testProxy) pools(t *testing.T) poolsView {
	t.Helper()
	resp, err := tp.client.Get(tp.admin + "/debug/pools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v poolsView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v poolsView) instance(service, id string) (pool.InstanceView, bool) {
	for _, s := range v.Services {
		if s.Name == service {
			for _, in := range s.Instances {
				if in.ID == id {
					return in, true
				}
			}
		}
	}
	return pool.InstanceView{}, false
}

func (tp *testProxy) metrics(t *testing.T) string {
	t.Helper()
	resp, err := tp.client.Get(tp.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// waitServing sends GET /warm on rc until the proxy answers 200: it has started serving. The
// connection stays open (and keep-alive) for the test's next request.
func (rc *rawClient) waitServing() {
	rc.t.Helper()
	testenv.Eventually(rc.t, 10*time.Second, "the proxy serves", func() bool {
		io.WriteString(rc.c, "GET /warm HTTP/1.1\r\nHost: dps\r\n\r\n")
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			rc.t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// serveManually runs the proxy for cfg like startProxy, but hands the cancel and the result
// of Serve to the test (for shutdown tests).
func serveManually(t *testing.T, cfg config.Config) (*testProxy, context.CancelFunc, chan error) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln, nil) }()
	tp := &testProxy{p: p, url: "http://" + ln.Addr().String()}
	warm := dialRaw(t, tp)
	warm.waitServing()
	warm.c.Close()
	return tp, cancel, served
}

// quiet is the logger of pools and proxies whose logs no test reads.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// qosServiceConfig is a qos service with the given latency limit and short cooldowns and
// probe interval (the pool package's tests have the same helper, qosConfig).
func qosServiceConfig(latency time.Duration) config.ServiceConfig {
	c := config.DefaultServiceConfig()
	c.QoS.Latency = config.Dur(latency)
	c.Cooldown = config.BackoffConfig{Base: config.Dur(time.Second), Max: config.Dur(8 * time.Second)}
	c.Probe.Interval = config.Dur(2 * time.Second)
	return c
}
