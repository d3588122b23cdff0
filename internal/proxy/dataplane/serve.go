package dataplane

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/pool"
)

// The data plane's server: an HTTP/1.1 server loop of the proxy's own in front of net/http's.
//
// Why its own: profiles of the proxy under load (docs/proxy.md) put net/http's server at a
// large share of the CPU per request: the *http.Request, its header map and context, the
// response writer and its header map, the per-request background read that watches for the
// client leaving (one more read and goroutine wake-up per request), and the copies of the
// headers into the upstream request and back. The loop reads a request head into a reused
// slice of fields that point into its read buffer, writes it on to the instance and the
// answer back through buffered writers: one read and one write per request on each side when
// the messages fit the buffers, and no allocation.
//
// What it hands over: a connection whose next request falls outside the loop's parser
// (httphead.go: Upgrade, absolute-form targets, heads larger than the read buffer, HTTP/2's
// preface, anything malformed) is passed, with the bytes read so far, to net/http's server
// and the proxy's http.Handler, which serve it for the rest of its life as before (WebSocket
// upgrades, 400/417/431 answers). So the loop need not be lenient, and each request is served
// by exactly one of the two.
//
// What the loop does not do that net/http did: watch the client while the instance works on
// the answer's head. A client that leaves then is noticed when its answer is written (the
// instance's work is not cancelled early; the service's timeout bounds it). While an answer's
// body is awaited it does check on the client (upReader, clientCheckEvery): a body may stream
// for ever, so only the client's leaving ends it.

// Per-connection buffers of the loop. A request head must fit the read buffer (else net/http
// serves it, with its 1 MiB limit); bodies stream through in pieces of these sizes.
const (
	clientReadBuf  = 4 << 10
	clientWriteBuf = 4 << 10
	// IdleTimeout closes a keep-alive connection on which no request arrives.
	IdleTimeout = 2 * time.Minute
	// deadlineSlack: the loop re-arms the idle deadline only when it was set more than this
	// long ago, so that a busy connection does not pay a timer update per request; a
	// connection may then stay idle up to idleTimeout plus this.
	deadlineSlack = time.Second
)

// Connection states (clientConn.state).
const (
	connIdle   int32 = iota // waiting for (or reading) a request head
	connActive              // serving a request
	connClosed              // Shutdown closed it while idle
)

// Server runs the loop on the data plane's listener.
type Server struct {
	h                 *Handler
	readHeaderTimeout time.Duration
	// writeTimeout bounds each write to a client (0: none).
	writeTimeout time.Duration
	fallback     *http.Server
	Handoff      *handoffListener

	mu       sync.Mutex
	conns    map[*clientConn]struct{}
	Shutting atomic.Bool
	// cut: closeAll ran (the grace is over); an instance connection taken after it is closed
	// at once (clientConn.using).
	cut atomic.Bool
	wg  sync.WaitGroup
	// HandedOver counts the connections handed to net/http (tests, and the log at exit).
	HandedOver atomic.Int64
	// BigHeads holds a token per connection reading a head past the loop's buffer (up to
	// maxHandoverHead into a slice of its own): at most maxBigHeads at once (see there).
	BigHeads chan struct{}
	// quit is closed when the shutdown begins (wakes connections waiting for a bigHeads token).
	quit     chan struct{}
	quitOnce sync.Once
}

// MaxBigHeads bounds the connections reading a head past the loop's 4 KiB buffer at once.
// Each holds up to maxHandoverHead (1 MiB + 4 KiB) of heap until its head ends or
// read_header_timeout passes, and the number of connections is not bounded otherwise
// (max_inflight counts requests being served, not heads being read): without this bound ~100
// clients sending unfinished 1 MiB heads took ~100 MiB, past the Helm chart's 128 MiB memory
// limit. With it, those heads hold at most 8 x ~1.3 MiB (the slice grows by doubling), about
// 10 MiB, within GOMEMLIMIT's 48 MiB with room for everything else. Others wait for a token
// until read_header_timeout, their bytes in the kernel's socket buffers, then get 431.
const MaxBigHeads = 8

func NewServer(h *Handler, readHeaderTimeout, writeTimeout time.Duration, fallback *http.Server, addr net.Addr) *Server {
	return &Server{h: h, readHeaderTimeout: readHeaderTimeout, writeTimeout: writeTimeout, fallback: fallback,
		Handoff: newHandoffListener(addr), conns: map[*clientConn]struct{}{},
		BigHeads: make(chan struct{}, MaxBigHeads), quit: make(chan struct{})}
}

