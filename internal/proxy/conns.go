package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/http1"
)

// The proxy speaks HTTP/1.1 to instances itself instead of through net/http's Transport and
// httputil.ReverseProxy. Profiles of the proxy at 1k req/s (docs/proxy.md) showed the
// Transport's two goroutines per connection (a request crosses three goroutines and two
// channels each way), its per-request clones of the request and its headers, httptrace hooks
// and context values as a large share of the CPU per request. Here a request is written and
// its answer read by the goroutine serving the client, on a connection taken from a pool of
// keep-alive connections per instance.
//
// What it keeps of the Transport's behaviour: hop-by-hop headers are not forwarded (nor the
// headers the Connection header names); bodies of known length are sent with Content-Length,
// others chunked; responses are read with net/http's parser (chunked, Content-Length or
// until close; HEAD; 1xx interim answers skipped); a connection goes back to the pool only
// after its response body was read to the end and the instance did not ask to close it;
// Upgrade requests (WebSocket) get the 101 and the two connections spliced. A request on a
// pooled connection that fails before any byte of the answer arrived may have met a
// connection the instance had just closed; it is sent again on a fresh connection when that
// is safe (no body, idempotent method), as the Transport does. Expect: 100-continue is
// answered by the proxy's server when the body is first read, and not forwarded.

// upConn is one keep-alive connection to an instance.
type upConn struct {
	c net.Conn
	// tc is c when the instance's URL is https:// (c is then TLS over raw); nil otherwise.
	tc  *tls.Conn
	raw net.Conn
	br  *bufio.Reader
	bw  *bufio.Writer
	// aw is bw's writer: flushRequest sets its await.
	aw *awaitWriter
	// key is the pool's key: the address, prefixed with "https://" for TLS connections.
	key string
	// idleSince is when it went back to the pool.
	idleSince time.Time
	// reused: it carried a request before this one.
	reused bool
	// dl is the deadline set on c (zero: none); see bound.
	dl time.Time
	// slow is the connection's in-flight timer (qos with a latency limit, observeSlow),
	// made once and re-armed per request rather than a timer per request.
	slow slowTimer
	// headLeft, while net/http's parser reads an answer head (readResponse), is how many more
	// bytes br may read from c for it (0: no bound). The loop's parser is bounded by br's size.
	headLeft int64
	// headBytes, while net/http's parser reads an answer head, are the bytes it reads (those
	// buffered before, then each read's), for readResponse's check of the head's framing.
	headBytes []byte
	// watch, while an answer's body is relayed to a loop client, is that client's connection:
	// a read that waits for the instance longer than clientCheckEvery checks that the client
	// is still there (clientGone), and ends the exchange with errClientLeft if it is not.
	watch net.Conn
}

// clientCheckEvery is how long an answer's body may be silent before the loop checks that
// its client is still there. A client that leaves a quiet stream (server-sent events, a long
// poll) frees its max_inflight slot, the goroutine and the instance's connection within
// about this much, rather than when the instance next writes.
const clientCheckEvery = time.Second

// errClientLeft: the client left while its answer's body was relayed (counted as 499, the
// instance not blamed).
var errClientLeft = errors.New("the client closed its connection while the answer streamed")

// maxAnswerHead bounds an answer head read by net/http's parser: as a request head, net/http's
// own 1 MiB and the 4 KiB it allows over it.
const maxAnswerHead = http1.MaxHandoverHead

var errAnswerHeadTooLarge = fmt.Errorf("the instance's answer head is over %d bytes", maxAnswerHead)

// upReader is what an instance connection's read buffer reads c through (headLeft's bound).
type upReader struct{ uc *upConn }

func (r upReader) Read(p []byte) (int, error) {
	uc := r.uc
	if uc.headLeft == 0 {
		if uc.watch == nil {
			return uc.c.Read(p)
		}
		for {
			// The deadline is re-armed at most once per half interval (bound's slack).
			uc.bound(time.Now().Add(clientCheckEvery), clientCheckEvery/2)
			n, err := uc.c.Read(p)
			if n > 0 || err == nil || !isTimeout(err) {
				return n, err
			}
			if clientGone(uc.watch) {
				return 0, errClientLeft
			}
		}
	}
	if uc.headLeft < 0 {
		return 0, errAnswerHeadTooLarge
	}
	if int64(len(p)) > uc.headLeft {
		p = p[:uc.headLeft]
	}
	n, err := uc.c.Read(p)
	uc.headBytes = append(uc.headBytes, p[:n]...)
	if uc.headLeft -= int64(n); uc.headLeft == 0 {
		uc.headLeft = -1
	}
	return n, err
}

