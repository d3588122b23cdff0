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

	"github.com/continuum-project/continuum/internal/results"
)

// percentileTicks is HdrHistogram's ticks per half distance for percentiles.csv: 5 gives ~100
// points for 10^4 samples, enough for a smooth CDF down to p99.99.
const percentileTicks = 5

func writeOutputs(dir string, t0 time.Time, recs []*recorder, st results.Stats) error {
	files := []struct {
		name string
		data func() ([]byte, error)
	}{
		{results.StatsFile, func() ([]byte, error) {
			b, err := json.MarshalIndent(st, "", "  ")
			return append(b, '\n'), err
		}},
		{results.TimeseriesFile, func() ([]byte, error) { return timeseriesCSV(recs) }},
		{results.PercentilesFile, func() ([]byte, error) { return percentilesCSV(recs) }},
		{results.LatencyLogFile, func() ([]byte, error) { return hlogFile(t0, recs) }},
		{results.ErrorsFile, func() ([]byte, error) { return errorsCSV(recs, st) }},
	}
	if data, ok, err := instancesCSV(recs); err != nil {
		return fmt.Errorf("encode %s: %w", results.InstancesFile, err)
	} else if ok {
		files = append(files, struct {
			name string
			data func() ([]byte, error)
		}{results.InstancesFile, func() ([]byte, error) { return data, nil }})
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
	return writeCSV(results.TimeseriesHeader, rows)
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
	return writeCSV(results.PercentilesHeader, rows)
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

func errorsCSV(recs []*recorder, st results.Stats) ([]byte, error) {
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
	return writeCSV(results.ErrorsHeader, rows)
}
