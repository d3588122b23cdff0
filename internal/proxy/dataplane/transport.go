package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
	"github.com/continuum-project/continuum/internal/proxy/pool"
)

// gatewayError is an attempt sequence that ended without a response: 502 or 504.
type gatewayError struct {
	code     int
	instance string
	msg      string
}

func (e *gatewayError) Error() string { return e.msg }

// ReqState follows one request: the handler creates it, the upstream fills in which instance
// answered and the status sent.
type ReqState struct {
	Svc      *pool.Service
	Start    time.Time
	instance string
	in       *pool.Instance // the instance that answered (nil: none)
	code     int
}

type StateKey struct{}

func stateOf(r *http.Request) *ReqState {
	st, _ := r.Context().Value(StateKey{}).(*ReqState)
	return st
}

// Upstream picks an instance for a request, sends it, measures and retries connection
// failures on other instances.
type Upstream struct {
	m *metrics.Metrics
}

// copyBufs are the copy buffers of request and response bodies: 16 KiB, recycled, since a
// buffer is held per body being copied and the proxy's memory under load is mostly
// per-request buffers.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// RoundTrip is roundTrip for a request carrying its reqState in its context (tests).
func (u *Upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	st := stateOf(req)
	if st == nil {
		return nil, errors.New("proxy: request without routing state")
	}
	return u.roundTrip(req, st, nil)
}

// exchange is one request as the upstream sends it, whichever server read it from the
// client: net/http's (httpExchange, the fallback path) or the proxy's own loop (serve.go).
type exchange interface {
	// context ends when the client is gone; nil when nothing watches the client meanwhile
	// (the loop does not read from the client while it waits for the instance).
	context() context.Context
	method() string
	hasBody() bool
	// send writes the request to uc; recv reads the answer's head (1xx interim answers
	// skipped, 101 returned) and reports its status and whether the connection can carry
	// another request after its body.
	send(uc *pool.UpConn, instHost string) error
	recv(uc *pool.UpConn) (status int, keep bool, err error)
	// clock is the exchange's upload clock: send reports on it the time spent waiting for
	// the client's body.
	clock() *uploadClock
	// using is told the instance connection an attempt uses, before anything is sent on it.
	using(uc *pool.UpConn)
}

// uploadClock keeps the client's upload time out of the instance's account. The service's
// timeout bounds what the instance does — accepting the connection, taking the request,
// answering — and not how fast the client sends its body: a request whose body trickles in
// must not end in a 504 with the instance put in cooldown, or any client could push every
// instance out (the client's side has its own bound, idle). So the time send spends waiting
// for the client's body moves the attempt's deadline on by as much, and is left out of the
// latency the instance is measured by.
type uploadClock struct {
	uc       *pool.UpConn
	deadline time.Time     // the attempt's deadline before the client's waits
	slack    time.Duration // upConn.bound's slack
	// waited is the time spent waiting for the client's body so far.
	waited time.Duration
	// idle bounds each wait for the next piece of the client's body (the service's timeout):
	// a client that stalls mid-body is cut (408) and frees what it holds.
	idle time.Duration
}

func (u *uploadClock) start(uc *pool.UpConn, deadline time.Time, slack, idle time.Duration) {
	*u = uploadClock{uc: uc, deadline: deadline, slack: slack, idle: idle}
}

// waitedFor records d spent waiting for the client and moves the instance's deadline on.
func (u *uploadClock) waitedFor(d time.Duration) {
	u.waited += d
	if u.uc != nil {
		u.uc.Bound(u.deadline.Add(u.waited), u.slack)
	}
}

// due is the attempt's deadline with the client's waits added.
func (u *uploadClock) due() time.Time { return u.deadline.Add(u.waited) }

// clientStalled is the client's body not progressing for idle: 408, not the instance's
// failure (it is a clientBodyErr's cause).
type clientStalled struct{ idle time.Duration }

