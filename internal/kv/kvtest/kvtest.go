// Package kvtest starts real continuum kv members for the tests of other packages: one call,
// the member in the test's own process, closed at the test's cleanup.
//
// It links the whole server (storage engine included), so only tests import it; a program
// that needs a kv at run time starts one as a process (package baselines), and engine
// packages, which may not import the kv system, start `continuum kv` through package
// testenv/etcdtest. Package server's own tests cannot use it (it imports server).
package kvtest

import (
	"testing"

	"github.com/continuum-project/continuum/internal/kv/server"
)

// Start starts a one-member kv named "test" in this process, on a free loopback client port
// with its data under t.TempDir(), edited by edit (At, or the caller's own) before it starts,
// and closes it at cleanup (Close is idempotent: a test may close it earlier, to restart it).
func Start(t testing.TB, edit ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Name = "test"
	cfg.DataDir = t.TempDir()
	cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// URL starts a member (Start) and returns its client URL, "http://127.0.0.1:<port>".
func URL(t testing.TB) string {
	t.Helper()
	return Start(t).ClientURLs()[0]
}

// At puts the member's data in dir and its client listener on addr (host:port): what a test
// restarting a member on the same data and address passes to Start both times.
func At(dir, addr string) func(*server.Config) {
	return func(c *server.Config) {
		c.DataDir = dir
		c.ListenClientURLs = []string{"http://" + addr}
	}
}
