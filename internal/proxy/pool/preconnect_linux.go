package pool

import (
	"errors"
	"net"
	"syscall"
)

// connUsable reports whether a spare connection is still open and silent, by peeking at its
// socket without blocking: a server that closed it, or wrote anything to it (an HTTP 408),
// has made it useless for a request.
func connUsable(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	usable := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		usable = errors.Is(rerr, syscall.EAGAIN) // nothing to read: open and silent
		return true                              // never wait for readability
	})
	return err == nil && usable
}
