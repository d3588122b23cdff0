package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedScenariosLoad: every scenario under scenarios/ loads, validates and expands, so a
// kind or field change that breaks one fails here rather than in a user's first run.
func TestShippedScenariosLoad(t *testing.T) {
	root := filepath.Join("..", "..", "scenarios")
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(b), "version:") && !strings.Contains(string(b), "\nversion:") {
			return nil // a topology file, used through topology_file
		}
		n++
		s, err := LoadScenario(path, nil)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		for _, w := range s.Warnings { // shipped scenarios use kinds' names now, not their old ones
			t.Errorf("%s: %s", path, w)
		}
		if _, err := s.Expand(); err != nil {
			t.Errorf("%s: expand: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no scenarios found")
	}
}
