package mvcc

import (
	"testing"
)

// openTest opens a store in a temporary directory, closed at cleanup.
func openTest(t testing.TB, mod func(*Config)) *Store {
	t.Helper()
	cfg := DefaultConfig(t.TempDir())
	if mod != nil {
		mod(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
