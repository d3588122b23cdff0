package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/httpjson"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
	"github.com/continuum-project/continuum/internal/proxy/pool"
)

// Handler is the data plane: it routes each request to a service's instance through
// upstream (which picks the instance and speaks HTTP/1.1 to it on a pool.UpConn) and copies the
// answer back. Status, headers (but hop-by-hop ones) and body pass through; bodies of unknown
// length and event streams are flushed as they arrive.
type Handler struct {
	rt  *pool.Router
	m   *metrics.Metrics
	log *slog.Logger
	up  *Upstream
	// maxInflight caps inflight (0: no cap).
	maxInflight int64
	// WriteTimeout bounds each write of an answer to a client (0: none).
	WriteTimeout time.Duration
	Inflight     atomic.Int64
	// ctx and wg own the services' background work, started by their first request.
	ctx context.Context
	wg  *sync.WaitGroup
	// Upgraded tracks the spliced (upgraded) connections, which net/http's Shutdown neither
	// waits for nor closes once hijacked.
	Upgraded splices
}

// splices are the upgraded connections being spliced; Serve's shutdown waits for them for
// its grace, then closes them and waits for their goroutines, so none outlives Serve.
type splices struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// add tracks a splice's two connections; false once the shutdown closed them (the caller
// then closes them and returns).
func (sp *splices) add(a, b net.Conn) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		return false
	}
	if sp.conns == nil {
		sp.conns = map[net.Conn]struct{}{}
	}
	sp.conns[a], sp.conns[b] = struct{}{}, struct{}{}
	sp.wg.Add(1)
	return true
}

func (sp *splices) done(a, b net.Conn) {
	sp.mu.Lock()
	delete(sp.conns, a)
	delete(sp.conns, b)
	sp.mu.Unlock()
	sp.wg.Done()
}

// Shutdown waits for the splices to end until ctx ends, then closes what is left and waits
// for their goroutines. It reports whether the splices were cut.
func (sp *splices) Shutdown(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { sp.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	sp.mu.Lock()
	sp.closed = true
	cut := len(sp.conns) > 0
	for c := range sp.conns {
		c.Close()
	}
	sp.mu.Unlock()
	<-done
	return cut
}

func NewHandler(ctx context.Context, wg *sync.WaitGroup, rt *pool.Router, m *metrics.Metrics, logger *slog.Logger, maxInflight int) *Handler {
	return &Handler{rt: rt, m: m, log: logger, ctx: ctx, wg: wg, maxInflight: int64(maxInflight), up: &Upstream{m: m}}
}

// ServeHTTP never panics on input: every way a request can be malformed ends in a 4xx here
// or in net/http before it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if h.maxInflight > 0 {
		n := h.Inflight.Add(1)
		defer h.Inflight.Add(-1)
		if n > h.maxInflight {
			h.m.CountError("", metrics.ErrTypeOverloaded)
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("proxy overloaded: more than %d requests in flight (max_inflight)", h.maxInflight), "", time.Second)
			h.m.Request("", "", http.StatusServiceUnavailable, time.Since(start))
			return
		}
	}
	if r.Method == http.MethodConnect {
		h.m.CountError("", metrics.ErrTypeBadRequest)
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusMethodNotAllowed, errConnectRefused, "", 0)
		h.m.Request("", "", http.StatusMethodNotAllowed, time.Since(start))
		return
	}
	name, err := http1.ServiceName(r.Header.Values(http1.ServiceHeader), r.Host)
	if err != nil {
		h.m.CountError("", metrics.ErrTypeBadRequest)
		writeError(w, http.StatusBadRequest, err.Error(), "", 0)
		h.m.Request("", "", http.StatusBadRequest, time.Since(start))
		return
	}
	s := h.rt.Get(name)
	if s == nil {
		if !h.rt.IsReady() {
			// Before every source has answered, an unknown name may just not be known yet.
			h.m.CountError("", metrics.ErrTypeNoInstance)
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("service %q: instance discovery has not completed yet", name), name, time.Second)
			h.m.Request("", "", http.StatusServiceUnavailable, time.Since(start))
			return
		}
		h.m.CountError("", metrics.ErrTypeUnknownService)
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown service %q: no discovery source reports it and the configuration does not list it", name), name, 0)
		h.m.Request("", "", http.StatusNotFound, time.Since(start))
		return
	}
	if !s.ActiveFlag.Load() {
		s.Activate(h.ctx, h.wg)
	}
	if s.Config.Strategy == config.StrategyQoS || s.Config.Strategy == config.StrategyProximity {
		s.WaitInit(r.Context()) // these strategies need the initial estimates
	}
	st := &ReqState{Svc: s, Start: start}
	abort := h.forward(w, r, st)
	if st.code == 0 {
		st.code = http.StatusBadGateway
	}
	if st.code == http.StatusOK && st.in != nil && st.in.Series != nil {
		st.in.Series.RequestOK(time.Since(start))
	} else {
		h.m.Request(s.Name, st.instance, st.code, time.Since(start))
	}
	if abort {
		// The answer's body broke off: abort the client's connection so that it sees an
		// error, not a response that looks complete.
		panic(http.ErrAbortHandler)
	}
}

// errConnectRefused is the answer to CONNECT: the proxy is a reverse proxy for the services
// it knows, not a tunnel to wherever a client asks (which a CONNECT forwarded to an instance
// could become), on either server.
const errConnectRefused = "CONNECT is not served: the proxy forwards requests to services, it does not open tunnels"

