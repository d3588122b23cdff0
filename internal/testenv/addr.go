package testenv

import (
	"testing"

	"github.com/continuum-project/continuum/internal/freeport"
)

// FreeAddr is a loopback host:port nothing listens on now, for a server a test starts next. It
// comes from internal/freeport, so no other test process and no outgoing connection gets it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
