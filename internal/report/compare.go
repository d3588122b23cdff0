package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/results"
)

// The summary's comparison: one table with a row per metric that matters and a column per sweep
// combination (or per run when summary.json has no groups), so a reader compares stores or
// variants across a row instead of between lists. The metrics that matter are each workload
// series' latency (p50, p99), throughput and errors, and the resources of the system under test;
// a series that had no request in any column says nothing and is left out (a producer's "sent"
// next to a consumer's). Every metric stays in the folded full list and in summary.json.

// maxCompareCols is how many combinations one comparison table holds; more are split into
// several tables (the same rows), so no table is wider than the page.
const maxCompareCols = 6

// compareTable is one comparison table: Columns are the combinations' names, Rows a metric each.
type compareTable struct {
	// Params names the swept parameters, whose values (in this order) name the columns.
	Params  []string
	Columns []compareCol
	Rows    []tableRow
}

type compareCol struct {
	Name  string   // the swept parameters' labels, or "all runs"
	Parts []string // Name's parts, one swept parameter each (a line each in the header)
	Runs  string   // the runs aggregated, for the tooltip
	N     int
}

// compareRow is how one row reads one combination's metrics: ok false leaves the cell empty.
type compareRow struct {
	label string
	cell  func(m map[string]map[string]results.Aggregate) (results.Aggregate, bool)
}

// compareSource is one column's metrics, from a group (aggregated) or a run (one value).
type compareSource struct {
	col     compareCol
	metrics map[string]map[string]results.Aggregate
}

func compareSources(s results.Summary) []compareSource {
	var out []compareSource
	swept := SweptParams(s.Groups)
	for i, g := range s.Groups {
		var names []string
		for _, p := range swept {
			names = append(names, results.Label(g.Params, g.Labels, p))
		}
		name := strings.Join(names, ", ")
		if name == "" {
			name = "all runs"
			if len(s.Groups) > 1 {
				name = fmt.Sprintf("group %d", i+1)
			}
		}
		n := 0
		for _, m := range g.Metrics {
			for _, a := range m {
				n = max(n, a.N)
			}
		}
		parts := names
		if len(parts) == 0 {
			parts = []string{name}
		}
		out = append(out, compareSource{col: compareCol{Name: name, Parts: parts, Runs: strings.Join(g.Runs, ", "), N: n}, metrics: g.Metrics})
	}
	if len(out) > 0 {
		return out
	}
	for _, r := range s.Runs {
		m := map[string]map[string]results.Aggregate{}
		for name, fields := range r.Metrics {
			m[name] = map[string]results.Aggregate{}
			for f, v := range fields {
				m[name][f] = results.One(v)
			}
		}
		out = append(out, compareSource{col: compareCol{Name: "run " + r.ID, Parts: []string{"run " + r.ID}, Runs: r.ID, N: 1}, metrics: m})
	}
	return out
}

// shortParam is a swept path's last element ("workloads.load.config.rate" -> "rate").
func shortParam(p string) string { return p[strings.LastIndex(p, ".")+1:] }

// SeriesName names a workload's series as the summary and sweep charts show it: "lag" for the
// series "lag" of the workload "lag" (not "lag/lag"), else "workload/series".
func SeriesName(workload, series string) string {
	if workload == series {
		return series
	}
	return workload + "/" + series
}

// compareRows picks the rows: per workload series that had requests, p50, p99, throughput and
// errors; then the system under test's CPU and memory when the runner measured them.
func compareRows(srcs []compareSource) []compareRow {
	seen := map[string]bool{}
	var series []string // "workload/series" prefixes, in name order
	for _, src := range srcs {
		for _, name := range sortedKeys(src.metrics) {
			if p, ok := strings.CutSuffix(name, "/latency_ms"); ok && strings.Count(p, "/") == 1 && !seen[p] {
				seen[p] = true
				series = append(series, p)
			}
		}
	}
	var rows []compareRow
	field := func(metric, f string) func(map[string]map[string]results.Aggregate) (results.Aggregate, bool) {
		return func(m map[string]map[string]results.Aggregate) (results.Aggregate, bool) {
			a, ok := m[metric][f]
			return a, ok
		}
	}
	sort.Strings(series)
	for _, p := range series {
		hadRequests := false
		for _, src := range srcs {
			if c := src.metrics[p+"/latency_ms"]["count"]; c.Mean > 0 {
				hadRequests = true
			}
			if e := src.metrics[p+"/errors"]["value"]; e.Mean > 0 {
				hadRequests = true
			}
		}
		if !hadRequests {
			continue
		}
		w, s, _ := strings.Cut(p, "/")
		name := SeriesName(w, s)
		rows = append(rows,
			compareRow{name + " p50 (ms)", field(p+"/latency_ms", "p50")},
			compareRow{name + " p99 (ms)", field(p+"/latency_ms", "p99")},
			compareRow{name + " throughput (req/s)", field(p+"/throughput_rps", "value")},
			compareRow{name + " errors", field(p+"/errors", "value")},
		)
	}
	rows = append(rows,
		compareRow{"system under test: CPU (% of a core)", field("resources", "cpu_pct")},
		compareRow{"system under test: memory (MiB)", field("resources", "rss_mib")},
	)
	return rows
}

// compareTables lays the comparison out in tables of at most maxCompareCols columns; a row
// without a value in any column is left out.
func compareTables(s results.Summary) []compareTable {
	srcs := compareSources(s)
	if len(srcs) == 0 {
		return nil
	}
	rows := compareRows(srcs)
	var out []compareTable
	for start := 0; start < len(srcs); start += maxCompareCols {
		part := srcs[start:min(start+maxCompareCols, len(srcs))]
		t := compareTable{}
		for _, p := range SweptParams(s.Groups) {
			t.Params = append(t.Params, shortParam(p))
		}
		for _, src := range part {
			t.Columns = append(t.Columns, src.col)
		}
		for _, r := range rows {
			row := tableRow{Metric: r.label}
			measured := false
			for _, src := range srcs {
				if _, ok := r.cell(src.metrics); ok {
					measured = true
				}
			}
			if !measured {
				continue // not measured in any combination: e.g. no resources without samples
			}
			for _, src := range part {
				if a, ok := r.cell(src.metrics); ok {
					row.Cells = append(row.Cells, AggCell(a))
				} else {
					row.Cells = append(row.Cells, "–")
				}
			}
			t.Rows = append(t.Rows, row)
		}
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}
