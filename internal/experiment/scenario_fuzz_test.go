package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadScenario feeds arbitrary bytes to the scenario parser: it may reject them, never panic.
// Accepted scenarios are also expanded and marshalled, the other consumers of a parsed scenario.
func FuzzLoadScenario(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(scenDir, "*.yaml"))
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(badBase))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("version: 1\nsweep: {duration: [1s, 2s], warmup: [0s]}\n"))
	// The file name puts topology_file references next to the testdata topologies.
	file := filepath.Join(scenDir, "fuzz.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario(file, data, nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if _, err := s.MarshalResolved(); err != nil {
			t.Fatalf("MarshalResolved of an accepted scenario: %v", err)
		}
		runs := max(s.Repeats, 1)
		for _, vs := range s.Sweep {
			runs *= max(len(vs), 1)
		}
		if runs <= 64 { // keep each input fast; MaxRuns is tested elsewhere
			_, _ = s.Expand()
		}
	})
}
