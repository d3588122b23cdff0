package testenv

import (
	"net"
	"testing"
)

// FreeAddr is a loopback host:port nothing listens on now, for a server a test starts next
// (another process may take it in between; tests that cannot retry should pass :0 instead).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
