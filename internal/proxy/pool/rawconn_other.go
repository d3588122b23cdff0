//go:build !linux

package pool

import "net"

// RawTCP is the identity where rawConn (rawconn_linux.go) is not built.
func RawTCP(c net.Conn) net.Conn { return c }

// awaitWriter is the plain writer where rawConn is not built.
func newAwaitWriter(c net.Conn) *awaitWriter { return &awaitWriter{c: c} }

type awaitWriter struct {
	c     net.Conn
	await bool
}

func (w *awaitWriter) Write(p []byte) (int, error) { w.await = false; return w.c.Write(p) }

// idleUsable is connUsable where rawConn is not built.
func idleUsable(c net.Conn) bool { return connUsable(c) }

// clientGone cannot tell without a read here: the client is noticed when a write fails.
func clientGone(net.Conn) bool { return false }
