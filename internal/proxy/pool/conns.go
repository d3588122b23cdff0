package pool

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
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

// UpConn is one keep-alive connection to an instance.
type UpConn struct {
	C net.Conn
	// tc is c when the instance's URL is https:// (c is then TLS over raw); nil otherwise.
	tc  *tls.Conn
	raw net.Conn
	Br  *bufio.Reader
	Bw  *bufio.Writer
	// aw is bw's writer: flushRequest sets its await.
	aw *awaitWriter
	// key is the pool's key: the address, prefixed with "https://" for TLS connections.
	key string
	// idleSince is when it went back to the pool.
	idleSince time.Time
	// reused: it carried a request before this one.
	Reused bool
	// dl is the deadline set on c (zero: none); see bound.
	dl time.Time
	// Slow is the connection's in-flight timer (qos with a latency limit, observeSlow),
	// made once and re-armed per request rather than a timer per request.
	Slow slowTimer
	// headLeft, while net/http's parser reads an answer head (readResponse), is how many more
	// bytes br may read from c for it (0: no bound). The loop's parser is bounded by br's size.
	headLeft int64
	// headBytes, while net/http's parser reads an answer head, are the bytes it reads (those
	// buffered before, then each read's), for readResponse's check of the head's framing.
	headBytes []byte
	// watch, while an answer's body is relayed to a loop client, is that client's connection:
	// a read that waits for the instance longer than clientCheckEvery checks that the client
	// is still there (clientGone), and ends the exchange with errClientLeft if it is not.
	Watch net.Conn
}

// clientCheckEvery is how long an answer's body may be silent before the loop checks that
// its client is still there. A client that leaves a quiet stream (server-sent events, a long
// poll) frees its max_inflight slot, the goroutine and the instance's connection within
// about this much, rather than when the instance next writes.
const clientCheckEvery = time.Second

// errClientLeft: the client left while its answer's body was relayed (counted as 499, the
// instance not blamed).
var ErrClientLeft = errors.New("the client closed its connection while the answer streamed")

// maxAnswerHead bounds an answer head read by net/http's parser: as a request head, net/http's
// own 1 MiB and the 4 KiB it allows over it.
const maxAnswerHead = http1.MaxHandoverHead

var errAnswerHeadTooLarge = fmt.Errorf("the instance's answer head is over %d bytes", maxAnswerHead)

// upReader is what an instance connection's read buffer reads c through (headLeft's bound).
type upReader struct{ uc *UpConn }

func (r upReader) Read(p []byte) (int, error) {
	uc := r.uc
	if uc.headLeft == 0 {
		if uc.Watch == nil {
			return uc.C.Read(p)
		}
		for {
			// The deadline is re-armed at most once per half interval (bound's slack).
			uc.Bound(time.Now().Add(clientCheckEvery), clientCheckEvery/2)
			n, err := uc.C.Read(p)
			if n > 0 || err == nil || !IsTimeout(err) {
				return n, err
			}
			if clientGone(uc.Watch) {
				return 0, ErrClientLeft
			}
		}
	}
	if uc.headLeft < 0 {
		return 0, errAnswerHeadTooLarge
	}
	if int64(len(p)) > uc.headLeft {
		p = p[:uc.headLeft]
	}
	n, err := uc.C.Read(p)
	uc.headBytes = append(uc.headBytes, p[:n]...)
	if uc.headLeft -= int64(n); uc.headLeft == 0 {
		uc.headLeft = -1
	}
	return n, err
}

// FlushRequest writes what bw holds, the end of a request after which the instance sends
// nothing until it answers, and waits for the answer without a read that would find nothing
// (rawConn.writeAwait).
func (uc *UpConn) FlushRequest() error {
	if uc.Bw.Buffered() == 0 {
		return nil
	}
	uc.aw.await = true
	err := uc.Bw.Flush()
	uc.aw.await = false
	return err
}

// Bound makes c's deadline d, or up to slack later: it re-arms only when the deadline in
// force is earlier than d or later than d+slack. Setting a deadline updates a runtime timer
// under the descriptor's lock; a connection that carries a request every millisecond then
// re-arms once per slack rather than twice per request (set, then cleared when the answer's
// head arrives). The price: a timeout fires up to slack late.
func (uc *UpConn) Bound(d time.Time, slack time.Duration) {
	if uc.dl.Before(d) || uc.dl.After(d.Add(slack)) {
		uc.dl = d.Add(slack)
		uc.C.SetDeadline(uc.dl)
	}
}

// Unbound clears the deadline (a body may take as long as it takes).
func (uc *UpConn) Unbound() {
	if !uc.dl.IsZero() {
		uc.dl = time.Time{}
		uc.C.SetDeadline(time.Time{})
	}
}

// deadlineSlack is bound's slack for a service's timeout: a sixteenth of it, at most 100 ms.
func DeadlineSlackFor(timeout time.Duration) time.Duration {
	return min(timeout/16, 100*time.Millisecond)
}