func (e clientStalled) Error() string {
	return fmt.Sprintf("no part of the request body came for %v (the service's timeout)", e.idle)
}
func (e clientStalled) Timeout() bool   { return true }
func (e clientStalled) Temporary() bool { return false }

// httpExchange is a request net/http's server read; recv leaves the answer in resp.
type httpExchange struct {
	r    *http.Request
	upg  string
	resp *http.Response
	// ctl sets the client connection's deadlines (nil: none, RoundTrip's tests).
	ctl *http.ResponseController
	up  uploadClock
}

func (x *httpExchange) context() context.Context { return x.r.Context() }
func (x *httpExchange) method() string           { return x.r.Method }
func (x *httpExchange) hasBody() bool            { return x.r.Body != nil && x.r.Body != http.NoBody }
func (x *httpExchange) clock() *uploadClock      { return &x.up }

// using: net/http's server cancels the request's context when it closes the connection, and
// attempt's AfterFunc then interrupts the instance connection.
func (x *httpExchange) using(*pool.UpConn) {}
func (x *httpExchange) send(uc *pool.UpConn, instHost string) error {
	bp := copyBufs.Get().(*[]byte)
	var body io.Reader
	if x.hasBody() {
		body = &clientBody{r: x.r.Body, ctl: x.ctl, clk: &x.up}
	}
	err := pool.WriteRequest(uc, x.r, body, instHost, x.upg, *bp)
	copyBufs.Put(bp)
	return err
}

// clientBody is the request body net/http's server reads, as send copies it: each read has
// the upload clock's idle bound as the client connection's read deadline, its wait is put on
// the clock, and its failures are the client's (clientBodyErr), not the instance's.
type clientBody struct {
	r   io.Reader
	ctl *http.ResponseController
	clk *uploadClock
}

func (b *clientBody) Read(p []byte) (int, error) {
	now := time.Now()
	if b.ctl != nil && b.clk.idle > 0 {
		b.ctl.SetReadDeadline(now.Add(b.clk.idle))
	}
	n, err := b.r.Read(p)
	b.clk.waitedFor(time.Since(now))
	switch {
	case err == io.EOF:
		// The body is read: no deadline is left on the connection, where net/http's
		// background read watches for the client leaving.
		if b.ctl != nil {
			b.ctl.SetReadDeadline(time.Time{})
		}
		return n, err
	case err != nil && pool.IsTimeout(err) && b.clk.idle > 0:
		return n, pool.ClientBodyError(clientStalled{b.clk.idle})
	case err != nil:
		return n, pool.ClientBodyError(err)
	}
	return n, nil
}
func (x *httpExchange) recv(uc *pool.UpConn) (int, bool, error) {
	resp, err := pool.ReadResponse(uc, x.r)
	if err != nil {
		return 0, false, err
	}
	x.resp = resp
	return resp.StatusCode, !resp.Close && x.upg == "", nil
}

// roundTrip is tryInstances for a request net/http's server read: the answer with a body
// whose Close returns the connection to the pool.
func (u *Upstream) roundTrip(req *http.Request, st *ReqState, ctl *http.ResponseController) (*http.Response, error) {
	x := &httpExchange{r: req, upg: pool.UpgradeType(req.Header), ctl: ctl}
	uc, keep, stop, err := u.tryInstances(x, st)
	if err != nil {
		return nil, err
	}
	resp := x.resp
	resp.Header[http1.InstanceHeader] = st.in.IDHeader
	resp.Body = &upBody{rc: resp.Body, uc: uc, pool: st.Svc.Conns, stop: stop, in: st.in, keep: keep}
	return resp, nil
}