// flushRequest writes what bw holds, the end of a request after which the instance sends
// nothing until it answers, and waits for the answer without a read that would find nothing
// (rawConn.writeAwait).
func (uc *upConn) flushRequest() error {
	if uc.bw.Buffered() == 0 {
		return nil
	}
	uc.aw.await = true
	err := uc.bw.Flush()
	uc.aw.await = false
	return err
}

// bound makes c's deadline d, or up to slack later: it re-arms only when the deadline in
// force is earlier than d or later than d+slack. Setting a deadline updates a runtime timer
// under the descriptor's lock; a connection that carries a request every millisecond then
// re-arms once per slack rather than twice per request (set, then cleared when the answer's
// head arrives). The price: a timeout fires up to slack late.
func (uc *upConn) bound(d time.Time, slack time.Duration) {
	if uc.dl.Before(d) || uc.dl.After(d.Add(slack)) {
		uc.dl = d.Add(slack)
		uc.c.SetDeadline(uc.dl)
	}
}

// unbound clears the deadline (a body may take as long as it takes).
func (uc *upConn) unbound() {
	if !uc.dl.IsZero() {
		uc.dl = time.Time{}
		uc.c.SetDeadline(time.Time{})
	}
}

// deadlineSlack is bound's slack for a service's timeout: a sixteenth of it, at most 100 ms.
func deadlineSlackFor(timeout time.Duration) time.Duration {
	return min(timeout/16, 100*time.Millisecond)
}

// slowTimer reports an exchange that has waited longer than the latency limit (observeSlow).
// The exchange arms it when it has its connection and disarms it when the answer's headers
// arrive; disarm says whether it fired, i.e. whether the wait was already recorded.
type slowTimer struct {
	t  *time.Timer
	mu sync.Mutex
	// armed: an exchange is waiting; fired: the timer reported it.
	armed, fired bool
	s            *service
	in           *instance
	epoch        uint64
	since        time.Time
	limit        time.Duration
}

func (st *slowTimer) arm(s *service, in *instance, epoch uint64, since time.Time, limit time.Duration) {
	st.mu.Lock()
	st.armed, st.fired, st.s, st.in, st.epoch, st.since, st.limit = true, false, s, in, epoch, since, limit
	st.mu.Unlock()
	// since may be in the past (an exchange whose body was sent first): the timer runs for
	// what is left of limit.
	d := max(limit-time.Since(since), 0)
	if st.t == nil {
		st.t = time.AfterFunc(d, st.fire)
	} else {
		st.t.Reset(d)
	}
}

func (st *slowTimer) fire() {
	st.mu.Lock()
	if !st.armed || time.Since(st.since) < st.limit {
		// The answer came first; or this is a late run of the previous exchange's timer,
		// the connection having been re-armed for the next one meanwhile.
		st.mu.Unlock()
		return
	}
	st.armed, st.fired = false, true
	s, in, epoch, since := st.s, st.in, st.epoch, st.since
	st.mu.Unlock()
	s.observeSlow(in, epoch, time.Since(since))
}

// disarm stops the timer and reports whether it fired for this exchange.
func (st *slowTimer) disarm() bool {
	if st.t == nil {
		return false
	}
	st.t.Stop()
	st.mu.Lock()
	fired := st.fired
	st.armed, st.fired, st.s, st.in = false, false, nil, nil
	st.mu.Unlock()
	return fired
}

// connPool keeps idle connections per instance address, newest last.
type connPool struct {
	dial dialFunc
	// tlsTimeout bounds a TLS handshake with an https:// instance.
	tlsTimeout time.Duration
	// rootCAs verify https:// instances' certificates (nil: the system's roots).
	rootCAs *x509.CertPool
	mu      sync.Mutex
	idle    map[string][]*upConn
	closed  bool
	maxIdle int
	maxAge  time.Duration
}

// Idle connections kept per instance, and for how long.
const (
	maxIdlePerInstance = 256
	idleConnTimeout    = 90 * time.Second
)

func newConnPool(dial dialFunc, tlsTimeout time.Duration) *connPool {
	return &connPool{dial: dial, tlsTimeout: tlsTimeout, idle: map[string][]*upConn{}, maxIdle: maxIdlePerInstance, maxAge: idleConnTimeout}
}

