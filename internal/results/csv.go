package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// CSVRow is one record of a results CSV file, addressed by column name so that files written
// with extra or reordered columns still load; errors name the file and line.
type CSVRow struct {
	path string
	line int
	rec  []string
	cols map[string]int
}

// Errorf is an error naming the row's file and line.
func (r CSVRow) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.path, r.line, fmt.Sprintf(format, args...))
}

// Str is a column's text, trimmed; "" when the row has no such column.
func (r CSVRow) Str(name string) string {
	i, ok := r.cols[name]
	if !ok || i >= len(r.rec) {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

// Float parses a numeric column. An empty cell is NaN: timeseries rows for seconds in which no
// request succeeded carry no latency, and that gap must stay a gap, not a zero.
func (r CSVRow) Float(name string) (float64, error) {
	s := r.Str(name)
	if s == "" {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, r.Errorf("column %q: %q is not a number", name, s)
	}
	return v, nil
}

// Floats parses several numeric columns at once, stopping at the first error.
func (r CSVRow) Floats(names ...string) ([]float64, error) {
	out := make([]float64, len(names))
	for i, n := range names {
		v, err := r.Float(n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// ReadCSV reads a CSV file with a header row, checks the required columns exist and calls fn
// for every data row. A missing file is reported as an error wrapping os.ErrNotExist.
func ReadCSV(path string, required []string, fn func(CSVRow) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1 // checked per row below, with a message naming the line
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("%s:1: empty file, want a header with columns %s", path, strings.Join(required, ","))
	}
	if err != nil {
		return csvErr(path, err)
	}
	cols := make(map[string]int, len(header))
	for i, h := range header {
		cols[strings.TrimSpace(h)] = i
	}
	for _, c := range required {
		if _, ok := cols[c]; !ok {
			return fmt.Errorf("%s:1: header has no column %q (want %s)", path, c, strings.Join(required, ","))
		}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvErr(path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return fmt.Errorf("%s:%d: %d fields, the header has %d", path, line, len(rec), len(header))
		}
		if err := fn(CSVRow{path: path, line: line, rec: rec, cols: cols}); err != nil {
			return err
		}
	}
}

func csvErr(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %v", path, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}