// Serve accepts connections until ln is closed; the net/http fallback serves what is handed
// over from its own goroutine (run by the caller with srv.fallback.Serve(srv.handoff)).
func (srv *Server) Serve(ln net.Listener) error {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if srv.Shutting.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors and the like: wait and go on, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		cc := srv.newConn(pool.RawTCP(c))
		if cc == nil {
			c.Close()
			continue
		}
		go cc.serve()
	}
}

func (srv *Server) newConn(c net.Conn) *clientConn {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.Shutting.Load() {
		return nil
	}
	cc := &clientConn{srv: srv, c: c}
	cc.br = bufio.NewReaderSize(clientReader{cc}, clientReadBuf)
	cc.bw = bufio.NewWriterSize(clientWriter{cc}, clientWriteBuf)
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		cc.remoteHost = a.IP.String()
	} else if host, _, err := net.SplitHostPort(c.RemoteAddr().String()); err == nil {
		cc.remoteHost = host
	} else {
		cc.remoteHost = c.RemoteAddr().String()
	}
	// The first request's head must come within the header timeout from the accept, as with
	// net/http's ReadHeaderTimeout: a connection that sends nothing is not an idle keep-alive
	// connection and does not get idleTimeout.
	c.SetReadDeadline(time.Now().Add(srv.readHeaderTimeout))
	cc.headerLimit, cc.first = true, true
	srv.conns[cc] = struct{}{}
	srv.wg.Add(1)
	return cc
}

// done forgets cc (it ended or was handed over).
func (srv *Server) done(cc *clientConn) {
	srv.mu.Lock()
	delete(srv.conns, cc)
	srv.mu.Unlock()
	srv.wg.Done()
}

// Shutdown stops the loop's connections: idle ones are closed at once, active ones after
// their request, or when ctx ends. The listener must be closed by the caller first.
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.Shutting.Store(true)
	srv.quitOnce.Do(func() { close(srv.quit) })
	closeIdle := func() {
		srv.mu.Lock()
		for cc := range srv.conns {
			if cc.state.CompareAndSwap(connIdle, connClosed) {
				cc.c.Close()
			}
		}
		srv.mu.Unlock()
	}
	closeIdle()
	done := make(chan struct{})
	go func() { srv.wg.Wait(); close(done) }()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-t.C:
			// A connection may have been between requests when the first pass ran.
			closeIdle()
		case <-ctx.Done():
			srv.closeAll()
			<-done
			return ctx.Err()
		}
	}
}

// closeAll closes every connection of the loop and the instance connections their requests
// use (requests in flight are cut: a goroutine blocked reading an instance, a stalled answer
// body, is woken only by closing that connection).
func (srv *Server) closeAll() {
	srv.cut.Store(true)
	srv.mu.Lock()
	for cc := range srv.conns {
		cc.c.Close()
		if uc := cc.upc.Load(); uc != nil {
			uc.C.Close()
		}
	}
	srv.mu.Unlock()
}

// clientConn is one client connection served by the loop.
type clientConn struct {
	srv        *Server
	c          net.Conn
	br         *bufio.Reader
	bw         *bufio.Writer
	remoteHost string
	state      atomic.Int32

	req  http1.RequestHead
	resp http1.ResponseHead
	// The request being served: its head's length in the read buffer and whether it was
	// dropped from it, whether its body was read (or it has none), whether it is a HEAD.
	headLen      int
	headConsumed bool
	bodyDone     bool
	isHead       bool
	// respLen is the answer head's length in the instance connection's buffer; fbResp is
	// the answer when net/http's parser read it instead (a head outside the loop's parser).
	respLen int
	fbResp  *http.Response
	// lastName and lastSvc: the service the previous request named, so that a connection
	// that keeps naming the same service finds it without a lookup.
	lastName []byte
	lastSvc  *pool.Service
	// deadlineSet is when the idle read deadline was last set (zero: none is set);
	// headerLimit: the deadline in force is the header timeout's instead.
	deadlineSet time.Time
	headerLimit bool
	// first: no request has been read yet (the header timeout runs from the accept).
	first bool
	// inBody: the request's body is being read (clientReader bounds each read by up.idle
	// and puts its wait on up); bodyDL is the read deadline it set (zero: none yet).
	inBody bool
	bodyDL time.Time
	up     uploadClock
	// writeSet is when the write deadline was last set (zero: none is set).
	writeSet time.Time
	// upc is the instance connection the request in flight uses (nil: none), for closeAll:
	// a goroutine blocked reading the instance is woken by nothing else.
	upc atomic.Pointer[pool.UpConn]
}