// get returns an idle connection to addr, or dials one; with tlsName set (an https://
// instance) the connection is TLS, verified against the system's roots for that name, as the
// probes' http.Transport does (the proxy's own transport never sends plaintext to an https://
// URL). A pooled connection is first peeked at (a non-blocking read, idle): one the instance
// has closed, or on which it sent anything while nothing was asked of it, is closed and the
// next one tried. Bytes that came unasked are never read as the next request's answer — they
// would be another exchange's, or none (net/http's Transport closes such a connection:
// "Unsolicited response received on idle HTTP channel"). What an instance sends after the
// peek, before the request reaches it, cannot be told from an answer by anyone; the peek
// closes the window up to then.
func (p *connPool) get(ctx context.Context, addr, tlsName string) (*upConn, error) {
	now := time.Now()
	key := addr
	if tlsName != "" {
		key = tlsKey(addr)
	}
	for {
		p.mu.Lock()
		list := p.idle[key]
		var uc *upConn
		if n := len(list); n > 0 {
			uc = list[n-1]
			list[n-1] = nil
			p.idle[key] = list[:n-1]
		}
		p.mu.Unlock()
		if uc == nil {
			break
		}
		if !uc.dl.IsZero() && !now.Before(uc.dl) {
			uc.unbound() // an expired deadline would fail the usability check below
		}
		if now.Sub(uc.idleSince) < p.maxAge && uc.idleUsable() {
			uc.reused = true
			return uc, nil
		}
		uc.c.Close()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c = rawTCP(c)
	uc := &upConn{c: c, raw: c, key: key}
	if tlsName != "" {
		tc := tls.Client(c, &tls.Config{ServerName: tlsName, RootCAs: p.rootCAs, MinVersion: tls.VersionTLS12})
		hctx, cancel := context.WithTimeout(ctx, p.tlsTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			c.Close()
			// The request was not sent: a failure to establish the connection (retried
			// elsewhere for any method, isDialError).
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: c.RemoteAddr(), Err: fmt.Errorf("TLS handshake with %s: %w", tlsName, err)}
		}
		uc.c, uc.tc = tc, tc
	}
	uc.aw = newAwaitWriter(uc.c)
	uc.bw = bufio.NewWriterSize(uc.aw, 4<<10)
	uc.br = bufio.NewReaderSize(upReader{uc}, 4<<10)
	return uc, nil
}

// tlsKey is the pool key of TLS connections to addr.
func tlsKey(addr string) string { return "https://" + addr }

// idleUsable: the pooled connection is open and the instance sent nothing on it while it was
// idle. A TLS connection is also checked for decrypted bytes crypto/tls holds (a read with a
// deadline in the past returns them, or a timeout without touching the socket), and is
// closed when records wait on the socket: they may be a late session ticket, but may be
// anything, and telling them apart would mean waiting for them.
func (uc *upConn) idleUsable() bool {
	if !idleUsable(uc.raw) {
		return false
	}
	if uc.tc == nil {
		return true
	}
	uc.tc.SetReadDeadline(aLongTimeAgo)
	var b [1]byte
	n, err := uc.tc.Read(b[:])
	uc.tc.SetDeadline(time.Time{})
	uc.dl = time.Time{}
	return n == 0 && isTimeout(err)
}

// put returns a connection whose exchange completed cleanly: the answer was read exactly to
// the end its framing gives, and the instance did not ask to close. It is the one way into the
// pool, and it keeps a connection only if nothing is buffered past that end: bytes there
// (past a Content-Length, a body on a HEAD, 204 or 304 answer) belong to no request, and the
// next request on the connection would read them as its answer — another client's bytes.
func (p *connPool) put(uc *upConn) {
	if uc.br.Buffered() > 0 {
		uc.c.Close()
		return
	}
	uc.idleSince = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle[uc.key]) >= p.maxIdle {
		p.mu.Unlock()
		uc.c.Close()
		return
	}
	p.idle[uc.key] = append(p.idle[uc.key], uc)
	p.mu.Unlock()
}

// CloseIdleConnections closes the pooled connections.
func (p *connPool) CloseIdleConnections() {
	p.mu.Lock()
	idle := p.idle
	p.idle = map[string][]*upConn{}
	p.mu.Unlock()
	for _, list := range idle {
		for _, uc := range list {
			uc.c.Close()
		}
	}
}

// close closes the idle connections and keeps no more.
func (p *connPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.CloseIdleConnections()
}

// forget closes the idle connections to addr (an instance discovery no longer reports).
func (p *connPool) forget(addr string) {
	p.mu.Lock()
	list := append(p.idle[addr], p.idle[tlsKey(addr)]...)
	delete(p.idle, addr)
	delete(p.idle, tlsKey(addr))
	p.mu.Unlock()
	for _, uc := range list {
		uc.c.Close()
	}
}

// hopHeader reports the hop-by-hop headers (RFC 9110 7.6.1) that a proxy does not forward.
func hopHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// connectionListed reports whether the Connection header values name k (case-insensitively).
func connectionListed(conn []string, k string) bool {
	for _, v := range conn {
		for v != "" {
			var f string
			f, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(f), k) {
				return true
			}
		}
	}
	return false
}

