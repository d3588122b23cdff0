package server

import (
	"bytes"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// A plain-http client URL serves etcd's HTTP endpoints (/metrics, /health) beside gRPC, as
// etcd does on its client URLs: etcdctl, clients and Prometheus all point at the one port.
//
// gRPC over cleartext always opens with the HTTP/2 client preface; an HTTP/1.x request never
// does (no method is "PRI"). So each accepted connection's first bytes decide: the preface goes
// to the gRPC server, anything else to the HTTP server, with the bytes read replayed to whichever
// gets it. The reading happens on a goroutine per connection, bounded by sniffTimeout, never in
// Accept: a client that connects and sends nothing holds up no one else.
//
// https client URLs are not split (gRPC's TLS handshake happens inside the gRPC server, which
// owns the connection from Accept on): there, /metrics and /health are on --listen-metrics-urls.

// sniffTimeout bounds how long a new connection may take to send its first bytes.
const sniffTimeout = 10 * time.Second

var h2Preface = []byte(http2.ClientPreface)

// splitClientHTTP starts serving the HTTP endpoints on ln's HTTP/1 connections and returns the
// listener the gRPC server should serve (ln's HTTP/2 connections). The HTTP server is closed by
// Close with the metrics listeners'; the dispatcher ends when ln is closed.
func (s *Server) splitClientHTTP(ln net.Listener) net.Listener {
	sp := &split{ln: ln, done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	sp.grpc = newConnQueue(ln.Addr(), sp.done)
	sp.http = newConnQueue(ln.Addr(), sp.done)
	hs := &http.Server{Handler: s.metrics.handler(), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, ErrorLog: log.New(discardWriter{}, "", 0)}
	s.http = append(s.http, hs)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		sp.run(&s.wg)
	}()
	go func() {
		defer s.wg.Done()
		_ = hs.Serve(sp.http)
	}()
	return sp.grpc
}

type split struct {
	ln         net.Listener
	grpc, http *connQueue
	done       chan struct{} // closed once ln's Accept fails: nothing more will be handed out

	mu      sync.Mutex
	pending map[net.Conn]struct{} // connections whose first bytes are being read
}

func (sp *split) run(wg *sync.WaitGroup) {
	defer func() {
		close(sp.done)
		// Connections still being read are closed, so their goroutines end now rather than
		// at their deadline.
		sp.mu.Lock()
		for c := range sp.pending {
			c.Close()
		}
		sp.mu.Unlock()
	}()
	for {
		c, err := sp.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		sp.mu.Lock()
		sp.pending[c] = struct{}{}
		sp.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp.route(c)
		}()
	}
}

// route reads c's first bytes and queues it for gRPC (the HTTP/2 preface) or HTTP.
func (sp *split) route(c net.Conn) {
	buf := make([]byte, len(h2Preface))
	n := 0
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	isH2 := false
	for {
		m, err := c.Read(buf[n:])
		n += m
		if !bytes.Equal(buf[:n], h2Preface[:n]) {
			break // diverged: HTTP/1
		}
		if n == len(h2Preface) {
			isH2 = true
			break
		}
		if err != nil {
			sp.forget(c)
			c.Close()
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	sp.forget(c)
	pc := &prefixConn{Conn: c, prefix: buf[:n]}
	q := sp.http
	if isH2 {
		q = sp.grpc
	}
	if !q.put(pc) {
		c.Close()
	}
}

func (sp *split) forget(c net.Conn) {
	sp.mu.Lock()
	delete(sp.pending, c)
	sp.mu.Unlock()
}

// connQueue is a net.Listener whose connections are handed to it by the dispatcher.
type connQueue struct {
	addr   net.Addr
	ch     chan net.Conn
	done   <-chan struct{} // the dispatcher's: no more connections will come
	closed chan struct{}
	once   sync.Once
}

func newConnQueue(addr net.Addr, done <-chan struct{}) *connQueue {
	return &connQueue{addr: addr, ch: make(chan net.Conn), done: done, closed: make(chan struct{})}
}

// put hands c to the server accepting on q; false if q or the dispatcher is closed.
func (q *connQueue) put(c net.Conn) bool {
	select {
	case q.ch <- c:
		return true
	case <-q.closed:
		return false
	case <-q.done:
		return false
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.closed) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// prefixConn replays the bytes the dispatcher read before reading on.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// discardWriter drops the HTTP server's own log lines (a client's malformed request), which
// would otherwise go to stderr unstructured.
type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
