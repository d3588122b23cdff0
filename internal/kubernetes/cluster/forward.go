package cluster

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// forwarder carries TCP connections accepted on a host address to an address reached with
// dial: the API server of a multi-node cluster listens on its node's address, in the node's
// network namespace, which the host's namespace has no route to. The admin kubeconfig points
// at the forwarder, so kubectl and helm on the host reach the API server as if they sat next to
// it (the host is not a node: its clients cross no emulated link).
//
// Every goroutine it starts is its own and Close waits for all of them: the accept loop and two
// copies per connection.
type forwarder struct {
	ln   net.Listener
	to   string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	log  *slog.Logger

	ctx    context.Context // cancelled by Close: pending dials give up
	cancel context.CancelFunc
	wg     sync.WaitGroup

	dialing chan struct{} // a slot per connect in progress (maxDialing)

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
}

// startForwarder listens on listen (host:port; port 0 picks one) and forwards to to.
func startForwarder(listen, to string, dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger) (*forwarder, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &forwarder{ln: ln, to: to, dial: dial, log: log, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{},
		dialing: make(chan struct{}, maxDialing)}
	f.wg.Go(f.accept)
	return f, nil
}

// Addr is the address the forwarder listens on.
func (f *forwarder) Addr() string { return f.ln.Addr().String() }

// accept serves the listener until Close. An error while open (out of file descriptors, most
// likely) is waited out as net/http's server does, doubling from 5 ms to 1 s: returning would
// leave the port bound and every later client hanging in its backlog.
func (f *forwarder) accept() {
	var wait time.Duration
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if f.ctx.Err() != nil {
				return // closed
			}
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			f.log.Warn("API server forwarder: accept", "err", err, "retry_in", wait)
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		wait = 0
		if !f.track(c) {
			c.Close()
			return
		}
		f.wg.Go(func() { f.serve(c) })
	}
}

// maxDialing bounds the connects in progress: each holds an OS thread in the node's network
// namespace (setns on a locked thread) until the API server answers, so clients opening
// connections faster than a stalled API server (its node paused, its backlog full) accepts them
// would otherwise pile up threads towards Go's limit of 10 000, which ends the process, and with
// it the testbed's fabric. A client over the bound is closed at once, as a full backlog would.
const maxDialing = 64

// serve connects c to the target and copies both ways until either side closes.
func (f *forwarder) serve(c net.Conn) {
	defer f.untrack(c)
	select {
	case f.dialing <- struct{}{}:
	default:
		f.log.Warn("API server forwarder: too many connects in progress; closing a client", "limit", maxDialing)
		return
	}
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	up, err := f.dial(ctx, "tcp", f.to)
	cancel()
	<-f.dialing
	if err != nil {
		f.log.Warn("API server forwarder: connect", "to", f.to, "err", err)
		return
	}
	if !f.track(up) {
		up.Close()
		return
	}
	defer f.untrack(up)
	var copies sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close so that the other direction can finish what it is sending.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			dst.Close()
		}
	}
	copies.Go(func() { pipe(up, c) })
	pipe(c, up)
	copies.Wait()
}

// track records a connection for Close; false once closed.
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for the forwarder's goroutines.
func (f *forwarder) Close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	f.cancel()
	f.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	f.wg.Wait()
}
