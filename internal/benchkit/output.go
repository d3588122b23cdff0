package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// JSONPath is where the JSON beside a Markdown file goes: its name with .json for .md.
func JSONPath(mdPath string) string { return strings.TrimSuffix(mdPath, ".md") + ".json" }

// Write delivers a benchmark's output, as every `continuum bench` does: with no path, the
// Markdown on w; otherwise the Markdown to path and, when result is not nil, the result as JSON
// beside it (JSONPath), then a line on w saying what was written. The file's directory is created
// if missing, so `--out results/x.md` works in a fresh clone.
func Write(w io.Writer, path, md string, result any) error {
	if path == "" {
		_, err := io.WriteString(w, md)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	if result == nil {
		_, err := fmt.Fprintf(w, "wrote %s\n", path)
		return err
	}
	raw, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", JSONPath(path), err)
	}
	if err := os.WriteFile(JSONPath(path), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote %s and %s\n", path, JSONPath(path))
	return err
}

// ReadJSON reads a result Write wrote beside its Markdown into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Logf writes one progress line to w (a bench's Config.Log); a nil w discards it.
func Logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
