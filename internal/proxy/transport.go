package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// newTransport is a service's connection pool to its instances, dialing with dial.
// Compression is off so that bodies pass through byte for byte (the client's
// Accept-Encoding goes to the instance as is); no proxy from the environment, since
// instances are reached directly.
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

// errTimeoutMsg is the failure message of an attempt cut by the service's timeout.
const errTimeoutMsg = "timeout"

// gatewayError is an attempt sequence that ended without a response: 502 or 504.
type gatewayError struct {
	code     int
	instance string
	msg      string
}

func (e *gatewayError) Error() string { return e.msg }

// reqState follows one request through ReverseProxy: the handler creates it, the transport
// fills in which instance answered, ModifyResponse and the error handler the status sent.
type reqState struct {
	svc      *service
	start    time.Time
	instance string
	code     int
	errType  string
}

type stateKey struct{}

func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	return st
}

// upstream is the http.RoundTripper ReverseProxy calls: it picks an instance, sends, measures
// and retries connection failures on other instances.
type upstream struct {
	m *metrics
}

// RoundTrip tries instances until one answers (any status), the service's retries are used
// up, or its timeout passes. A failure is retried only when the request certainly did not
// reach the instance (the connection was never established) or, for idempotent methods
// without a body, when the connection broke before any answer: a POST that may have been
// processed is not sent twice.
func (u *upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	st := stateOf(req)
	if st == nil {
		return nil, errors.New("proxy: request without routing state")
	}
	s := st.svc
	deadline := st.start.Add(s.cfg.Timeout.Duration)
	var triedBuf [4]*instance
	tried := triedBuf[:0]
	var failures []string
	noBody := req.Body == nil || req.Body == http.NoBody
	for {
		in, err := s.pick(tried)
		if err != nil {
			if len(tried) == 0 {
				return nil, err
			}
			return nil, &gatewayError{code: http.StatusBadGateway, instance: st.instance,
				msg: fmt.Sprintf("service %q: no instance answered after %d attempt(s): %s; no other instance to try", s.name, len(tried), strings.Join(failures, "; "))}
		}
		tried = append(tried, in)
		st.instance = in.id
		resp, err := u.attempt(req, s, in, deadline)
		if err == nil {
			return resp, nil
		}
		var ge *gatewayError
		if errors.As(err, &ge) || req.Context().Err() != nil {
			return nil, err // timeout (504) or the client left: nothing to retry
		}
		failures = append(failures, in.id+": "+err.Error())
		retryable := isDialError(err) || (noBody && idempotent(req.Method))
		budget := time.Until(deadline)
		switch {
		case !retryable, len(tried) > s.cfg.Retries, budget <= 0:
			why := ""
			switch {
			case !retryable:
				why = "; not retried: the request may have reached the instance"
			case budget <= 0:
				why = "; no time left to retry"
			}
			return nil, &gatewayError{code: http.StatusBadGateway, instance: in.id,
				msg: fmt.Sprintf("service %q: no instance answered after %d attempt(s): %s%s", s.name, len(tried), strings.Join(failures, "; "), why)}
		}
		u.m.retry(s.name)
	}
}

