package pool

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawConn is a TCP connection whose reads and writes do not tell the Go scheduler that they
// are system calls (syscall.RawSyscall inside the netpoller's RawConn callbacks, which wait for
// readiness as net.Conn does). The sockets are non-blocking: a read or write returns at once,
// so the scheduler has nothing to do meanwhile. What it saves is the scheduler's bookkeeping
// around each call and, above all, waking the runtime's monitor thread (sysmon): at 1000 req/s
// the proxy goes idle between requests and while it waits for an instance, sysmon then
// sleeps, and the first system call after each idle spell woke it again — a futex wake and
// three or four context switches per request, about a fifth of the proxy's CPU in the
// profile (docs/proxy.md). Deadlines, Close and the rest are the TCPConn's.
//
// The callbacks are made once per connection and keep their state in the struct, so that a
// read or write allocates nothing; that allows one Read and one Write at a time (the fd's
// own locks order them; net/http and the proxy never read, or write, from two goroutines
// at once).
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn

	rbuf   []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	wbuf    []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool

	// awaitFn is writeAwait's callback; awaitWrote: its first call has run.
	awaitFn    func(fd uintptr) bool
	awaitWrote bool

	// peekFn is silent's callback, peekSilent its result.
	peekFn     func(fd uintptr) bool
	peekSilent bool
}

// RawTCP wraps c if it is a TCP connection, else returns it as is.
func RawTCP(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	c2 := &rawConn{TCPConn: tc, rc: rc}
	c2.readFn, c2.writeFn, c2.awaitFn, c2.peekFn = c2.readOnce, c2.writeAll, c2.writeThenWait, c2.peekOnce
	return c2
}

// readOnce is the read callback: false means "not readable yet, wait".
func (c *rawConn) readOnce(fd uintptr) bool {
	p := c.rbuf
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.rn, c.rerrno = int(r), e
		return true
	}
}

// peekOnce is silent's callback: a non-blocking peek that never waits for readability.
func (c *rawConn) peekOnce(fd uintptr) bool {
	var b [1]byte
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		c.peekSilent = e == syscall.EAGAIN // nothing to read: open, and nothing came unasked
		return true
	}
}

// silent reports whether the connection is open and nothing is waiting to be read on it
// (connUsable without an allocation, for every pooled connection's reuse).
func (c *rawConn) silent() bool {
	c.peekSilent = false
	if err := c.rc.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekSilent
}

// idleUsable: c is open and the peer has sent nothing on it.
func idleUsable(c net.Conn) bool {
	if rc, ok := c.(*rawConn); ok {
		return rc.silent()
	}
	return connUsable(c)
}

// writeAll is the write callback: it writes all of wbuf, and returns false to wait until
// the socket is writable again, then goes on from wn.
func (c *rawConn) writeAll(fd uintptr) bool {
	p := c.wbuf
	for c.wn < len(p) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[c.wn])), uintptr(len(p)-c.wn))
		switch e {
		case 0:
			c.wn += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

func (c *rawConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rbuf, c.rn, c.rerrno = p, 0, 0
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerrno
	c.rbuf = nil
	switch {
	case err != nil:
		return 0, c.opErr("read", err)
	case errno != 0:
		return 0, c.opErr("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	c.wbuf, c.wn, c.werrno = p, 0, 0
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werrno
	c.wbuf = nil
	switch {
	case err != nil:
		return n, c.opErr("write", err)
	case errno != 0:
		return n, c.opErr("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// writeAwait writes p, then waits until the connection is readable without reading first.
// A read right after sending a request finds nothing (the answer cannot be there yet) and
// costs a system call that fails with EAGAIN, then the wait: HAProxy's two recv per request
// against the loop's four. Writing inside the read callback is what makes skipping that read
// safe: the netpoller's readiness flag is cleared when the read wait starts (prepareRead), so
// an answer whose readiness was noticed before then would be missed; here the request is
// written after it, and an answer to it can only arrive later, with its own notification.
// So the caller must know that nothing else is pending on the connection: an instance's
// connection before it was sent a request (whatever an instance sends unasked, or its
// closing, ends the wait too: the write draws a reset). It reports the write's outcome; the
// wait's (a deadline, a close) is for the next Read to report. When the socket takes only
// part of p, the rest is written with Write and nothing is skipped.
func (c *rawConn) writeAwait(p []byte) (int, error) {
	c.wbuf, c.wn, c.werrno, c.awaitWrote = p, 0, 0, false
	c.rc.Read(c.awaitFn)
	n, errno := c.wn, c.werrno
	c.wbuf = nil
	switch {
	case errno != 0:
		return n, c.opErr("write", os.NewSyscallError("write", errno))
	case !c.awaitWrote:
		// The read wait could not start (closed, or a deadline passed): write as usual.
		return c.Write(p)
	case n < len(p):
		m, err := c.Write(p[n:])
		return n + m, err
	}
	return n, nil
}

// writeThenWait is writeAwait's callback: the first call writes (without waiting for
// writability) and asks to wait for readability; the next means the connection is readable.
func (c *rawConn) writeThenWait(fd uintptr) bool {
	if c.awaitWrote {
		return true
	}
	c.awaitWrote = true
	if !c.writeAll(fd) || c.werrno != 0 {
		return true // the socket's buffer is full, or the write failed: do not wait here
	}
	return false
}

// awaitWriter is an instance connection's writer: with await set, its next write is
// writeAwait's (the request's last bytes, when nothing else is pending on the connection).
type awaitWriter struct {
	c     net.Conn
	rc    *rawConn
	await bool
}

func newAwaitWriter(c net.Conn) *awaitWriter {
	rc, _ := c.(*rawConn)
	return &awaitWriter{c: c, rc: rc}
}

func (w *awaitWriter) Write(p []byte) (int, error) {
	if w.await && w.rc != nil {
		w.await = false
		return w.rc.writeAwait(p)
	}
	w.await = false
	return w.c.Write(p)
}

// clientGone reports whether the peer of c has closed or reset the connection, by a
// non-blocking peek (nothing is consumed: bytes a client pipelined stay for the loop). A
// client that half-closes its sending side counts as gone, as net/http's server counts it.
func clientGone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
				syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
			case e != 0, n == 0:
				gone = true // reset, or the end of the stream
			}
			return true
		}
	})
	return gone || err != nil
}
