//go:build !linux

package pool

import "net"

// connUsable cannot peek at a socket here without a reader goroutine per spare; spares are
// then trusted for spareMaxAge.
func connUsable(net.Conn) bool { return true }
