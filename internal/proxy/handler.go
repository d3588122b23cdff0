package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// handler is the data plane: it routes each request to a service's instance through
// httputil.ReverseProxy, whose Transport (upstream) picks the instance. Status, headers (but
// hop-by-hop ones) and body pass through; bodies of unknown length and event streams are
// flushed as they arrive.
type handler struct {
	rt  *router
	m   *metrics
	log *slog.Logger
	rp  *httputil.ReverseProxy
	// maxInflight caps inflight (0: no cap).
	maxInflight int64
	inflight    atomic.Int64
	// ctx and wg own the services' background work, started by their first request.
	ctx context.Context
	wg  *sync.WaitGroup
}

func newHandler(ctx context.Context, wg *sync.WaitGroup, rt *router, m *metrics, logger *slog.Logger, maxInflight int) *handler {
	h := &handler{rt: rt, m: m, log: logger, ctx: ctx, wg: wg, maxInflight: int64(maxInflight)}
	h.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Append to a chain of proxies rather than replace it.
			pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			pr.SetXForwarded()
		},
		Transport: &upstream{m: m},
		// 16 KiB rather than ReverseProxy's 32: a buffer is held per response being copied,
		// and the proxy's memory under load is mostly per-request buffers.
		BufferPool: bufferPool{&sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}},
		ModifyResponse: func(resp *http.Response) error {
			if st := stateOf(resp.Request); st != nil {
				st.code = resp.StatusCode
			}
			return nil
		},
		ErrorHandler: h.proxyError,
		ErrorLog:     log.New(slogWriter{logger}, "", 0),
	}
	return h
}

// ServeHTTP never panics on input: every way a request can be malformed ends in a 4xx here
// or in net/http before it.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if h.maxInflight > 0 {
		n := h.inflight.Add(1)
		defer h.inflight.Add(-1)
		if n > h.maxInflight {
			h.m.error("", errTypeOverloaded)
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("proxy overloaded: more than %d requests in flight (max_inflight)", h.maxInflight), "", time.Second)
			h.m.request("", "", http.StatusServiceUnavailable, time.Since(start))
			return
		}
	}
	name, err := serviceName(r.Header.Values(ServiceHeader), r.Host)
	if err != nil {
		h.m.error("", errTypeBadRequest)
		writeError(w, http.StatusBadRequest, err.Error(), "", 0)
		h.m.request("", "", http.StatusBadRequest, time.Since(start))
		return
	}
	s := h.rt.get(name)
	if s == nil {
		if !h.rt.isReady() {
			// Before every source has answered, an unknown name may just not be known yet.
			h.m.error("", errTypeNoInstance)
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("service %q: instance discovery has not completed yet", name), name, time.Second)
			h.m.request("", "", http.StatusServiceUnavailable, time.Since(start))
			return
		}
		h.m.error("", errTypeUnknownService)
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown service %q: no discovery source reports it and the configuration does not list it", name), name, 0)
		h.m.request("", "", http.StatusNotFound, time.Since(start))
		return
	}
	if !s.activeFlag.Load() {
		s.activate(h.ctx, h.wg)
	}
	if s.cfg.Strategy == StrategyQoS || s.cfg.Strategy == StrategyProximity {
		s.waitInit(r.Context()) // these strategies need the initial estimates
	}
	st := &reqState{svc: s, start: start}
	h.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	if st.code == 0 {
		st.code = http.StatusBadGateway
	}
	h.m.request(s.name, st.instance, st.code, time.Since(start))
}

// proxyError answers a request that got no upstream response.
func (h *handler) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r)
	name := ""
	if st != nil {
		name = st.svc.name
	}
	var code int
	var retryAfter time.Duration
	var typ string
	var ni *noInstanceError
	var ge *gatewayError
	switch {
	case r.Context().Err() != nil:
		// The client is gone; nobody reads an answer. 499 is nginx's code for it.
		code, typ = 499, errTypeClientGone
	case errors.As(err, &ni):
		code, typ, retryAfter = http.StatusServiceUnavailable, errTypeNoInstance, ni.retryAfter
	case errors.As(err, &ge) && ge.code == http.StatusGatewayTimeout:
		code, typ = http.StatusGatewayTimeout, errTypeTimeout
	case errors.As(err, &ge):
		code, typ = http.StatusBadGateway, errTypeUnreachable
	default:
		code, typ = http.StatusBadGateway, errTypeUnreachable
	}
	if st != nil {
		st.code = code
		if code == http.StatusServiceUnavailable {
			st.instance = ""
		}
	}
	h.m.error(name, typ)
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
	body, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Service string `json:"service,omitempty"`
	}{msg, service})
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		hd.Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// bufferPool recycles ReverseProxy's copy buffers, which would otherwise be a 32 KiB
// allocation per request.
type bufferPool struct{ p *sync.Pool }

func (b bufferPool) Get() []byte    { return *b.p.Get().(*[]byte) }
func (b bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// slogWriter routes ReverseProxy's log.Logger output (body copy errors) to slog.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Warn(string(trimNewline(p)), "component", "reverseproxy")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
