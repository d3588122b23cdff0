package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/testenv"
)

func TestProxyPassesThrough(t *testing.T) {
	var gotHost, gotXFF, gotPath atomic.Value
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		gotHost.Store(r.Host)
		gotXFF.Store(r.Header.Get("X-Forwarded-For"))
		gotPath.Store(r.URL.RequestURI())
		b, _ := io.ReadAll(r.Body)
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("X-Custom", "yes")
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "body:%s", b)
	})
	tp := startProxy(t, testConfig(newTestSource(inst("a", "dps", up.URL))))

	resp, body := tp.do(t, http.MethodPost, "dps", "hello")
	if resp.StatusCode != http.StatusTeapot || body != "body:hello" || resp.Header.Get("X-Custom") != "yes" ||
		len(resp.Header.Values("Set-Cookie")) != 2 || resp.Header.Get(http1.InstanceHeader) != "a" {
		t.Fatalf("got %d %q, headers %v", resp.StatusCode, body, resp.Header)
	}
	if gotPath.Load() != "/path?q=1" || gotXFF.Load() != "127.0.0.1" {
		t.Errorf("upstream saw path %v, X-Forwarded-For %v", gotPath.Load(), gotXFF.Load())
	}

	// Routing by Host: the first label names the service, and the upstream sees the same Host.
	req, _ := http.NewRequest(http.MethodGet, tp.url+"/", nil)
	req.Host = "DPS.edge.example:8080"
	resp, err := tp.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || gotHost.Load() != "DPS.edge.example:8080" {
		t.Fatalf("by Host: %d, upstream Host %v", resp.StatusCode, gotHost.Load())
	}
}

func TestProxyStreamsBodies(t *testing.T) {
	release := make(chan struct{})
	up := upstreamServer(t, "s", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintln(w, "second")
	})
	tp := startProxy(t, testConfig(newTestSource(inst("s", "stream", up.URL))))
	req, _ := http.NewRequest(http.MethodGet, tp.url+"/", nil)
	req.Header.Set(http1.ServiceHeader, "stream")
	resp, err := tp.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n') // arrives while the upstream is still blocked
	if err != nil || line != "first\n" {
		t.Fatalf("first line: %q, %v", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if string(rest) != "second\n" {
		t.Fatalf("rest: %q", rest)
	}
}

func TestProxyErrorResponses(t *testing.T) {
	slow := upstreamServer(t, "slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	dead1, dead2 := closedURL(t), closedURL(t)
	cfg := testConfig(newTestSource(
		inst("slow1", "slow", slow.URL),
		inst("d1", "gone-rr", dead1), inst("d2", "gone-rr", dead2),
		inst("d3", "gone-qos", dead1),
	))
	cfg.Services = map[string]config.ServiceConfig{"empty": cfg.Defaults, "slow": cfg.Defaults, "gone-rr": cfg.Defaults}
	sc := cfg.Services["slow"]
	sc.Timeout = config.Dur(100 * time.Millisecond)
	cfg.Services["slow"] = sc
	rr := cfg.Services["gone-rr"]
	rr.Strategy = config.StrategyRoundRobin
	cfg.Services["gone-rr"] = rr
	tp := startProxy(t, cfg)

	tests := []struct {
		name, host, service string
		code                int
		errHas              string
		retryAfter          bool
	}{
		{"no service (IP host)", "", "", http.StatusBadRequest, "no service named", false},
		{"bad header", "", "a b", http.StatusBadRequest, "X-Continuum-Service", false},
		{"unknown", "", "nosuch", http.StatusNotFound, `unknown service \"nosuch\"`, false},
		{"unknown by host", "nosuch2.example", "", http.StatusNotFound, "nosuch2", false},
		{"configured, no instances", "", "empty", http.StatusServiceUnavailable, "discovery reports no instances", true},
		{"all in cooldown", "", "gone-qos", http.StatusServiceUnavailable, "cooldown", true},
		{"timeout", "", "slow", http.StatusGatewayTimeout, "timeout", false},
		{"unreachable after retries", "", "gone-rr", http.StatusBadGateway, "2 attempt(s)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tp.url+"/", nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.service != "" {
				req.Header.Set(http1.ServiceHeader, tt.service)
			}
			resp, err := tp.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.code, raw)
			}
			var body struct{ Error string }
			if err := json.Unmarshal(raw, &body); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("body %q is not a JSON error (%v)", raw, err)
			}
			if !strings.Contains(string(raw), tt.errHas) {
				t.Errorf("body %s does not contain %q", raw, tt.errHas)
			}
			if ra := resp.Header.Get("Retry-After"); (ra != "") != tt.retryAfter {
				t.Errorf("Retry-After %q, want present=%v", ra, tt.retryAfter)
			}
		})
	}
}

