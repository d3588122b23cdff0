package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
	"github.com/continuum-project/continuum/internal/proxy/pool"
)

// serveRequest serves the request whose head (n bytes) cc.req holds, as handler.ServeHTTP
// does for net/http's requests: route, forward, answer. It reports whether the connection
// can carry another request.
func (cc *clientConn) serveRequest(n int) (keep bool) {
	h := cc.srv.h
	start := time.Now()
	q := &cc.req
	cc.headLen, cc.headConsumed, cc.bodyDone = n, false, q.Length == 0
	cc.isHead = string(q.Method) == http.MethodHead
	keepClient := !q.CloseAfter
	defer func() {
		cc.consumeHead()
		cc.upc.Store(nil)
		cc.inBody, cc.bodyDL = false, time.Time{}
		if !cc.bodyDone {
			keep = false // an unread body stands between this request and the next
		}
	}()
	if h.maxInflight > 0 {
		k := h.Inflight.Add(1)
		defer h.Inflight.Add(-1)
		if k > h.maxInflight {
			h.m.CountError("", metrics.ErrTypeOverloaded)
			h.m.Request("", "", http.StatusServiceUnavailable, time.Since(start))
			return cc.answerError(http.StatusServiceUnavailable, fmt.Sprintf("proxy overloaded: more than %d requests in flight (max_inflight)", h.maxInflight), "", time.Second, keepClient)
		}
	}
	if string(q.Method) == http.MethodConnect {
		h.m.CountError("", metrics.ErrTypeBadRequest)
		h.m.Request("", "", http.StatusMethodNotAllowed, time.Since(start))
		return cc.answerError(http.StatusMethodNotAllowed, errConnectRefused, "", 0, false)
	}
	s, code, msg, retry := cc.route()
	if s == nil {
		return cc.answerError(code, msg, string(cc.lastName), retry, keepClient)
	}
	if !s.ActiveFlag.Load() {
		s.Activate(h.ctx, h.wg)
	}
	if s.Config.Strategy == config.StrategyQoS || s.Config.Strategy == config.StrategyProximity {
		s.WaitInit(context.Background()) // these strategies need the initial estimates
	}
	st := ReqState{Svc: s, Start: start}
	uc, upKeep, _, err := h.up.tryInstances(cc, &st)
	if err != nil {
		code, typ, retryAfter := classifyProxyError(err, nil)
		st.code = code
		if code == http.StatusServiceUnavailable {
			st.instance = ""
		}
		h.m.CountError(s.Name, typ)
		if code != http.StatusServiceUnavailable {
			h.log.Warn("request failed", "service", s.Name, "status", code, "err", err)
		}
		h.m.Request(s.Name, st.instance, code, time.Since(start))
		return cc.answerError(code, err.Error(), s.Name, retryAfter, keepClient)
	}
	cc.consumeHead()
	st.code = cc.respStatus()
	keepClient, upKeep, err = cc.relayAnswer(uc, st.in, keepClient, upKeep)
	uc.Watch = nil
	st.in.Outstanding.Add(-1)
	if upKeep && err == nil {
		s.Conns.Put(uc)
	} else {
		uc.C.Close()
	}
	if cc.fbResp != nil {
		cc.fbResp = nil
	}
	if err != nil && errors.Is(err, pool.ErrClientLeft) {
		// Counted as net/http's path counts a client that left: nobody reads an answer any
		// more (nginx's 499); not the instance's failure.
		st.code = 499
		h.m.CountError(s.Name, metrics.ErrTypeClientGone)
	}
	if st.code == http.StatusOK && st.in.Series != nil {
		st.in.Series.RequestOK(time.Since(start))
	} else {
		h.m.Request(s.Name, st.instance, st.code, time.Since(start))
	}
	if err != nil {
		var ue http1.UpstreamBodyError
		if errors.As(err, &ue) && !errors.Is(err, pool.ErrClientLeft) {
			h.log.Warn("answer broke off", "service", s.Name, "instance", st.instance, "err", ue.Err)
		}
		return false
	}
	return keepClient
}

