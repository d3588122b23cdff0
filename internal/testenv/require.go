package testenv

import (
	"os"
	"testing"
)

// SkipOrFail skips a test whose prerequisites (root, binaries from make setup) are missing, saying
// why, or fails it when CONTINUUM_REQUIRE_ROOT=1 (as make test sets), so that CI cannot pass by
// skipping.
func SkipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}
