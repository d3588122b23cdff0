package proxy

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/dataplane"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/testenv"
)

// directService is a service of one instance at url, probed once by its real probe (dial,
// if not nil, is how its transport dials), with no maintainer running: the test sends
// attempts through roundTrip.
func directService(t *testing.T, cfg config.ServiceConfig, url string, dial pool.DialFunc) (*pool.Service, *pool.Instance) {
	t.Helper()
	s, err := pool.NewService("dps", cfg, time.Now, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dial != nil {
		s.Spares.Dial = dial // before anything can dial
	}
	t.Cleanup(s.Close)
	s.SetInstances([]discovery.Instance{{ID: "a", Service: "dps", URL: url, Ready: true}}, nil)
	in := s.Lookup("a")
	s.Mu.Lock()
	s.ActivateLocked()
	s.Mu.Unlock()
	res, err := s.DefaultProbe(context.Background(), in)
	s.ProbeDone(in, res, err)
	if !in.InPool {
		t.Fatalf("not in the pool: %s", in.Why)
	}
	return s, in
}

// roundTrip sends one request through the service's attempt path, as the handler would.
func roundTrip(s *pool.Service, method string) (*http.Response, error) {
	req := httptest.NewRequest(method, "http://dps.example/", nil)
	req = req.WithContext(context.WithValue(req.Context(), dataplane.StateKey{}, &dataplane.ReqState{Svc: s, Start: time.Now()}))
	resp, err := (&dataplane.Upstream{}).RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestProxyConnectTimeNotChargedToEstimate(t *testing.T) {
	up := upstreamServer(t, "a", nil)
	// The network to the instance: a handshake takes 150 ms, more than the limit, and the
	// instance answers at once. Round-robin, so that no spare connection hides the dial.
	cfg := qosServiceConfig(100 * time.Millisecond)
	cfg.Strategy = config.StrategyRoundRobin
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
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if in.Samples != 1 || in.Est >= handshake || !in.InPool {
		t.Fatalf("after a request over a new connection: %d samples, estimate %v, in pool %v (%s); want the handshake left out",
			in.Samples, in.Est, in.InPool, in.Why)
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
	cfg.Defaults.QoS.Latency = config.Dur(100 * time.Millisecond)
	cfg.Defaults.Cooldown = config.BackoffConfig{Base: config.Dur(time.Minute), Max: config.Dur(time.Minute)} // the hold outlasts the test
	tp := startProxy(t, cfg)
	done := make(chan int, 1)
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
	testenv.Eventually(t, 30*time.Second, "eviction with the request still in flight", func() bool {
		in, _ := tp.pools(t).instance("dps", "slow")
		return in.Reason == pool.ReasonHold && in.Outstanding == 1
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
	cfg := qosServiceConfig(time.Second)
	cfg.Probe.Path = "/healthz"
	s, in := directService(t, cfg, up.URL, nil)
	for range 2 { // a new connection each time: every probe measures the connect time
		res, err := s.DefaultProbe(context.Background(), in)
		if err != nil || res.Net <= 0 || res.Lat <= 0 {
			t.Fatalf("HTTP probe: %+v, %v", res, err)
		}
	}
}

// TestProxyHTTPSInstanceGetsTLS (issue 41, attack 1): discovery accepts https:// instance
// URLs (the file source; the kubernetes source makes them for a port named https), and the
// proxy's own transport must speak TLS to them: the first bytes such an instance gets are a
// TLS handshake (0x16), never the request in clear (it once dialed plain TCP and sent the
// client's request, Authorization included, unencrypted). See also
// TestProxyHTTPSInstanceServed.
func TestProxyHTTPSInstanceGetsTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first := make(chan []byte, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(3 * time.Second))
				b := make([]byte, 64)
				n, _ := c.Read(b)
				if n > 0 {
					first <- b[:n]
				}
			}()
		}
	}()
	cfg := testConfig(newTestSource(inst("a", "dps", "https://"+ln.Addr().String())))
	cfg.Defaults.Strategy = config.StrategyRoundRobin
	cfg.Defaults.Timeout = config.Dur(time.Second)
	tp := startProxy(t, cfg)
	cl := dialRaw(t, tp)
	io.WriteString(cl.c, "GET /secret HTTP/1.1\r\nHost: dps\r\nAuthorization: Bearer s3cr3t\r\n\r\n")
	select {
	case b := <-first:
		if b[0] != 0x16 {
			t.Fatalf("an https:// instance got plaintext from the proxy: %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the instance")
	}
}

// TestProxyHTTPSInstanceServed: an https:// instance whose certificate verifies against
// InstanceRootCAs is served on both servers (the loop's and net/http's, a head over 4 KiB),
// its connections pooled; one whose certificate does not verify gets nothing but a failed
// handshake (502), never the request.
func TestProxyHTTPSInstanceServed(t *testing.T) {
	var mu sync.Mutex
	var conns []string // the connection that carried each request
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns = append(conns, r.RemoteAddr)
		mu.Unlock()
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "tls %v got %d bytes", r.TLS != nil, len(b))
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// httptest's certificate is for 127.0.0.1 and example.com: as https://localhost:port the
	// instance's certificate does not verify.
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("an instance whose certificate does not verify got a request: %s", r.URL)
	}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0)
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tp := oneService(t, srv.URL, func(c *config.Config) {
		c.InstanceRootCAs = roots
		c.Sources = []discovery.Source{newTestSource(inst("a", "dps", srv.URL), inst("b", "bad", strings.Replace(untrusted.URL, "127.0.0.1", "localhost", 1)))}
	})
	cl := dialRaw(t, tp)
	for i, extra := range []string{"", "", bigField} {
		if extra != "" {
			cl = dialRaw(t, tp)
		}
		resp, body := cl.roundTrip("POST /x HTTP/1.1\r\nHost: dps\r\nContent-Length: 3\r\n"+extra+"\r\nabc", http.MethodPost)
		if resp.StatusCode != http.StatusOK || body != "tls true got 3 bytes" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	// The loop puts the connection back before it reads the client's next request: the second
	// request reuses the first one's TLS connection.
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 3 || conns[0] != conns[1] {
		t.Errorf("the TLS connection of a request is not reused by the next (%v): not pooled", conns)
	}
	resp, body := dialRaw(t, tp).roundTrip("GET /secret HTTP/1.1\r\nHost: bad\r\n\r\n", http.MethodGet)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "certificate") {
		t.Fatalf("untrusted certificate: %d %q", resp.StatusCode, body)
	}
}

func TestProxyProbeConnectionServesTheFirstRequest(t *testing.T) {
	var mu sync.Mutex
	var remotes []string
	up := upstreamServer(t, "a", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes = append(remotes, r.RemoteAddr)
		mu.Unlock()
	})
	s, in := directService(t, qosServiceConfig(time.Second), up.URL, nil) // probed: the pool has it
	s.Spares.Mu.Lock()
	probeConn := s.Spares.Slots[in.Addr].Idle[0].C.LocalAddr().String()
	s.Spares.Mu.Unlock()
	if resp, err := roundTrip(s, http.MethodGet); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("request: %v, %v", resp, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(remotes) != 1 || remotes[0] != probeConn {
		t.Fatalf("request came over %v, want the probe's connection %s", remotes, probeConn)
	}
}
