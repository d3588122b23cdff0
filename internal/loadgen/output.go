package loadgen

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// File names and CSV headers of a workload directory (docs/results-format.md).
const (
	statsFileName       = "stats.json"
	timeseriesFileName  = "timeseries.csv"
	percentilesFileName = "percentiles.csv"
	hlogFileName        = "latency.hlog"
	errorsFileName      = "errors.csv"
)

var (
	timeseriesHeader  = []string{"t_s", "series", "sent", "ok", "errors", "throughput_rps", "p50_ms", "p99_ms", "max_ms", "within_qos"}
	percentilesHeader = []string{"series", "percentile", "latency_ms", "count"}
	errorsHeader      = []string{"series", "type", "count"}
)

// percentileTicks is HdrHistogram's ticks per half distance for percentiles.csv: 5 gives ~100
// points for 10^4 samples, enough for a smooth CDF down to p99.99.
const percentileTicks = 5

func writeOutputs(dir string, t0 time.Time, recs []*recorder, st Stats) error {
	files := []struct {
		name string
		data func() ([]byte, error)
	}{
		{statsFileName, func() ([]byte, error) {
			b, err := json.MarshalIndent(st, "", "  ")
			return append(b, '\n'), err
		}},
		{timeseriesFileName, func() ([]byte, error) { return timeseriesCSV(recs) }},
		{percentilesFileName, func() ([]byte, error) { return percentilesCSV(recs) }},
		{hlogFileName, func() ([]byte, error) { return hlogFile(t0, recs) }},
		{errorsFileName, func() ([]byte, error) { return errorsCSV(recs, st) }},
	}
	if data, ok, err := instancesCSV(recs); err != nil {
		return fmt.Errorf("encode %s: %w", instancesFileName, err)
	} else if ok {
		files = append(files, struct {
			name string
			data func() ([]byte, error)
		}{instancesFileName, func() ([]byte, error) { return data, nil }})
	}
	for _, f := range files {
		data, err := f.data()
		if err != nil {
			return fmt.Errorf("encode %s: %w", f.name, err)
		}
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
func fmtInt(v int64) string     { return strconv.FormatInt(v, 10) }

func writeCSV(header []string, rows [][]string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// timeseriesCSV has one row per second per series, seconds outer so a reader can stream it.
// Latency cells are empty for a second without successes: a gap, not a zero.
func timeseriesCSV(recs []*recorder) ([]byte, error) {
	secs := 0
	for _, r := range recs {
		secs = max(secs, len(r.rows))
	}
	var rows [][]string
	for sec := range secs {
		for _, r := range recs {
			if sec >= len(r.rows) {
				continue
			}
			rw := r.rows[sec]
			var thr int64
			if sec < len(r.okBySec) {
				thr = r.okBySec[sec]
			}
			p50, p99, mx, within := "", "", "", ""
			if rw.ok > 0 {
				p50, p99, mx = fmtFloat(rw.p50), fmtFloat(rw.p99), fmtFloat(rw.max)
			}
			if r.qos > 0 {
				within = fmtInt(rw.within)
			}
			rows = append(rows, []string{strconv.Itoa(rw.sec), r.name, fmtInt(rw.sent), fmtInt(rw.ok),
				fmtInt(rw.err), fmtInt(thr), p50, p99, mx, within})
		}
	}
	return writeCSV(timeseriesHeader, rows)
}

func percentilesCSV(recs []*recorder) ([]byte, error) {
	var rows [][]string
	for _, r := range recs {
		if r.total.TotalCount() == 0 {
			continue
		}
		for _, b := range r.total.CumulativeDistributionWithTicks(percentileTicks) {
			rows = append(rows, []string{r.name, fmtFloat(b.Quantile), fmtFloat(nsToMs(b.ValueAt)), fmtInt(b.Count)})
		}
	}
	return writeCSV(percentilesHeader, rows)
}

// hlogFile writes an HdrHistogram interval log: one line per second per series, tagged with the
// series name, timestamps relative to the StartTime header (t0), values in nanoseconds.
func hlogFile(t0 time.Time, recs []*recorder) ([]byte, error) {
	var b bytes.Buffer
	w := hdr.NewHistogramLogWriter(&b)
	if err := w.OutputLogFormatVersion(); err != nil {
		return nil, err
	}
	if err := w.OutputStartTime(t0.UnixMilli()); err != nil {
		return nil, err
	}
	if err := w.OutputComment("[values in nanoseconds; one Tag per series]"); err != nil {
		return nil, err
	}
	if err := w.OutputLegend(); err != nil {
		return nil, err
	}
	secs := 0
	for _, r := range recs {
		secs = max(secs, len(r.hlog))
	}
	for sec := range secs {
		for _, r := range recs {
			if sec < len(r.hlog) {
				b.WriteString(r.hlog[sec])
			}
		}
	}
	return b.Bytes(), nil
}

func errorsCSV(recs []*recorder, st Stats) ([]byte, error) {
	var rows [][]string
	for _, r := range recs {
		byType := st.Series[r.name].ErrorsByType
		types := make([]string, 0, len(byType))
		for t := range byType {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			rows = append(rows, []string{r.name, t, fmtInt(byType[t])})
		}
	}
	return writeCSV(errorsHeader, rows)
}
