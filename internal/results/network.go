package results

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// NetworkRow is a row of network.csv: one sampling interval of the emulated network, written
// by platforms that emulate it (the testbed's fabric). T is the interval's end, on samples.csv's
// clock. Packets, Bytes, Drops, UnexplainedDrops and DropsByReason are cumulative since the
// sampler started; the rest describe the interval alone.
type NetworkRow struct {
	T         float64
	IntervalS float64
	// Packets and Bytes were carried over links, a packet counted once per link it crossed.
	Packets, Bytes float64
	// CPUCores is the emulator's own CPU over the interval.
	CPUCores float64
	// Delivered packets reached their node in the interval; Late* is how much later than
	// scheduled (the queueing the emulator added beyond the configured delay, jitter and
	// bandwidth), in µs. ReadLagP99US is how long sent packets waited to be read (part of it).
	Delivered                       float64
	LateP50US, LateP99US, LateMaxUS float64
	ReadLagP99US                    float64
	// Drops are every drop; UnexplainedDrops those no configuration explains.
	Drops, UnexplainedDrops float64
	DropsByReason           map[string]float64
	// NodesCPUCores is what every process in the emulated nodes used over the interval, in
	// cores (the sum of samples.csv's node rows of the round; NaN in a file written before the
	// column existed). With CPUCores it is how much of the host the run kept busy.
	NodesCPUCores float64
}

// LinkRow is a row of links.csv: one link direction's totals over the sampling period.
type LinkRow struct {
	From, To                        string
	Packets, Bytes                  float64
	Delivered                       float64 // packets whose last hop this was
	LateP50US, LateP99US, LateMaxUS float64 // of the delivered packets
	Drops                           float64
	DropsByReason                   map[string]float64
}

// WriteNetwork writes network.csv.
func WriteNetwork(path string, rows []NetworkRow) error {
	return writeCSV(path, NetworkHeader, len(rows), func(i int) []string {
		r := rows[i]
		return []string{f3(r.T), f3(r.IntervalS), num(r.Packets), num(r.Bytes), f3(r.CPUCores), num(r.Delivered),
			num(r.LateP50US), num(r.LateP99US), num(r.LateMaxUS), num(r.ReadLagP99US), num(r.Drops),
			num(r.UnexplainedDrops), FormatDrops(r.DropsByReason), f3OrEmpty(r.NodesCPUCores)}
	})
}

// WriteLinks writes links.csv.
func WriteLinks(path string, rows []LinkRow) error {
	return writeCSV(path, LinksHeader, len(rows), func(i int) []string {
		r := rows[i]
		return []string{r.From, r.To, num(r.Packets), num(r.Bytes), num(r.Delivered), num(r.LateP50US),
			num(r.LateP99US), num(r.LateMaxUS), num(r.Drops), FormatDrops(r.DropsByReason)}
	})
}

// ReadNetwork reads a network.csv.
func ReadNetwork(path string) ([]NetworkRow, error) {
	var out []NetworkRow
	err := ReadCSV(path, []string{"t_s", "cpu_cores"}, func(r CSVRow) error {
		v, err := r.Floats("t_s", "interval_s", "packets", "bytes", "cpu_cores", "delivered", "late_p50_us",
			"late_p99_us", "late_max_us", "read_lag_p99_us", "drops", "unexplained_drops")
		if err != nil {
			return err
		}
		by, err := parseDrops(r, "drops_by_reason")
		if err != nil {
			return err
		}
		nodes, err := r.Float("nodes_cpu_cores") // NaN when absent (an older file)
		if err != nil {
			return err
		}
		out = append(out, NetworkRow{T: v[0], IntervalS: v[1], Packets: v[2], Bytes: v[3], CPUCores: v[4],
			Delivered: v[5], LateP50US: v[6], LateP99US: v[7], LateMaxUS: v[8], ReadLagP99US: v[9], Drops: v[10],
			UnexplainedDrops: v[11], DropsByReason: by, NodesCPUCores: nodes})
		return nil
	})
	return out, err
}

// ReadLinks reads a links.csv.
func ReadLinks(path string) ([]LinkRow, error) {
	var out []LinkRow
	err := ReadCSV(path, []string{"from", "to"}, func(r CSVRow) error {
		v, err := r.Floats("packets", "bytes", "delivered", "late_p50_us", "late_p99_us", "late_max_us", "drops")
		if err != nil {
			return err
		}
		by, err := parseDrops(r, "drops_by_reason")
		if err != nil {
			return err
		}
		out = append(out, LinkRow{From: r.Str("from"), To: r.Str("to"), Packets: v[0], Bytes: v[1], Delivered: v[2],
			LateP50US: v[3], LateP99US: v[4], LateMaxUS: v[5], Drops: v[6], DropsByReason: by})
		return nil
	})
	return out, err
}

// FormatDrops writes drops by reason as "loss=3 read=400" (reasons sorted; "" for none), the
// form of the drops_by_reason columns.
func FormatDrops(by map[string]float64) string {
	keys := make([]string, 0, len(by))
	for k, v := range by {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + num(by[k])
	}
	return strings.Join(parts, " ")
}

func parseDrops(r CSVRow, col string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, f := range strings.Fields(r.Str(col)) {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil {
			return nil, r.Errorf("column %q: %q is not reason=count (e.g. loss=3 read=400)", col, f)
		}
		out[k] = n
	}
	return out, nil
}

// writeCSV writes a header and n rows to path.
func writeCSV(path string, header []string, n int, row func(int) []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	for i := range n {
		_ = w.Write(row(i))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// f3OrEmpty is f3, or an empty cell for NaN (not measured), which ReadCSV reads back as NaN.
func f3OrEmpty(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return f3(v)
}
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