// upgradeType is the protocol an Upgrade request asks for ("" if it is not one).
func upgradeType(h http.Header) string {
	if !connectionListed(h["Connection"], "upgrade") {
		return ""
	}
	return h.Get("Upgrade")
}

// writeRequest writes r's head (and body) to uc as the proxy forwards it: hop-by-hop headers
// dropped, X-Forwarded-For appended to, X-Forwarded-Host and -Proto set, the body framed by
// its length or chunked.
func writeRequest(uc *upConn, r *http.Request, body io.Reader, instHost, upgrade string, buf []byte) error {
	bw := uc.bw
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(originForm(r))
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	host := r.Host
	if host == "" {
		host = instHost // an HTTP/1.0 client that named the service by header only
	}
	bw.WriteString(host)
	bw.WriteString("\r\n")
	conn := r.Header["Connection"]
	var xff []string
	for k, vv := range r.Header {
		switch k {
		case "X-Forwarded-For":
			xff = vv
			continue
		case "Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "Expect", "Content-Length", "Host":
			continue
		case "Te":
			// "TE: trailers" is the one value that passes (gRPC needs it).
			if connectionListed(vv, "trailers") {
				bw.WriteString("Te: trailers\r\n")
			}
			continue
		}
		if hopHeader(k) || (len(conn) > 0 && connectionListed(conn, k)) {
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("X-Forwarded-For: ")
	for _, v := range xff {
		bw.WriteString(v)
		bw.WriteString(", ")
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	bw.WriteString(host)
	bw.WriteString("\r\nX-Forwarded-Host: ")
	bw.WriteString(r.Host)
	if r.TLS != nil {
		bw.WriteString("\r\nX-Forwarded-Proto: https\r\n")
	} else {
		bw.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	}
	if upgrade != "" {
		bw.WriteString("Connection: Upgrade\r\nUpgrade: ")
		bw.WriteString(upgrade)
		bw.WriteString("\r\n")
	}
	hasBody := body != nil
	switch {
	case hasBody && r.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.ContentLength, 10))
		bw.WriteString("\r\n\r\n")
		if n, err := io.CopyBuffer(bw, io.LimitReader(body, r.ContentLength), buf); err != nil {
			return err
		} else if n < r.ContentLength {
			return clientBodyError(io.ErrUnexpectedEOF)
		}
	case hasBody && r.ContentLength < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		cw := httputil.NewChunkedWriter(bw)
		if _, err := io.CopyBuffer(cw, body, buf); err != nil {
			return err
		}
		cw.Close()
		bw.WriteString("\r\n")
	default:
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			bw.WriteString("Content-Length: 0\r\n")
		}
		bw.WriteString("\r\n")
	}
	return bw.Flush()
}

// originForm is the request target as the client sent it, in origin form (the path and query
// of an absolute-form target, as sent). Never r.URL re-encoded: net/http's URL decodes the path
// and EscapedPath encodes it again its own way ("%2F" becomes "/" for an absolute-form target,
// "{" becomes "%7B"), so the instance would see another path than the one routing saw and the
// client sent, as the loop forwards its bytes untouched.
func originForm(r *http.Request) string {
	u := r.RequestURI
	if strings.HasPrefix(u, "/") {
		return u
	}
	if _, rest, ok := strings.Cut(u, "://"); ok {
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			if rest[i] == '?' {
				return "/" + rest[i:]
			}
			return rest[i:]
		}
		return "/"
	}
	return r.URL.RequestURI() // "*" (OPTIONS) and the like
}

// errNoAnswer: the instance closed the connection before any byte of an answer.
var errNoAnswer = errors.New("connection closed before an answer")

// readResponse reads the instance's answer headers, skipping 1xx interim answers but 101.
func readResponse(uc *upConn, r *http.Request) (*http.Response, error) {
	for {
		uc.headLeft = maxAnswerHead
		b, _ := uc.br.Peek(uc.br.Buffered())
		uc.headBytes = append(uc.headBytes[:0], b...)
		resp, err := http.ReadResponse(uc.br, r)
		uc.headLeft = 0
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, errNoAnswer
			}
			return nil, err
		}
		n, _ := http1.HeadEnd(uc.headBytes, 0)
		twoWays := n > 0 && http1.AnswerFramedTwoWays(uc.headBytes[:n])
		if cap(uc.headBytes) > 16<<10 {
			uc.headBytes = nil // a long head's bytes are not kept with the connection
		}
		if twoWays {
			return nil, http1.ErrAnswerFraming // the body is not drained: the caller closes the connection
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body.Close()
	}
}
