package pool

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// gateDialer's dials wait until the test hands each one its connection.
type gateDialer struct{ calls chan chan net.Conn }

func newGateDialer() *gateDialer { return &gateDialer{calls: make(chan chan net.Conn)} }

func (g *gateDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	reply := make(chan net.Conn, 1)
	select {
	case g.calls <- reply:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case c := <-reply:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next waits for the next dial.
func (g *gateDialer) next(t *testing.T) chan net.Conn {
	t.Helper()
	select {
	case r := <-g.calls:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no dial")
		return nil
	}
}

func pipeConn(t *testing.T) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a
}

func (sp *spares) idleCount(addr string) int {
	sp.Mu.Lock()
	defer sp.Mu.Unlock()
	if sl := sp.Slots[addr]; sl != nil {
		return len(sl.Idle)
	}
	return 0
}

func TestProxySparesRaceAndKeepTheOtherConnection(t *testing.T) {
	g := newGateDialer()
	sp := newSpares(g.dial, time.Hour)
	const addr = "10.0.0.4:8000"
	sp.setWant(addr, 1) // joins the pool: one spare is dialed
	refill := g.next(t)

	// The transport needs a connection while the spare is still being dialed: it dials too,
	// and takes whichever is ready first.
	got := make(chan net.Conn, 1)
	go func() {
		c, err := sp.dialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	own := g.next(t)
	c1, c2 := pipeConn(t), pipeConn(t)
	refill <- c1
	if c := <-got; c != c1 {
		t.Fatalf("dialContext returned %v, want the spare that was ready first", c)
	}
	// Taking the spare dials its replacement; the transport's own dial, when it completes,
	// becomes a spare too (demand just outgrew the connections).
	replacement := g.next(t)
	own <- c2
	testenv.Eventually(t, 30*time.Second, "the losing dial kept as a spare", func() bool { return sp.idleCount(addr) == 1 })
	if c, err := sp.dialContext(context.Background(), "tcp", addr); err != nil || c != c2 {
		t.Fatalf("next dial: %v, %v; want the kept connection", c, err)
	}
	// A spare taken: another dial (the replacement is already under way, so none more).
	replacement <- pipeConn(t)
	testenv.Eventually(t, 30*time.Second, "the replacement spare", func() bool { return sp.idleCount(addr) == 1 })

	// An instance out of the pool keeps what it has until it expires, but gets no new ones.
	sp.setWant(addr, 0)
	sp.close()
	if n := sp.idleCount(addr); n != 0 {
		t.Fatalf("%d spares after close", n)
	}
}

func TestProxySparesExpire(t *testing.T) {
	g := newGateDialer()
	sp := newSpares(g.dial, 0) // every spare is already too old
	defer sp.close()
	sp.put("a:1", pipeConn(t))
	if c := sp.take("a:1"); c != nil {
		t.Fatal("took an expired spare")
	}
	// No spare and none being dialed: a plain dial.
	done := make(chan struct{})
	go func() {
		defer close(done)
		sp.dialContext(context.Background(), "tcp", "a:1")
	}()
	g.next(t) <- pipeConn(t)
	<-done
}

func TestProxySpareClosedByServerIsNotUsed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("connUsable peeks at the socket on Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var accepted []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, c)
			mu.Unlock()
		}
	}()
	addr := ln.Addr().String()
	dialed := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sp := newSpares((&net.Dialer{}).DialContext, time.Hour)
	defer sp.close()

	silent := dialed()
	defer silent.Close()
	if !connUsable(silent) {
		t.Fatal("an open, silent connection is not usable")
	}
	dropped := dialed()
	testenv.Eventually(t, 30*time.Second, "two accepted", func() bool { mu.Lock(); defer mu.Unlock(); return len(accepted) == 2 })
	mu.Lock()
	accepted[1].Close() // the server drops the second one (an idle timeout)
	mu.Unlock()
	testenv.Eventually(t, 30*time.Second, "the server's FIN", func() bool { return !connUsable(dropped) })
	sp.put(addr, dropped)
	if c := sp.take(addr); c != nil {
		t.Fatal("took a connection the server closed")
	}
	mu.Lock()
	for _, c := range accepted {
		c.Close()
	}
	mu.Unlock()
}

// An instance out of the pool is probed every interval; only its newest probe connection is
// kept, for its first request if it rejoins.
func TestProxySparesOutOfPoolKeepOnlyTheNewest(t *testing.T) {
	sp := newSpares(newGateDialer().dial, time.Hour)
	defer sp.close()
	older, newer := pipeConn(t), pipeConn(t)
	sp.put("a:1", older)
	sp.put("a:1", newer)
	if n := sp.idleCount("a:1"); n != 1 {
		t.Fatalf("%d spares, want 1", n)
	}
	if c := sp.take("a:1"); c != newer {
		t.Fatalf("took %v, want the newest", c)
	}
	older.SetWriteDeadline(time.Now()) // an open pipe would block the write
	if _, err := older.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("writing to the older spare: %v, want it closed", err)
	}
}
