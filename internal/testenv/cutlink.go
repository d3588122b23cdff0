package testenv

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// CutLink is a TCP proxy standing for the network between two members. Cut drops everything
// both ways without closing or resetting a connection (as a partition that drops packets), and
// connections opened during a cut get no byte through; after Heal, new connections work and
// those that lived across the cut stay mute (a real one may, for many seconds, once its
// retransmission timer has backed off), so the members must notice and redial.
type CutLink struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool          // guarded by mu
	conns []*linkedConn // guarded by mu
	wg    sync.WaitGroup
}

type linkedConn struct {
	dead     atomic.Bool
	down, up net.Conn // up is nil for a connection accepted during a cut
}

// NewCutLink forwards connections to target until the test ends.
func NewCutLink(t testing.TB, target string) *CutLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &CutLink{ln: ln, target: target}
	l.wg.Add(1)
	go l.accept()
	t.Cleanup(l.close)
	return l
}

// URL is the link's address as an http URL (a member's peer URL as the others dial it).
func (l *CutLink) URL() string { return "http://" + l.ln.Addr().String() }

func (l *CutLink) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		lc := &linkedConn{down: c}
		l.mu.Lock()
		cut := l.cut
		lc.dead.Store(cut)
		l.conns = append(l.conns, lc)
		l.mu.Unlock()
		if cut {
			continue // held open, silent, until close
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			c.Close()
			continue
		}
		l.mu.Lock()
		lc.up = up
		if l.cut {
			lc.dead.Store(true)
		}
		l.mu.Unlock()
		l.wg.Add(2)
		go l.pipe(lc, up, c)
		go l.pipe(lc, c, up)
	}
}

// pipe copies src to dst until the connection dies (then it stops reading, so the sender's
// buffers fill as over a dead link) or an end closes.
func (l *CutLink) pipe(lc *linkedConn, dst, src net.Conn) {
	defer l.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if lc.dead.Load() {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if !lc.dead.Load() {
				dst.Close()
				src.Close()
			}
			return
		}
	}
}

// Cut drops all traffic through the link from now on, both ways, closing nothing.
func (l *CutLink) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
	for _, c := range l.conns {
		c.dead.Store(true)
	}
}

// Heal lets new connections through (those open across the cut stay mute).
func (l *CutLink) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = false
}

func (l *CutLink) close() {
	l.ln.Close()
	l.mu.Lock()
	for _, c := range l.conns {
		c.down.Close()
		if c.up != nil {
			c.up.Close()
		}
	}
	l.mu.Unlock()
	l.wg.Wait()
}
