package dataplane

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
)

// handOver passes the connection, with what it has read, to net/http's server, which serves
// one request on it (keep-alives are off there, the proxy's run.go) so that every request head on the
// data port is read by the loop first. The head is read whole (up to maxHandoverHead) and a
// head whose framing can be read two ways is refused here (http1.FramingConflict), since net/http
// accepts it. It reports whether the connection was handed over (else the caller closes it).
func (cc *clientConn) handOver() bool {
	var extra []byte // the head's bytes taken out of the loop's buffer, and what followed
	b, _ := cc.br.Peek(cc.br.Buffered())
	head := b
	n, next := http1.HeadEnd(b, 0)
	if n < 0 {
		// The loop's buffer ends before the head: read the rest (net/http would read it all
		// the same), within the header timeout, holding one of maxBigHeads tokens.
		if !cc.headerLimit {
			cc.c.SetReadDeadline(time.Now().Add(cc.srv.readHeaderTimeout))
			cc.headerLimit, cc.deadlineSet = true, time.Time{}
		}
		if !cc.bigHeadToken() {
			return false
		}
		defer func() { <-cc.srv.BigHeads }()
		for n < 0 && len(extra) < http1.MaxHandoverHead {
			extra = append(extra, b...)
			cc.br.Discard(len(b))
			n, next = http1.HeadEnd(extra, next)
			if n >= 0 {
				break
			}
			if _, err := cc.br.Peek(1); err != nil {
				return false // the client is gone, or did not finish its head in time
			}
			b, _ = cc.br.Peek(cc.br.Buffered())
		}
		head = extra
	}
	if n >= 0 {
		if why := http1.FramingConflict(head[:n]); why != "" {
			cc.refuse(why)
			return false
		}
	}
	cc.clearDeadline()
	if !cc.writeSet.IsZero() {
		cc.c.SetWriteDeadline(time.Time{}) // net/http's server sets none of its own
	}
	cc.srv.HandedOver.Add(1)
	var r io.Reader = cc.br
	if extra != nil {
		r = io.MultiReader(bytes.NewReader(extra), cc.br)
	}
	return cc.srv.Handoff.give(&bufferedConn{Conn: cc.c, r: r})
}

// bigHeadToken takes a bigHeads token, waiting up to the header timeout for one; without
// one the client gets 431 (and the connection is closed), and false.
func (cc *clientConn) bigHeadToken() bool {
	select {
	case cc.srv.BigHeads <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(cc.srv.readHeaderTimeout)
	defer t.Stop()
	select {
	case cc.srv.BigHeads <- struct{}{}:
		return true
	case <-cc.srv.quit:
		return false
	case <-t.C:
	}
	h := cc.srv.h
	h.m.CountError("", metrics.ErrTypeBadRequest)
	h.m.Request("", "", http.StatusRequestHeaderFieldsTooLarge, 0)
	cc.headConsumed, cc.bodyDone, cc.isHead = true, false, false
	cc.answerError(http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf(
		"request head over %d bytes while %d other such heads were being read (the proxy reads at most %d at once); send a smaller head, or retry",
		clientReadBuf, MaxBigHeads, MaxBigHeads), "", 0, false)
	return false
}

// refuse answers 400 with why to a request the loop will not serve, and the connection is
// closed after it.
func (cc *clientConn) refuse(why string) {
	h := cc.srv.h
	h.m.CountError("", metrics.ErrTypeBadRequest)
	h.m.Request("", "", http.StatusBadRequest, 0)
	cc.headConsumed, cc.bodyDone, cc.isHead = true, false, false
	cc.answerError(http.StatusBadRequest, why, "", 0, false)
}

// bufferedConn is a connection handed to net/http with the bytes the loop had read.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// handoffListener is the net/http server's listener: the connections the loop hands over.
type handoffListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// give hands c over; false if the listener is closed (c is then closed).
func (l *handoffListener) give(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		c.Close()
		return false
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }
