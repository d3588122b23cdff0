package proxy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/testenv"
)

// directService is a service of one instance at url, probed once by its real probe (dial,
// if not nil, is how its transport dials), with no maintainer running: the test sends
// attempts through roundTrip.
func directService(t *testing.T, cfg ServiceConfig, url string, dial dialFunc) (*service, *instance) {
	t.Helper()
	s, err := newService("dps", cfg, time.Now, discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dial != nil {
		s.spares.dial = dial // before anything can dial
	}
	t.Cleanup(s.close)
	s.setInstances([]discovery.Instance{{ID: "a", Service: "dps", URL: url, Ready: true}}, nil)
	in := s.lookup("a")
	s.mu.Lock()
	s.activateLocked()
	s.mu.Unlock()
	res, err := s.defaultProbe(context.Background(), in)
	s.probeDone(in, res, err)
	if !in.inPool {
		t.Fatalf("not in the pool: %s", in.why)
	}
	return s, in
}

// roundTrip sends one request through the service's attempt path, as the handler would.
func roundTrip(s *service, method string) (*http.Response, error) {
	req := httptest.NewRequest(method, "http://dps.example/", nil)
	req = req.WithContext(context.WithValue(req.Context(), stateKey{}, &reqState{svc: s, start: time.Now()}))
	resp, err := (&upstream{}).RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestProxyConnectTimeNotChargedToEstimate(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	// The network to the instance: a handshake takes 150 ms, more than the limit, and the
	// instance answers at once. Round-robin, so that no spare connection hides the dial.
	cfg := qosConfig(100 * time.Millisecond)
	cfg.Strategy = StrategyRoundRobin
	handshake := 150 * time.Millisecond
	s, in := directService(t, cfg, up.URL, func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(handshake) // the simulated round trip, not a wait for the test
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	start := time.Now()
	if resp, err := roundTrip(s, http.MethodGet); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("request: %v, %v", resp, err)
	}
	if took := time.Since(start); took < handshake {
		t.Fatalf("request took %v, the dial alone %v", took, handshake)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.samples != 1 || in.est >= handshake || !in.inPool {
		t.Fatalf("after a request over a new connection: %d samples, estimate %v, in pool %v (%s); want the handshake left out",
			in.samples, in.est, in.inPool, in.why)
	}
}

func TestProxyEvictsSlowInstanceWhileItsRequestIsInFlight(t *testing.T) {
	release := make(chan struct{})
	slow := upstreamServer(t, "slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	cfg := testConfig(newTestSource(inst("slow", "dps", slow.URL)))
	cfg.Defaults.QoS.Latency = dur(100 * time.Millisecond)
	cfg.Defaults.Cooldown = BackoffConfig{Base: dur(time.Minute), Max: dur(time.Minute)} // the hold outlasts the test
	tp := startProxy(t, cfg)
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, tp.url+"/", nil)
		req.Header.Set(ServiceHeader, "dps")
		resp, err := tp.client.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	testenv.Eventually(t, 30*time.Second, "eviction with the request still in flight", func() bool {
		in, _ := tp.pools(t).instance("dps", "slow")
		return in.Reason == reasonHold && in.Outstanding == 1
	})
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the slow request: %d", code)
	}
	in, _ := tp.pools(t).instance("dps", "slow")
	if in.Samples != 0 || !strings.Contains(in.Why, "left the pool") {
		t.Fatalf("after its answer: %d samples (want 0: it was sent before the eviction), why %q", in.Samples, in.Why)
	}
}

func TestProxyHTTPProbeMeasuresNetworkAndResponse(t *testing.T) {
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	})
	cfg := qosConfig(time.Second)
	cfg.Probe.Path = "/healthz"
	s, in := directService(t, cfg, up.URL, nil)
	for range 2 { // a new connection each time: every probe measures the connect time
		res, err := s.defaultProbe(context.Background(), in)
		if err != nil || res.net <= 0 || res.lat <= 0 {
			t.Fatalf("HTTP probe: %+v, %v", res, err)
		}
	}
}
