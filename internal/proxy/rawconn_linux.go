package proxy

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
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// rawTCP wraps c if it is a TCP connection, else returns it as is.
func rawTCP(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawConn{TCPConn: tc, rc: rc}
}

func (c *rawConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			n, errno = int(r), e
			return true
		}
	})
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
	n := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable, then go on from n
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opErr("write", err)
	case errno != 0:
		return n, c.opErr("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// rawListener accepts rawConns.
type rawListener struct{ net.Listener }

func (l rawListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return rawTCP(c), nil
}
