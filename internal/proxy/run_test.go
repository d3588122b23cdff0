package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/proxy/sources"
	"github.com/continuum-project/continuum/internal/testenv"
)

func TestProxyReadmitsRecoveredInstanceWithoutTraffic(t *testing.T) {
	live := upstreamServer(t, "live", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	flaky := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "flaky") })}
	go flaky.Serve(ln)
	tp := startProxy(t, testConfig(newTestSource(inst("flaky", "dps", "http://"+addr), inst("live", "dps", live.URL))))
	for range 2 {
		tp.do(t, http.MethodGet, "dps", "")
	}
	flaky.Close()
	for range 2 { // one of them goes to flaky, fails to connect, and is retried on live
		if resp, _ := tp.do(t, http.MethodGet, "dps", ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	in, _ := tp.pools(t).instance("dps", "flaky")
	if in.InPool {
		t.Fatalf("flaky still in the pool after failing: %+v", in)
	}
	served := in.Served
	// Recover on the same address; no client request is sent from here on.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	back := &http.Server{Handler: flaky.Handler}
	go back.Serve(ln2)
	t.Cleanup(func() { back.Close() })
	testenv.Eventually(t, 30*time.Second, "flaky back in the pool through background probes", func() bool {
		in, _ := tp.pools(t).instance("dps", "flaky")
		return in.InPool
	})
	if in, _ := tp.pools(t).instance("dps", "flaky"); in.Served != served {
		t.Fatalf("served %d -> %d: user traffic reached the instance while it was out", served, in.Served)
	}
}

func TestProxyMetricsAndDebugPools(t *testing.T) {
	a := upstreamServer(t, "a", nil)
	cfg := testConfig(newTestSource(inst("a", "dps", a.URL), discovery.Instance{ID: "b", Service: "dps", URL: a.URL, Ready: false}))
	tp := startProxy(t, cfg)
	for range 3 {
		tp.do(t, http.MethodGet, "dps", "")
	}
	tp.do(t, http.MethodGet, "nosuch", "")
	m := tp.metrics(t)
	for _, want := range []string{
		`continuum_proxy_requests_total{code="200",instance="a",service="dps"} 3`,
		`continuum_proxy_requests_total{code="404",instance="",service=""} 1`,
		`continuum_proxy_errors_total{service="",type="unknown_service"} 1`,
		`continuum_proxy_upstream_latency_seconds_count{instance="a",service="dps"} 3`,
		`continuum_proxy_request_duration_seconds_count{service="dps"} 3`,
		`continuum_proxy_pool_size{service="dps"} 1`,
		`continuum_proxy_pool_candidates{service="dps"} 1`,
		`continuum_proxy_pool_changes_total{change="join",instance="a",reason="",service="dps"} 1`,
		`continuum_proxy_probes_total{result="ok",service="dps"}`,
		`continuum_proxy_discovery_instances{source="test"} 2`,
		`continuum_proxy_info{node="test-node"`,
		`go_goroutines`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	v := tp.pools(t)
	if v.Node != "test-node" || !v.Ready || len(v.Sources) != 1 || !v.Sources[0].Delivered {
		t.Errorf("pools header: %+v", v)
	}
	ina, _ := v.instance("dps", "a")
	if !ina.InPool || ina.EstimateFrom != pool.EstFromTraffic || ina.Samples != 3 || ina.Served != 3 || ina.ProbeMs <= 0 {
		t.Errorf("instance a: %+v", ina)
	}
	inb, _ := v.instance("dps", "b")
	if inb.InPool || inb.Reason != pool.ReasonNotReady || inb.Why == "" {
		t.Errorf("instance b: %+v", inb)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := tp.client.Get(tp.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

func TestProxyFollowsDiscovery(t *testing.T) {
	a, b := upstreamServer(t, "a", nil), upstreamServer(t, "b", nil)
	src := newTestSource(inst("a", "dps", a.URL))
	tp := startProxy(t, testConfig(src))
	if resp, _ := tp.do(t, http.MethodGet, "dps", ""); resp.Header.Get(http1.InstanceHeader) != "a" {
		t.Fatalf("served by %q", resp.Header.Get(http1.InstanceHeader))
	}
	src.updates <- discovery.Snapshot{Instances: []discovery.Instance{inst("b", "dps", b.URL)}}
	testenv.Eventually(t, 30*time.Second, "b in the pool", func() bool { in, _ := tp.pools(t).instance("dps", "b"); return in.InPool })
	for range 4 {
		if resp, _ := tp.do(t, http.MethodGet, "dps", ""); resp.Header.Get(http1.InstanceHeader) != "b" {
			t.Fatalf("after the update, served by %q", resp.Header.Get(http1.InstanceHeader))
		}
	}
	// A service whose instances all went away is still known: 503, not 404.
	src.updates <- discovery.Snapshot{}
	testenv.Eventually(t, 30*time.Second, "empty pool", func() bool { _, ok := tp.pools(t).instance("dps", "b"); return !ok })
	if resp, _ := tp.do(t, http.MethodGet, "dps", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
}

func TestProxyBeforeDiscovery(t *testing.T) {
	src := &testSource{name: "slow", updates: make(chan discovery.Snapshot)}
	p, err := New(testConfig(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln, nil) }()
	defer func() {
		cancel()
		<-done
		checkNoGoroutines(t)
	}()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	req.Header.Set(http1.ServiceHeader, "dps")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("before discovery: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	rec := httptest.NewRecorder()
	p.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before discovery: %d", rec.Code)
	}
}

func TestProxyUnionOfSources(t *testing.T) {
	var got discovery.Snapshot
	u := sources.New([]discovery.Source{&testSource{name: "one"}, &testSource{name: "two"}}, quiet, nil,
		func(s discovery.Snapshot) { got = s }, nil)
	u.Update(1, discovery.Snapshot{Instances: []discovery.Instance{{ID: "x", URL: "http://two"}, {ID: "y"}},
		Nodes: map[string]discovery.NodeLoad{"n": {CPU: 0.2, Memory: 0.9}}})
	u.Update(0, discovery.Snapshot{Instances: []discovery.Instance{{ID: "x", URL: "http://one"}},
		Nodes: map[string]discovery.NodeLoad{"n": {CPU: 0.5, Memory: 0.1}}})
	if len(got.Instances) != 2 || got.Instances[0].URL != "http://one" {
		t.Errorf("instances: %+v (want x from the first source, and y)", got.Instances)
	}
	if got.Nodes["n"] != (discovery.NodeLoad{CPU: 0.5, Memory: 0.9}) {
		t.Errorf("nodes: %+v (want the highest of each)", got.Nodes)
	}
}

func TestProxyRunStopsOnCancel(t *testing.T) {
	cfg := testConfig(newTestSource())
	cfg.Listen, cfg.AdminListen = "127.0.0.1:0", "-"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	checkNoGoroutines(t)
	cfg.Listen = "nonsense"
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("bad listen: %v", err)
	}
}

// TestProxyConcurrentTrafficAndUpdates drives requests, discovery updates and /debug/pools
// reads at the same time; with -race it checks the shared state is synchronized.
func TestProxyConcurrentTrafficAndUpdates(t *testing.T) {
	a, b := upstreamServer(t, "a", nil), upstreamServer(t, "b", nil)
	src := newTestSource(inst("a", "dps", a.URL), inst("b", "dps", b.URL))
	tp := startProxy(t, testConfig(src))
	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodPost, tp.url+"/", strings.NewReader("x"))
				req.Header.Set(http1.ServiceHeader, "dps")
				resp, err := tp.client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	for i := range 30 {
		loads := map[string]discovery.NodeLoad{"node-a": {CPU: float64(i%3) * 0.5}}
		attrs := map[string]string{"round": fmt.Sprint(i)}
		ia, ib := inst("a", "dps", a.URL), inst("b", "dps", b.URL)
		ia.Attributes, ib.Attributes = attrs, attrs
		src.updates <- discovery.Snapshot{Instances: []discovery.Instance{ia, ib}, Nodes: loads}
		tp.pools(t)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
