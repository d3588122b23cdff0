// Package reporttest writes results-directory files for tests of report sections.
package reporttest

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

// WriteJSON writes v as indented JSON to path, creating its directory.
func WriteJSON(t testing.TB, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteJSON(path, v); err != nil {
		t.Fatal(err)
	}
}

// WriteCSV writes a CSV file with a header row to path, creating its directory.
func WriteCSV(t testing.TB, path string, header []string, rows [][]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
}

// Agg is the aggregate of one run's value v, as summary.json's groups hold it.
func Agg(v float64) results.Aggregate {
	return results.Aggregate{N: 1, Mean: v, CI95: [2]float64{v, v}}
}
