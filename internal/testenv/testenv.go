// Package testenv is for tests only: it decides whether tests that need root run, skip or fail,
// and provides the continuum binary that integration tests start inside testbed nodes.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireRoot skips the test without root, or fails it when CONTINUUM_REQUIRE_ROOT=1 (as
// `make test` sets), so CI cannot pass by skipping the integration tests.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal("this test needs root (network namespaces, TUN, cgroups)")
	}
	t.Skip("needs root")
}

// Binary returns the continuum binary to test: $CONTINUUM_BIN (absolute) if set, otherwise one
// built into a temporary directory that cleanup removes. For TestMain, hence no testing.TB.
func Binary() (path string, cleanup func(), err error) {
	if bin := os.Getenv("CONTINUUM_BIN"); bin != "" {
		if !filepath.IsAbs(bin) {
			return "", nil, fmt.Errorf("CONTINUUM_BIN must be an absolute path, got %q", bin)
		}
		return bin, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "continuum-bin-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(tmp, "continuum")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/continuum-project/continuum/cmd/continuum").CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("build continuum: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(tmp) }, nil
}
