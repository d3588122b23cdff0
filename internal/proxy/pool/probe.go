package pool

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
)

// newTransport is the probes' HTTP client transport (probe.path), dialing with dial.
// Compression is off so that bodies pass through byte for byte; no proxy from the
// environment, since instances are reached directly.
func newTransport(connectTimeout time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		DialContext:           dial,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connectTimeout + time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// ErrTimeoutMsg is the failure message of an attempt cut by the service's timeout.
const ErrTimeoutMsg = "timeout"

// probeFunc measures an instance once; tests replace it.
type probeFunc func(ctx context.Context, in *Instance) (probeResult, error)

// probeResult is what a probe measured.
type probeResult struct {
	// Lat is the probe's time: the TCP connect time, or for an HTTP probe the time from its
	// connection being ready to the response headers.
	Lat time.Duration
	// Net is the TCP connect time (the network round trip); 0 if not measured.
	Net time.Duration
}

// DefaultProbe is a TCP connect to the instance's host:port (the network round trip, no
// request is sent) or, with Probe.Path set, an HTTP GET of that path over a new connection:
// its connect time is the network round trip and its time from the connection to the
// response headers a latency sample; a 5xx answer counts as a failed probe.
//
// With the qos strategy a TCP probe's connection is not closed but kept as a spare for the
// service's transport: the first request after the probe (the first request of all, or the
// first after the instance rejoins the pool) then does not wait for a TCP handshake.
func (s *Service) DefaultProbe(ctx context.Context, in *Instance) (probeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Config.Probe.Timeout.Duration)
	defer cancel()
	start := time.Now()
	if s.Config.Probe.Path == "" {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", in.Addr)
		if err != nil {
			return probeResult{}, err
		}
		lat := time.Since(start)
		if s.Config.Strategy == config.StrategyQoS {
			s.Spares.put(in.Addr, c)
		} else {
			c.Close()
		}
		return probeResult{Lat: lat, Net: lat}, nil
	}
	u := *in.Target
	u.Path = s.Config.Probe.Path
	ct := &connTimes{base: start}
	req, err := http.NewRequestWithContext(ct.trace(ctx), http.MethodGet, u.String(), nil)
	if err != nil {
		return probeResult{}, err
	}
	req.Header.Set("User-Agent", "continuum-proxy-probe")
	resp, err := s.probeTransport.RoundTrip(req)
	if err != nil {
		return probeResult{}, err
	}
	res := probeResult{Lat: ct.sinceConn(), Net: ct.connect()}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return res, fmt.Errorf("GET %s: HTTP %d", s.Config.Probe.Path, resp.StatusCode)
	}
	return res, nil
}