// ConnPool keeps idle connections per instance address, newest last.
type ConnPool struct {
	dial DialFunc
	// tlsTimeout bounds a TLS handshake with an https:// instance.
	tlsTimeout time.Duration
	// rootCAs verify https:// instances' certificates (nil: the system's roots).
	rootCAs *x509.CertPool
	mu      sync.Mutex
	idle    map[string][]*UpConn
	closed  bool
	maxIdle int
	maxAge  time.Duration
}

// Idle connections kept per instance, and for how long.
const (
	maxIdlePerInstance = 256
	idleConnTimeout    = 90 * time.Second
)

func newConnPool(dial DialFunc, tlsTimeout time.Duration) *ConnPool {
	return &ConnPool{dial: dial, tlsTimeout: tlsTimeout, idle: map[string][]*UpConn{}, maxIdle: maxIdlePerInstance, maxAge: idleConnTimeout}
}

// Get returns an idle connection to addr, or dials one; with tlsName set (an https://
// instance) the connection is TLS, verified against the system's roots for that name, as the
// probes' http.Transport does (the proxy's own transport never sends plaintext to an https://
// URL). A pooled connection is first peeked at (a non-blocking read, idle): one the instance
// has closed, or on which it sent anything while nothing was asked of it, is closed and the
// next one tried. Bytes that came unasked are never read as the next request's answer — they
// would be another exchange's, or none (net/http's Transport closes such a connection:
// "Unsolicited response received on idle HTTP channel"). What an instance sends after the
// peek, before the request reaches it, cannot be told from an answer by anyone; the peek
// closes the window up to then.
func (p *ConnPool) Get(ctx context.Context, addr, tlsName string) (*UpConn, error) {
	now := time.Now()
	key := addr
	if tlsName != "" {
		key = tlsKey(addr)
	}
	for {
		p.mu.Lock()
		list := p.idle[key]
		var uc *UpConn
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
			uc.Unbound() // an expired deadline would fail the usability check below
		}
		if now.Sub(uc.idleSince) < p.maxAge && uc.idleUsable() {
			uc.Reused = true
			return uc, nil
		}
		uc.C.Close()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c = RawTCP(c)
	uc := &UpConn{C: c, raw: c, key: key}
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
		uc.C, uc.tc = tc, tc
	}
	uc.aw = newAwaitWriter(uc.C)
	uc.Bw = bufio.NewWriterSize(uc.aw, 4<<10)
	uc.Br = bufio.NewReaderSize(upReader{uc}, 4<<10)
	return uc, nil
}

// tlsKey is the pool key of TLS connections to addr.
func tlsKey(addr string) string { return "https://" + addr }

// idleUsable: the pooled connection is open and the instance sent nothing on it while it was
// idle. A TLS connection is also checked for decrypted bytes crypto/tls holds (a read with a
// deadline in the past returns them, or a timeout without touching the socket), and is
// closed when records wait on the socket: they may be a late session ticket, but may be
// anything, and telling them apart would mean waiting for them.
func (uc *UpConn) idleUsable() bool {
	if !idleUsable(uc.raw) {
		return false
	}
	if uc.tc == nil {
		return true
	}
	uc.tc.SetReadDeadline(ALongTimeAgo)
	var b [1]byte
	n, err := uc.tc.Read(b[:])
	uc.tc.SetDeadline(time.Time{})
	uc.dl = time.Time{}
	return n == 0 && IsTimeout(err)
}

// Put returns a connection whose exchange completed cleanly: the answer was read exactly to
// the end its framing gives, and the instance did not ask to close. It is the one way into the
// pool, and it keeps a connection only if nothing is buffered past that end: bytes there
// (past a Content-Length, a body on a HEAD, 204 or 304 answer) belong to no request, and the
// next request on the connection would read them as its answer — another client's bytes.
func (p *ConnPool) Put(uc *UpConn) {
	if uc.Br.Buffered() > 0 {
		uc.C.Close()
		return
	}
	uc.idleSince = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle[uc.key]) >= p.maxIdle {
		p.mu.Unlock()
		uc.C.Close()
		return
	}
	p.idle[uc.key] = append(p.idle[uc.key], uc)
	p.mu.Unlock()
}

// CloseIdleConnections closes the pooled connections.
func (p *ConnPool) CloseIdleConnections() {
	p.mu.Lock()
	idle := p.idle
	p.idle = map[string][]*UpConn{}
	p.mu.Unlock()
	for _, list := range idle {
		for _, uc := range list {
			uc.C.Close()
		}
	}
}

// close closes the idle connections and keeps no more.
func (p *ConnPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.CloseIdleConnections()
}

// forget closes the idle connections to addr (an instance discovery no longer reports).
func (p *ConnPool) forget(addr string) {
	p.mu.Lock()
	list := append(p.idle[addr], p.idle[tlsKey(addr)]...)
	delete(p.idle, addr)
	delete(p.idle, tlsKey(addr))
	p.mu.Unlock()
	for _, uc := range list {
		uc.C.Close()
	}
}