// route finds the service the request names. Without one it returns the status, message and
// Retry-After of the answer.
func (cc *clientConn) route() (s *pool.Service, code int, msg string, retry time.Duration) {
	h := cc.srv.h
	q := &cc.req
	var name []byte
	if q.NService == 1 {
		name = q.Service
	} else if q.NService == 0 {
		name = serviceLabel(q.Host)
	}
	if name != nil && len(name) <= 253 {
		if cc.lastSvc != nil && asciiEqualFoldBytes(name, cc.lastName) {
			return cc.lastSvc, 0, "", 0
		}
		var lower [253]byte
		if l, ok := lowerServiceName(lower[:0], name); ok {
			if s := h.rt.GetBytes(l); s != nil {
				cc.lastName, cc.lastSvc = append(cc.lastName[:0], l...), s
				return s, 0, "", 0
			}
		}
	}
	// The slow way, with net/http's semantics and messages.
	var hdr []string
	for _, f := range q.Fields {
		if http1.FieldIs(f.Name, http1.ServiceHeader) {
			hdr = append(hdr, string(f.Value))
		}
	}
	cc.lastName, cc.lastSvc = cc.lastName[:0], nil
	nm, err := http1.ServiceName(hdr, string(q.Host))
	if err != nil {
		h.m.CountError("", metrics.ErrTypeBadRequest)
		h.m.Request("", "", http.StatusBadRequest, 0)
		return nil, http.StatusBadRequest, err.Error(), 0
	}
	if s := h.rt.Get(nm); s != nil {
		cc.lastName, cc.lastSvc = append(cc.lastName[:0], nm...), s
		return s, 0, "", 0
	}
	cc.lastName = append(cc.lastName[:0], nm...)
	if !h.rt.IsReady() {
		h.m.CountError("", metrics.ErrTypeNoInstance)
		h.m.Request("", "", http.StatusServiceUnavailable, 0)
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("service %q: instance discovery has not completed yet", nm), time.Second
	}
	h.m.CountError("", metrics.ErrTypeUnknownService)
	h.m.Request("", "", http.StatusNotFound, 0)
	return nil, http.StatusNotFound, fmt.Sprintf("unknown service %q: no discovery source reports it and the configuration does not list it", nm), 0
}

// serviceLabel is the Host's first label when it can name a service without more checks
// (letters, digits, '-', '_' before the first '.' or ':'), else nil (serviceName decides).
func serviceLabel(host []byte) []byte {
	for i, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9', c == '-' || c == '_':
			if i == 0 && (c == '-' || c == '_') {
				return nil
			}
		case c == '.' || c == ':':
			if i == 0 || allDigits(host[:i]) {
				return nil // an IPv4 address names no service
			}
			return host[:i]
		default:
			return nil
		}
	}
	if len(host) == 0 || allDigits(host) {
		return nil
	}
	return host
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lowerServiceName appends the lower-cased name to dst if it is a valid service name
// (discovery.ValidServiceName).
func lowerServiceName(dst, name []byte) ([]byte, bool) {
	if len(name) == 0 {
		return nil, false
	}
	for i, c := range name {
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.'):
		default:
			return nil, false
		}
		dst = append(dst, c)
	}
	return dst, true
}

func asciiEqualFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// consumeHead drops the request head from the read buffer (once). Until then its fields
// point into the buffer, which is why a request is resent from them, and why the body is
// read only after the head was written on.
func (cc *clientConn) consumeHead() {
	if !cc.headConsumed {
		cc.br.Discard(cc.headLen)
		cc.headConsumed = true
	}
}

// The loop's request as an exchange (transport.go).

func (cc *clientConn) context() context.Context { return nil }
func (cc *clientConn) method() string           { return methodString(cc.req.Method) }
func (cc *clientConn) hasBody() bool            { return cc.req.Length != 0 }
func (cc *clientConn) clock() *uploadClock      { return &cc.up }

// using records the instance connection the request uses (closeAll cuts it at shutdown).
func (cc *clientConn) using(uc *pool.UpConn) {
	cc.upc.Store(uc)
	if cc.srv.cut.Load() {
		uc.C.Close() // closeAll ran before the store
	}
}

// methodString avoids an allocation for the common methods.
func methodString(m []byte) string {
	switch string(m) {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	case http.MethodPatch:
		return http.MethodPatch
	}
	return string(m)
}

