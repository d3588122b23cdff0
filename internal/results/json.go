package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// WriteJSON writes v as indented JSON with a final newline. Text is kept as written ("> 1 ms",
// not "\u003e 1 ms"): these files are read by people and by JSON parsers, never embedded in HTML.
func WriteJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadJSON decodes a JSON file into v. Syntax and type errors name the file and line, since
// results directories are also written by hand and by other tools. A missing file's error
// wraps fs.ErrNotExist.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("%s:%d: %v", path, lineAt(data, se.Offset), err)
		case errors.As(err, &te):
			return fmt.Errorf("%s:%d: %v", path, lineAt(data, te.Offset), err)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return 1 + strings.Count(string(data[:off]), "\n")
}