// clientReader is what the loop's read buffer reads the client connection through. Outside a
// body it is the connection. While a body is read, each read has the upload clock's idle
// bound (a client that stalls mid-body is cut, and frees its max_inflight slot, the instance's
// connection and its count), and its wait goes on the upload clock (not the instance's time).
type clientReader struct{ cc *clientConn }

func (r clientReader) Read(p []byte) (int, error) {
	cc := r.cc
	if !cc.inBody || cc.up.idle <= 0 {
		return cc.c.Read(p)
	}
	now := time.Now()
	if d := now.Add(cc.up.idle); cc.bodyDL.Before(d) {
		// The deadline is kept within [idle, idle+slack] from now, re-armed only when it
		// falls short: a body arriving in many pieces re-arms once per slack, not per read.
		cc.bodyDL = d.Add(pool.DeadlineSlackFor(cc.up.idle))
		cc.c.SetReadDeadline(cc.bodyDL)
		cc.deadlineSet, cc.headerLimit = time.Time{}, false // readHead sets its own again
	}
	n, err := cc.c.Read(p)
	cc.up.waitedFor(time.Since(now))
	if err != nil && pool.IsTimeout(err) {
		err = clientStalled{cc.up.idle}
	}
	return n, err
}

// clientWriter is what the loop's write buffer writes the client connection through: every
// write has writeTimeout to complete, so a client that does not read its answer is cut rather
// than holding the request (and the instance's connection) for ever. The deadline is re-armed
// at most once per deadlineSlack.
type clientWriter struct{ cc *clientConn }

func (w clientWriter) Write(p []byte) (int, error) {
	cc := w.cc
	if wt := cc.srv.writeTimeout; wt > 0 {
		if now := time.Now(); now.Sub(cc.writeSet) > deadlineSlack {
			cc.c.SetWriteDeadline(now.Add(wt))
			cc.writeSet = now
		}
	}
	return cc.c.Write(p)
}

func (cc *clientConn) serve() {
	handedOver := false
	defer func() {
		if !handedOver {
			cc.c.Close()
		}
		cc.srv.done(cc)
	}()
	for {
		n, err := cc.readHead()
		if err != nil {
			if errors.Is(err, http1.ErrHeadFallback) {
				handedOver = cc.handOver()
			}
			return
		}
		cc.first = false
		if !cc.state.CompareAndSwap(connIdle, connActive) {
			return // shutdown closed it
		}
		keep := cc.serveRequest(n)
		if !keep {
			return
		}
		cc.state.Store(connIdle)
		if cc.srv.Shutting.Load() {
			return
		}
	}
}

// readHead waits for a complete request head in the read buffer and parses it into cc.req,
// returning its length; nothing is consumed. errHeadFallback: the head is not the loop's
// (malformed, too large, outside the subset); the bytes stay buffered for net/http.
func (cc *clientConn) readHead() (int, error) {
	for {
		if buffered := cc.br.Buffered(); buffered > 0 {
			b, _ := cc.br.Peek(buffered)
			n, err := http1.ParseRequestHead(b, &cc.req)
			if err == nil {
				return n, nil
			}
			if err != http1.ErrHeadIncomplete || buffered == clientReadBuf {
				return 0, http1.ErrHeadFallback
			}
			if !cc.headerLimit {
				// Part of a head: the rest must come within the header timeout.
				cc.c.SetReadDeadline(time.Now().Add(cc.srv.readHeaderTimeout))
				cc.headerLimit, cc.deadlineSet = true, time.Time{}
			}
		} else if !cc.first && (cc.headerLimit || time.Since(cc.deadlineSet) > deadlineSlack) {
			now := time.Now()
			cc.c.SetReadDeadline(now.Add(IdleTimeout))
			cc.deadlineSet, cc.headerLimit = now, false
		}
		if _, err := cc.br.Peek(cc.br.Buffered() + 1); err != nil {
			if cc.br.Buffered() > 0 && !pool.IsTimeout(err) {
				return 0, http1.ErrHeadFallback // let net/http say what is wrong
			}
			return 0, err
		}
	}
}

// clearDeadline removes the idle deadline before a body is read: a body may take longer.
func (cc *clientConn) clearDeadline() {
	if !cc.deadlineSet.IsZero() || cc.headerLimit {
		cc.c.SetReadDeadline(time.Time{})
		cc.deadlineSet, cc.headerLimit = time.Time{}, false
	}
}