// attempt sends req to one instance. The timer cancels the attempt at the service's deadline
// only until the response headers arrive; the body may then stream for as long as it takes.
func (u *upstream) attempt(req *http.Request, s *service, in *instance, deadline time.Time) (*http.Response, error) {
	remaining := time.Until(deadline)
	if remaining <= 0 {
		return nil, &gatewayError{code: http.StatusGatewayTimeout, instance: in.id,
			msg: fmt.Sprintf("service %q: no answer within the timeout %v", s.name, s.cfg.Timeout)}
	}
	ctx, cancel := context.WithCancel(req.Context())
	var timedOut atomic.Bool
	timer := time.AfterFunc(remaining, func() {
		timedOut.Store(true)
		cancel()
	})
	epoch := in.epoch.Load()
	r := attemptResult{epoch: epoch}
	ct := &connTimes{base: time.Now()}
	if limit := s.cfg.QoS.Latency.Duration; limit > 0 && s.cfg.Strategy == StrategyQoS {
		// Armed when the connection is ready, like the latency it stands for.
		ct.onConn = func() {
			ct.slow.Store(time.AfterFunc(limit, func() { s.observeSlow(in, epoch, ct.sinceConn()) }))
		}
	}
	out := req.WithContext(ct.trace(ctx))
	if req.Body != nil {
		// The transport closes the body even when it never connected, and ReverseProxy's
		// wrapper refuses reads once closed: shield it so that a retry can still send it.
		out.Body = keepBody{req.Body}
	}
	target := *req.URL
	target.Scheme, target.Host = in.target.Scheme, in.target.Host
	out.URL = &target
	in.outstanding.Add(1)
	resp, err := s.transport.RoundTrip(out)
	r.lat, r.sampled = ct.sinceConn(), ct.stopSlow()
	if err == nil && !timer.Stop() {
		resp.Body.Close() // the timer fired as the headers arrived: the body is cancelled
		err = context.Canceled
	}
	if err != nil {
		timer.Stop()
		cancel()
		in.outstanding.Add(-1)
		switch {
		case timedOut.Load():
			r.oc, r.errMsg = outcomeFailure, errTimeoutMsg
			s.record(in, r)
			return nil, &gatewayError{code: http.StatusGatewayTimeout, instance: in.id,
				msg: fmt.Sprintf("service %q: instance %s did not answer within the timeout %v", s.name, in.id, s.cfg.Timeout)}
		case req.Context().Err() != nil:
			r.oc = outcomeCanceled
			s.record(in, r)
			return nil, req.Context().Err()
		}
		r.oc, r.errMsg = outcomeFailure, err.Error()
		s.record(in, r)
		return nil, err
	}
	r.oc, r.errMsg = classifyStatus(resp.StatusCode), fmt.Sprintf("HTTP %d", resp.StatusCode)
	s.record(in, r)
	u.m.upstreamLatency(s.name, in.id, r.lat)
	resp.Header.Set(InstanceHeader, in.id)
	release := func() {
		cancel()
		in.outstanding.Add(-1)
	}
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		// An upgraded connection (WebSocket): ReverseProxy needs the body writable to
		// splice the two connections.
		resp.Body = &releaseConn{ReadWriteCloser: rwc, release: release}
	} else {
		resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	}
	return resp, nil
}

// connTimes follows one request's connection through httptrace: when the connection was
// ready (GotConn) and how long the TCP connect took if one was made for it. Times are
// nanoseconds since base plus one (0: not yet); the dial reports from its own goroutine.
type connTimes struct {
	base      time.Time
	got       atomic.Int64
	dialStart atomic.Int64
	dialDone  atomic.Int64
	// onConn runs once when the connection is ready; slow is the timer it may arm.
	onConn func()
	slow   atomic.Pointer[time.Timer]
}

func (ct *connTimes) mark() int64 { return int64(time.Since(ct.base)) + 1 }

func (ct *connTimes) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectStart: func(string, string) { ct.dialStart.CompareAndSwap(0, ct.mark()) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				ct.dialDone.CompareAndSwap(0, ct.mark())
			}
		},
		GotConn: func(httptrace.GotConnInfo) {
			if ct.got.CompareAndSwap(0, ct.mark()) && ct.onConn != nil {
				ct.onConn()
			}
		},
	})
}

// sinceConn is the time since the connection was ready, or since base if it never was (a
// failure to connect, which then took all that time).
func (ct *connTimes) sinceConn() time.Duration {
	d := time.Since(ct.base)
	if g := ct.got.Load(); g > 0 {
		d -= time.Duration(g - 1)
	}
	return max(d, 0)
}

// connect is the TCP connect time of a connection dialed for the request (0: none was).
func (ct *connTimes) connect() time.Duration {
	s, d := ct.dialStart.Load(), ct.dialDone.Load()
	if s == 0 || d < s {
		return 0
	}
	return max(time.Duration(d-s), time.Nanosecond)
}

// stopSlow stops the slow timer and reports whether it had fired.
func (ct *connTimes) stopSlow() bool {
	t := ct.slow.Load()
	return t != nil && !t.Stop()
}

// releaseBody runs release once when the body is closed (ReverseProxy always closes it): the
// attempt's context and the instance's outstanding count live until the body is done.
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// releaseConn is releaseBody for the read-write body of a 101 response.
type releaseConn struct {
	io.ReadWriteCloser
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.ReadWriteCloser.Close()
	c.once.Do(c.release)
	return err
}

// isDialError reports a failure to establish the connection: the request was not sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// keepBody is a request body whose Close does nothing; ReverseProxy closes the real one when
// the request is done.
type keepBody struct {
	io.ReadCloser
}

func (keepBody) Close() error { return nil }
