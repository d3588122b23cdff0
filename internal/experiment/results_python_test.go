package experiment

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteShippedResults writes made-up results (syntheticResults) of every shipped scenario
// into $CONTINUUM_RESULTS_OUT/<scenario>, for the Python results package's test
// (python/tests/test_results_shipped.py, which `make test` runs on them). Without the variable
// there is nothing to do.
func TestWriteShippedResults(t *testing.T) {
	out := os.Getenv("CONTINUUM_RESULTS_OUT")
	if out == "" {
		t.Skip("CONTINUUM_RESULTS_OUT not set: make test sets it for the Python results package")
	}
	for _, path := range shippedScenarios(t) {
		name := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(path), "../../scenarios/"), ".yaml"), "/", "-")
		dir := syntheticResults(t, path)
		if b, err := exec.Command("cp", "-r", dir, filepath.Join(out, name)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", name, err, b)
		}
	}
}
