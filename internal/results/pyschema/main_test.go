package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

// TestCommittedModuleIsGenerated: the committed _schema.py is what the tables generate (the
// same check as `make results-schema-check`, so that `go test` sees drift too).
func TestCommittedModuleIsGenerated(t *testing.T) {
	var b bytes.Buffer
	if err := generate(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "python", "src", "continuum_results", "_schema.py")
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), committed) {
		t.Fatalf("%s differs from what internal/results generates: run 'make results-schema' and commit it", path)
	}
}

// TestEveryColumnIsGenerated: every table and column appears, with its dtype, under a name Python
// can use as is.
func TestEveryColumnIsGenerated(t *testing.T) {
	var b bytes.Buffer
	if err := generate(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ident := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, tb := range results.Tables {
		if !ident.MatchString(tb.Name()) {
			t.Errorf("table %q: not a Python name", tb.File)
		}
		i := strings.Index(out, "\n"+strings.ToUpper(tb.Name())+": dict[str, str] = {\n")
		if i < 0 {
			t.Fatalf("no table %s", tb.File)
		}
		block := out[i+1:]
		block = block[strings.Index(block, "{"):strings.Index(block, "}")]
		for _, c := range tb.Columns {
			if !ident.MatchString(c.Name) {
				t.Errorf("%s: column %q is not a plain name", tb.File, c.Name)
			}
			if line := `"` + c.Name + `": "` + dtypes[c.Type] + `",`; !strings.Contains(block, line) {
				t.Errorf("%s: no line %s", tb.File, line)
			}
		}
		if n := strings.Count(block, "\n    "); n != len(tb.Columns) {
			t.Errorf("%s: %d columns generated, %d declared", tb.File, n, len(tb.Columns))
		}
	}
}

// TestUnknownTypeFails: a column type without a dtype is an error, not a silent default.
func TestUnknownTypeFails(t *testing.T) {
	saved := results.Tables
	defer func() { results.Tables = saved }()
	results.Tables = []results.Table{{File: "x.csv", Columns: []results.Column{{Name: "a", Type: results.ColumnType(99)}}}}
	if err := generate(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `x.csv: column "a"`) {
		t.Errorf("err = %v", err)
	}
}
