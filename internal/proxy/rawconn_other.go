//go:build !linux

package proxy

import "net"

// rawTCP is the identity where rawConn (rawconn_linux.go) is not built.
func rawTCP(c net.Conn) net.Conn { return c }

type rawListener struct{ net.Listener }