func TestProxyRetriesConnectionFailure(t *testing.T) {
	live := upstreamServer(t, "live", nil)
	doomed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "doomed") }))
	defer doomed.Close()
	tp := startProxy(t, testConfig(newTestSource(inst("doomed", "dps", doomed.URL), inst("live", "dps", live.URL))))
	// The first request starts the probes; the first instance to answer one serves it. Wait
	// for both in the pool, or on a busy machine every request may go to the first.
	tp.do(t, http.MethodGet, "dps", "")
	testenv.Eventually(t, 30*time.Second, "both instances in the pool", func() bool {
		v := tp.pools(t)
		d, _ := v.instance("dps", "doomed")
		l, _ := v.instance("dps", "live")
		return d.InPool && l.InPool
	})
	served := map[string]int{}
	for range 4 {
		resp, _ := tp.do(t, http.MethodGet, "dps", "")
		served[resp.Header.Get(http1.InstanceHeader)]++
	}
	if served["doomed"] == 0 || served["live"] == 0 {
		t.Fatalf("both instances should serve while alive: %v", served)
	}
	doomed.Close() // new connections are refused from now on
	for i := range 6 {
		resp, body := tp.do(t, http.MethodPost, "dps", "payload")
		if resp.StatusCode != http.StatusOK || body != "live got 7 bytes" || resp.Header.Get(http1.InstanceHeader) != "live" {
			t.Fatalf("request %d: %d %q from %q", i, resp.StatusCode, body, resp.Header.Get(http1.InstanceHeader))
		}
	}
	if !strings.Contains(tp.metrics(t), `continuum_proxy_retries_total{service="dps"} 1`) {
		t.Errorf("want exactly one retry (the doomed instance then cools down):\n%s", grep(tp.metrics(t), "retries"))
	}
	if in, _ := tp.pools(t).instance("dps", "doomed"); in.InPool || in.Failures == 0 {
		t.Errorf("doomed after failing: %+v", in)
	}
}

func TestProxyShedsPastMaxInflight(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 2)
	up := upstreamServer(t, "slow", func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.MaxInflight = 2
	tp := startProxy(t, cfg)
	done := make(chan int, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, tp.url+"/", nil)
			req.Header.Set(http1.ServiceHeader, "dps")
			resp, err := tp.client.Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	<-arrived
	<-arrived
	resp, body := tp.do(t, http.MethodGet, "dps", "")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "max_inflight") {
		t.Fatalf("third request: %d %q Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	close(release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("held request: %d", code)
		}
	}
	if resp, _ := tp.do(t, http.MethodGet, "dps", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the load went: %d", resp.StatusCode)
	}
	if !strings.Contains(tp.metrics(t), `continuum_proxy_errors_total{service="",type="overloaded"} 1`) {
		t.Error("shed request not counted")
	}
}

func TestProxyUpgradedConnection(t *testing.T) {
	up := upstreamServer(t, "ws", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo-proto" {
			http.Error(w, "want Upgrade: echo-proto", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo-proto\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		line, err := rw.ReadString('\n')
		if err == nil {
			rw.WriteString("echo " + line)
			rw.Flush()
		}
	})
	tp := startProxy(t, testConfig(newTestSource(inst("w1", "ws", up.URL))))
	conn, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: ws.local\r\nConnection: Upgrade\r\nUpgrade: echo-proto\r\n\r\n")
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get(http1.InstanceHeader) != "w1" {
		t.Fatalf("upgrade: %d, instance %q", resp.StatusCode, resp.Header.Get(http1.InstanceHeader))
	}
	fmt.Fprint(conn, "ping\n")
	if line, err := rd.ReadString('\n'); err != nil || line != "echo ping\n" {
		t.Fatalf("over the upgraded connection: %q, %v", line, err)
	}
}

// TestProxyUpgradedConnectionEndsWithServe (issue 41, attack 5): an upgraded (WebSocket)
// connection open at shutdown gets the grace, then is cut, and its splice goroutines end
// before Serve returns (Serve returns once every goroutine it started has). net/http's
// Shutdown does not track hijacked connections: once Serve returned while the splice went on,
// the client talking to the instance through a proxy that had stopped.
func TestProxyUpgradedConnectionEndsWithServe(t *testing.T) {
	up := upstreamServer(t, "ws", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			io.WriteString(w, "plain")
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo-proto\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString("echo " + line)
			rw.Flush()
		}
	})
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.ShutdownTimeout = 3 * time.Second // long enough for the echo during the grace under load
	tp, cancel, served := serveManually(t, cfg)
	cl := dialRaw(t, tp)
	io.WriteString(cl.c, "GET / HTTP/1.1\r\nHost: dps\r\nConnection: Upgrade\r\nUpgrade: echo-proto\r\n\r\n")
	resp, err := http.ReadResponse(cl.br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(cl.c, "before\n")
	if line, err := cl.br.ReadString('\n'); err != nil || line != "echo before\n" {
		t.Fatalf("through the upgraded connection: %q %v", line, err)
	}
	cancel()
	// During the grace the splice goes on.
	io.WriteString(cl.c, "grace\n")
	if line, err := cl.br.ReadString('\n'); err != nil || line != "echo grace\n" {
		t.Fatalf("during the grace: %q %v", line, err)
	}
	select {
	case <-served:
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
	// No frame of the splice is left (polled briefly: a copy goroutine that has sent its
	// result may still be returning).
	var stacks string
	if !testenv.Poll(time.Second, func() bool {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "switchProtocols(") && !strings.Contains(stacks, "switchProtocols.func")
	}) {
		t.Errorf("a splice goroutine outlived Serve:\n%s", stacks)
	}
	cl.c.SetDeadline(time.Now().Add(2 * time.Second))
	io.WriteString(cl.c, "after\n")
	if line, err := cl.br.ReadString('\n'); err == nil {
		t.Fatalf("after Serve returned the upgraded connection still carries traffic (%q)", line)
	}
}