// tryInstances tries instances until one answers (any status), the service's retries are used
// up, or its timeout passes. A failure is retried only when the request certainly did not
// reach the instance (the connection was never established) or, for idempotent methods
// without a body, when the connection broke before any answer: a POST that may have been
// processed is not sent twice. On success the answer's head has been read from the returned
// connection; the caller reads the body, then calls stop (if not nil), returns the
// connection to the pool (keep, body read to its end) or closes it, and ends the request's
// count on st.in (outstanding).
func (u *Upstream) tryInstances(x exchange, st *ReqState) (uc *pool.UpConn, keep bool, stop func() bool, err error) {
	s := st.Svc
	deadline := st.Start.Add(s.Config.Timeout.Duration)
	var triedBuf [4]*pool.Instance
	tried := triedBuf[:0]
	var failures []string
	noBody := !x.hasBody()
	ctx := x.context()
	for {
		in, err := s.Pick(tried)
		if err != nil {
			if len(tried) == 0 {
				return nil, false, nil, err
			}
			return nil, false, nil, &gatewayError{code: http.StatusBadGateway, instance: st.instance,
				msg: fmt.Sprintf("service %q: no instance answered after %d attempt(s): %s; no other instance to try", s.Name, len(tried), strings.Join(failures, "; "))}
		}
		tried = append(tried, in)
		st.instance = in.ID
		uc, keep, stop, err := u.attempt(x, s, in, deadline)
		if err == nil {
			st.in = in
			return uc, keep, stop, nil
		}
		var ge *gatewayError
		var cb pool.ClientBodyErr
		if errors.As(err, &ge) || (ctx != nil && ctx.Err() != nil) || errors.As(err, &cb) {
			return nil, false, nil, err // timeout (504), the client left or its body broke off: nothing to retry
		}
		failures = append(failures, in.ID+": "+err.Error())
		retryable := isDialError(err) || (noBody && idempotent(x.method()))
		budget := time.Until(deadline)
		switch {
		case !retryable, len(tried) > s.Config.Retries, budget <= 0:
			why := ""
			switch {
			case !retryable:
				why = "; not retried: the request may have reached the instance"
			case budget <= 0:
				why = "; no time left to retry"
			}
			return nil, false, nil, &gatewayError{code: http.StatusBadGateway, instance: in.ID,
				msg: fmt.Sprintf("service %q: no instance answered after %d attempt(s): %s%s", s.Name, len(tried), strings.Join(failures, "; "), why)}
		}
		u.m.Retry(s.Name)
	}
}