// forward sends r upstream and copies the answer to w, or answers the failure. It reports
// whether the answer broke off after its headers were sent.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, st *ReqState) (abort bool) {
	ctl := http.NewResponseController(w)
	resp, err := h.up.roundTrip(r, st, ctl)
	if err != nil {
		h.proxyError(w, r, st, err)
		return false
	}
	st.code = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		h.switchProtocols(w, r, st, resp)
		return false
	}
	hdr := w.Header()
	conn := resp.Header["Connection"]
	for k, vv := range resp.Header {
		if pool.HopHeader(k) || (len(conn) > 0 && pool.ConnectionListed(conn, k)) {
			continue
		}
		hdr[k] = vv
	}
	if len(resp.Trailer) > 0 {
		names := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			names = append(names, k)
		}
		hdr["Trailer"] = []string{strings.Join(names, ", ")}
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	flushEach := flusher != nil && (resp.ContentLength == -1 || isEventStream(resp.Header.Get("Content-Type")))
	bp := copyBufs.Get().(*[]byte)
	buf := *bp
	var writeSet time.Time
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if now := time.Now(); h.WriteTimeout > 0 && now.Sub(writeSet) > deadlineSlack {
				// A client that reads nothing of its answer is cut after writeTimeout.
				ctl.SetWriteDeadline(now.Add(h.WriteTimeout))
				writeSet = now
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				break // the client is gone; closing the body closes the connection
			}
			if flushEach {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			for k, vv := range resp.Trailer {
				hdr[k] = vv
			}
			break
		}
		if rerr != nil {
			h.log.Warn("answer broke off", "service", st.Svc.Name, "instance", st.instance, "err", rerr)
			abort = true
			break
		}
	}
	copyBufs.Put(bp)
	resp.Body.Close()
	return abort
}

// isEventStream reports a text/event-stream content type (parameters ignored).
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// switchProtocols completes an Upgrade (WebSocket): it passes the 101 to the client and
// splices the two connections until either side closes.
func (h *Handler) switchProtocols(w http.ResponseWriter, r *http.Request, st *ReqState, resp *http.Response) {
	ub := resp.Body.(*upBody)
	defer ub.Close() // the upstream connection is never pooled after an upgrade (keep false)
	if want, got := pool.UpgradeType(r.Header), resp.Header.Get("Upgrade"); want == "" || !strings.EqualFold(want, got) {
		st.code = http.StatusBadGateway
		writeError(w, http.StatusBadGateway, fmt.Sprintf("instance %s switched to protocol %q when %q was asked for", st.instance, got, want), st.Svc.Name, 0)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		st.code = http.StatusInternalServerError
		writeError(w, http.StatusInternalServerError, "cannot take over the client connection: "+err.Error(), st.Svc.Name, 0)
		return
	}
	defer conn.Close()
	up := ub.uc
	if !h.Upgraded.add(conn, up.C) {
		return // shutting down: the deferred closes end it
	}
	defer h.Upgraded.done(conn, up.C)
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	if err := resp.Header.Write(brw); err != nil {
		return
	}
	brw.WriteString("\r\n")
	if err := brw.Flush(); err != nil {
		return
	}
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(up.C, brw.Reader); errc <- err }() // client -> instance (buffered bytes first)
	go func() { _, err := io.Copy(conn, up.Br); errc <- err }()      // instance -> client
	<-errc
	// One side is done: closing both ends the other copy.
	conn.Close()
	up.C.Close()
	<-errc
}

// proxyError answers a request that got no upstream response.
func (h *Handler) proxyError(w http.ResponseWriter, r *http.Request, st *ReqState, err error) {
	name := st.Svc.Name
	var code int
	var retryAfter time.Duration
	var typ string
	var ni *pool.NoInstanceError
	var ge *gatewayError
	var cb pool.ClientBodyErr
	switch {
	case errors.As(err, &cb):
		// Before the context: net/http cancels it when reading the body fails.
		code, typ = clientBodyStatus(cb)
	case r.Context().Err() != nil:
		// The client is gone; nobody reads an answer. 499 is nginx's code for it.
		code, typ = 499, metrics.ErrTypeClientGone
	case errors.As(err, &ni):
		code, typ, retryAfter = http.StatusServiceUnavailable, metrics.ErrTypeNoInstance, ni.RetryAfter
	case errors.As(err, &ge) && ge.code == http.StatusGatewayTimeout:
		code, typ = http.StatusGatewayTimeout, metrics.ErrTypeTimeout
	case errors.As(err, &ge):
		code, typ = http.StatusBadGateway, metrics.ErrTypeUnreachable
	default:
		code, typ = http.StatusBadGateway, metrics.ErrTypeUnreachable
	}
	st.code = code
	if code == http.StatusServiceUnavailable {
		st.instance = ""
	}
	h.m.CountError(name, typ)
	if code == 499 {
		return
	}
	if code != http.StatusServiceUnavailable {
		h.log.Warn("request failed", "service", name, "status", code, "err", err)
	}
	writeError(w, code, err.Error(), name, retryAfter)
}

// writeError answers with a JSON body {"error": ..., "service": ...}; retryAfter > 0 adds a
// Retry-After header in whole seconds (rounded up).
func writeError(w http.ResponseWriter, code int, msg, service string, retryAfter time.Duration) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		hd.Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
	}
	httpjson.Write(w, code, struct {
		Error   string `json:"error"`
		Service string `json:"service,omitempty"`
	}{msg, service})
}

// SlogWriter routes net/http's log.Logger output (the servers' errors) to slog.
type SlogWriter struct{ Log *slog.Logger }

func (w SlogWriter) Write(p []byte) (int, error) {
	w.Log.Warn(string(trimNewline(p)), "component", "http")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
