package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `testbed up -f` on a scenario says it is one, in one line, instead of a line per field a
// topology does not have.
func TestLoadTopologyScenario(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "quick.yaml")
	scenario := "version: 1\nname: q\nduration: 30s\ntopology_file: topologies/three-tier.yaml\ncomponents:\n  - name: a\nworkloads:\n  - name: b\n"
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTopology(path)
	if err == nil || !strings.Contains(err.Error(), "is a scenario") || !strings.Contains(err.Error(), "continuum run "+path) {
		t.Fatalf("scenario as topology: %v", err)
	}
	if n := strings.Count(err.Error(), "\n"); n > 0 {
		t.Errorf("%d lines, want one: %v", n+1, err)
	}
	topo := filepath.Join(dir, "topo.yaml")
	if err := os.WriteFile(topo, []byte("nodes:\n  - name: a\n  - name: b\nlinks:\n  - between: [a, b]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTopology(topo); err != nil {
		t.Errorf("a topology: %v", err)
	}
}