// attempt sends x to one instance. The connection's deadline is the service's deadline
// only until the response headers arrive; the body may then stream for as long as it takes.
// The client leaving interrupts the exchange (context.AfterFunc sets a past deadline).
func (u *Upstream) attempt(x exchange, s *pool.Service, in *pool.Instance, deadline time.Time) (*pool.UpConn, bool, func() bool, error) {
	if time.Until(deadline) <= 0 {
		return nil, false, nil, &gatewayError{code: http.StatusGatewayTimeout, instance: in.ID,
			msg: fmt.Sprintf("service %q: no answer within the timeout %v", s.Name, s.Config.Timeout)}
	}
	ctx := x.context()
	epoch := in.Epoch.Load()
	r := pool.AttemptResult{Epoch: epoch}
	noBody := !x.hasBody()
	resendable := noBody && idempotent(x.method())
	in.Outstanding.Add(1)
	for {
		connStart := time.Now()
		uc, err := s.Conns.Get(ctx, in.Addr, in.TLSName)
		if err != nil {
			in.Outstanding.Add(-1)
			r.Lat = time.Since(connStart)
			if ctx != nil && ctx.Err() != nil {
				r.Outcome = pool.OutcomeCanceled
				s.Record(in, r)
				return nil, false, nil, ctx.Err()
			}
			r.Outcome, r.ErrMsg = pool.OutcomeFailure, err.Error()
			s.Record(in, r)
			return nil, false, nil, err
		}
		x.using(uc)
		gotConn := time.Now()
		limit := s.Config.QoS.Latency.Duration
		if s.Config.Strategy != config.StrategyQoS {
			limit = 0
		}
		if limit > 0 && noBody {
			// Armed when the connection is ready, like the latency it stands for; with a
			// body, once the body is sent (the client's upload is not the instance's time).
			uc.Slow.Arm(s, in, epoch, gotConn, limit)
		}
		slack := pool.DeadlineSlackFor(s.Config.Timeout.Duration)
		uc.Bound(deadline, slack)
		clk := x.clock()
		clk.start(uc, deadline, slack, s.Config.Timeout.Duration)
		var stop func() bool
		if ctx != nil {
			stop = context.AfterFunc(ctx, func() { uc.C.SetDeadline(pool.ALongTimeAgo) })
		}
		err = x.send(uc, in.Target.Host)
		if limit > 0 && !noBody && err == nil {
			uc.Slow.Arm(s, in, epoch, gotConn.Add(clk.waited), limit)
		}
		var status int
		var keep bool
		if err == nil {
			status, keep, err = x.recv(uc)
		}
		r.Lat = time.Since(gotConn) - clk.waited
		r.Sampled = uc.Slow.Disarm()
		if err != nil {
			if stop != nil {
				stop()
			}
			uc.C.Close()
			var cb pool.ClientBodyErr
			clientBroke := errors.As(err, &cb) // first: net/http cancels ctx when a body read fails
			switch {
			case clientBroke, ctx != nil && ctx.Err() != nil:
				// The client left, or its body broke off or stalled: not the instance's failure.
				in.Outstanding.Add(-1)
				r.Outcome = pool.OutcomeCanceled
				s.Record(in, r)
				if clientBroke {
					return nil, false, nil, err
				}
				return nil, false, nil, ctx.Err()
			case !time.Now().Before(clk.due()):
				in.Outstanding.Add(-1)
				r.Outcome, r.ErrMsg = pool.OutcomeFailure, pool.ErrTimeoutMsg
				s.Record(in, r)
				return nil, false, nil, &gatewayError{code: http.StatusGatewayTimeout, instance: in.ID,
					msg: fmt.Sprintf("service %q: instance %s did not answer within the timeout %v", s.Name, in.ID, s.Config.Timeout)}
			case uc.Reused && !r.Sampled && resendable && staleConn(err):
				// A pooled connection the instance had closed: not the instance's failure.
				continue
			}
			in.Outstanding.Add(-1)
			r.Outcome, r.ErrMsg = pool.OutcomeFailure, err.Error()
			s.Record(in, r)
			return nil, false, nil, err
		}
		if ctx != nil {
			// net/http's path reads the body through upBody, which knows nothing of
			// deadlines; the loop clears it itself when a body must be waited for.
			uc.Unbound()
		}
		r.Outcome, r.ErrMsg = pool.ClassifyStatus(status), ""
		if r.Outcome != pool.OutcomeOK {
			r.ErrMsg = "HTTP " + strconv.Itoa(status)
		}
		s.Record(in, r)
		in.Series.UpstreamLatency(r.Lat)
		return uc, keep, stop, nil
	}
}

// staleConn: the exchange failed the way a pooled connection the server has closed fails
// (writing to it, or reading its end before any answer).
func staleConn(err error) bool {
	return errors.Is(err, pool.ErrNoAnswer) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// upBody is an answer's body: closing it returns the connection to the pool if the body was
// read to its end and the instance keeps the connection open, else closes the connection;
// either way it ends the request's count on the instance.
type upBody struct {
	rc   io.ReadCloser
	uc   *pool.UpConn
	pool *pool.ConnPool
	stop func() bool
	in   *pool.Instance
	keep bool
	eof  bool
	done bool
}

func (b *upBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *upBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	b.in.Outstanding.Add(-1)
	// stop reports false when the client's leaving already poisoned the deadline.
	if b.stop() && b.eof && b.keep {
		b.rc.Close()
		b.pool.Put(b.uc)
		return nil
	}
	// Not read to its end: closing the connection ends the body (net/http's Close would
	// drain it, however long it streams).
	return b.uc.C.Close()
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