// send writes the request on to the instance as the proxy forwards it: hop-by-hop fields
// dropped (and those the Connection field names), X-Forwarded-For appended to,
// X-Forwarded-Host and -Proto set, the body framed by its length or chunked.
func (cc *clientConn) send(uc *pool.UpConn, instHost string) error {
	q := &cc.req
	bw := uc.Bw
	bw.Write(q.Method)
	bw.WriteByte(' ')
	bw.Write(q.URI)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	if q.HasHost && len(q.Host) > 0 {
		bw.Write(q.Host)
	} else {
		bw.WriteString(instHost) // an HTTP/1.0 client that named the service by header only
	}
	bw.WriteString("\r\n")
	nXFF := 0
	for _, f := range q.Fields {
		switch {
		case http1.FieldIs(f.Name, "X-Forwarded-For"):
			nXFF++
			continue
		case http1.FieldIs(f.Name, "Host"), http1.FieldIs(f.Name, "Content-Length"), http1.FieldIs(f.Name, "Expect"),
			http1.FieldIs(f.Name, "Forwarded"), http1.FieldIs(f.Name, "X-Forwarded-Host"), http1.FieldIs(f.Name, "X-Forwarded-Proto"):
			continue
		case http1.FieldIs(f.Name, "Te"):
			// "TE: trailers" is the one value that passes (gRPC needs it).
			if listedTokens(f.Value, "trailers") {
				bw.WriteString("Te: trailers\r\n")
			}
			continue
		case http1.HopField(f.Name), q.ConnTokens && http1.ListedIn(q.Fields, f.Name):
			continue
		}
		bw.Write(f.Name)
		bw.WriteString(": ")
		bw.Write(f.Value)
		bw.WriteString("\r\n")
	}
	bw.WriteString("X-Forwarded-For: ")
	if nXFF > 0 {
		for _, f := range q.Fields {
			if http1.FieldIs(f.Name, "X-Forwarded-For") {
				bw.Write(f.Value)
				bw.WriteString(", ")
			}
		}
	}
	bw.WriteString(cc.remoteHost)
	bw.WriteString("\r\nX-Forwarded-Host: ")
	bw.Write(q.Host)
	bw.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	switch {
	case q.Length > 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), q.Length, 10))
		bw.WriteString("\r\n\r\n")
		if err := cc.startBody(); err != nil {
			return err
		}
		if err := http1.CopyN(bw, cc.br, q.Length, pool.ClientBodyError); err != nil {
			return err
		}
		cc.bodyDone, cc.inBody = true, false
	case q.Length < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		if err := cc.startBody(); err != nil {
			return err
		}
		if err := http1.CopyChunked(bw, cc.br, true, false, pool.ClientBodyError); err != nil {
			return err
		}
		cc.bodyDone, cc.inBody = true, false
	default:
		switch string(q.Method) {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			bw.WriteString("Content-Length: 0\r\n")
		}
		bw.WriteString("\r\n")
		// No body: the instance has been sent nothing since its last answer was read whole,
		// so nothing else can be pending on the connection.
		return uc.FlushRequest()
	}
	return bw.Flush()
}

// listedTokens reports whether the comma-separated list v holds tok (ASCII case ignored).
func listedTokens(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		t, v = http1.NextToken(v)
		if http1.ASCIIEqualFold(t, tok) {
			return true
		}
	}
	return false
}

// startBody is called when the head has been written on and the body is next: the head's
// bytes are dropped, 100 Continue is sent to a client that waits for it, and the body's reads
// go through the upload clock (clientReader): each read bounded by its idle time, its waits
// not the instance's.
func (cc *clientConn) startBody() error {
	cc.consumeHead()
	if cc.req.Expect && cc.req.Minor == 1 {
		cc.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := cc.bw.Flush(); err != nil {
			return pool.ClientBodyError(err)
		}
	}
	cc.inBody, cc.bodyDL = true, time.Time{}
	return nil
}

// clientBodyStatus is the answer to a request whose body broke off: 408 when it stalled past
// its bound, else 400.
func clientBodyStatus(cb pool.ClientBodyErr) (int, string) {
	var stalled clientStalled
	if errors.As(cb.Err, &stalled) {
		return http.StatusRequestTimeout, metrics.ErrTypeClientTimeout
	}
	return http.StatusBadRequest, metrics.ErrTypeBadRequest
}

// classifyProxyError maps a failure without an answer to its status, error type (metrics)
// and Retry-After. ctx is the client's context (nil: not watched).
func classifyProxyError(err error, ctx context.Context) (code int, typ string, retryAfter time.Duration) {
	var ni *pool.NoInstanceError
	var ge *gatewayError
	var cb pool.ClientBodyErr
	switch {
	case ctx != nil && ctx.Err() != nil:
		// The client is gone; nobody reads an answer. 499 is nginx's code for it.
		return 499, metrics.ErrTypeClientGone, 0
	case errors.As(err, &cb):
		code, typ := clientBodyStatus(cb)
		return code, typ, 0
	case errors.As(err, &ni):
		return http.StatusServiceUnavailable, metrics.ErrTypeNoInstance, ni.RetryAfter
	case errors.As(err, &ge) && ge.code == http.StatusGatewayTimeout:
		return http.StatusGatewayTimeout, metrics.ErrTypeTimeout, 0
	}
	return http.StatusBadGateway, metrics.ErrTypeUnreachable, 0
}
