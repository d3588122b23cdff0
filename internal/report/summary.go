package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// latencyFields are the columns of the summary table, in order, with their headers.
var latencyFields = []struct{ Key, Header string }{
	{"count", "count"}, {"mean", "mean"}, {"p50", "p50"}, {"p90", "p90"}, {"p99", "p99"}, {"p999", "p99.9"}, {"max", "max"},
}

// summaryTable is one sweep combination (or one run when summary.json has no groups): latency
// metrics as rows of latencyFields, and single-value metrics (throughput, errors) apart.
type summaryTable struct {
	Title   string
	Params  string
	Runs    string
	N       int // repeats aggregated; > 1 means cells are "mean ± CI half-width"
	Latency []tableRow
	Values  []tableRow
}

type tableRow struct {
	Metric string
	Cells  []string
}

// FormatParams prints a run's parameters as "a=1, b=kv" in key order, each value by its short
// label when it has one, or "(none)".
func FormatParams(p results.Params, labels map[string]string) string {
	if len(p) == 0 {
		return "(none)"
	}
	keys := sortedKeys(p)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + results.Label(p, labels, k)
	}
	return strings.Join(parts, ", ")
}

// FormatValue prints a JSON value as written (numbers without trailing zeros).
func FormatValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// AggCell prints a group aggregate: the mean alone for one repeat, else mean ± CI half-width.
func AggCell(a results.Aggregate) string {
	if a.N <= 1 {
		return chart.FormatNum(a.Mean)
	}
	hw := (a.CI95[1] - a.CI95[0]) / 2
	return chart.FormatNum(a.Mean) + " ± " + chart.FormatNum(math.Abs(hw))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isLatency(fields []string) bool {
	for _, f := range fields {
		if f == "p50" || f == "count" {
			return true
		}
	}
	return false
}

// summaryTables builds the tables from summary.json groups, or from its runs when it has none.
func summaryTables(s results.Summary) []summaryTable {
	var out []summaryTable
	skip := zeroEverywhere(s)
	for i, g := range s.Groups {
		t := summaryTable{Title: fmt.Sprintf("Group %d", i+1), Params: FormatParams(g.Params, g.Labels), Runs: strings.Join(g.Runs, ", ")}
		if len(s.Groups) == 1 {
			t.Title = "All runs"
		}
		for _, m := range g.Metrics {
			for _, a := range m {
				t.N = max(t.N, a.N)
			}
		}
		t.Latency, t.Values = metricRows(g.Metrics, AggCell, skip)
		out = append(out, t)
	}
	if len(out) > 0 {
		return out
	}
	for _, r := range s.Runs {
		t := summaryTable{Title: "Run " + r.ID, Params: FormatParams(r.Params, r.Labels), Runs: r.ID, N: 1}
		t.Latency, t.Values = metricRows(r.Metrics, chart.FormatNum, skip)
		out = append(out, t)
	}
	return out
}

// zeroEverywhere lists the single-value metrics ("name field") that are 0 in every group and
// run: counters of a role an instance does not have (a consumer's "published"), which the full
// list leaves out (summary.json keeps them). Error and loss counters stay: their 0 is the news.
func zeroEverywhere(s results.Summary) map[string]bool {
	nonzero, zero := map[string]bool{}, map[string]bool{}
	note := func(name, f string, v float64) {
		k := name + " " + f
		if v != 0 {
			nonzero[k] = true
		} else {
			zero[k] = true
		}
	}
	for _, g := range s.Groups {
		for name, m := range g.Metrics {
			if !isLatency(sortedKeys(m)) {
				for f, a := range m {
					note(name, f, a.Mean)
				}
			}
		}
	}
	for _, r := range s.Runs {
		for name, m := range r.Metrics {
			if !isLatency(sortedKeys(m)) {
				for f, v := range m {
					note(name, f, v)
				}
			}
		}
	}
	out := map[string]bool{}
	for k := range zero {
		if !nonzero[k] && !zeroIsNews(k) {
			out[k] = true
		}
	}
	return out
}

// zeroIsNews says whether a metric's 0 tells the reader something (no errors, nothing lost).
func zeroIsNews(key string) bool {
	for _, w := range []string{"error", "lost", "fail", "drop", "missing", "timeout"} {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

// metricRows lays metrics out as table rows: latency metrics (those with p50/count fields) one row
// each with the latency columns, every other field a row of its own. cell renders one value (a
// plain number for a run, mean ± CI for a group); fields named in skip ("name field") are left out.
func metricRows[V any](metrics map[string]map[string]V, cell func(V) string, skip map[string]bool) (latency, values []tableRow) {
	for _, name := range sortedKeys(metrics) {
		m := metrics[name]
		if isLatency(sortedKeys(m)) {
			row := tableRow{Metric: name}
			for _, f := range latencyFields {
				if v, ok := m[f.Key]; ok {
					row.Cells = append(row.Cells, cell(v))
				} else {
					row.Cells = append(row.Cells, "–")
				}
			}
			latency = append(latency, row)
			continue
		}
		for _, f := range sortedKeys(m) {
			if skip[name+" "+f] {
				continue
			}
			label := name
			if f != "value" {
				label += " " + f
			}
			values = append(values, tableRow{Metric: label, Cells: []string{cell(m[f])}})
		}
	}
	return latency, values
}

// SweptParams returns the parameters whose values differ between groups, sorted.
func SweptParams(groups []results.Group) []string {
	vals := map[string]map[string]bool{}
	for _, g := range groups {
		for k, v := range g.Params {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	var out []string
	for _, k := range sortedKeys(vals) {
		if len(vals[k]) > 1 {
			out = append(out, k)
		}
	}
	return out
}

// sweepAxis is how a swept parameter is placed on an x axis: numbers and durations (in ms) on a
// numeric axis, anything else (stores, strategies, component lists) as categories in the order the
// runner wrote the groups, named by their labels.
type sweepAxis struct {
	param   string
	numeric bool
	unit    string   // "ms" for durations
	cats    []string // categorical: the labels, in group order
}

func newSweepAxis(groups []results.Group, param string) sweepAxis {
	ax := sweepAxis{param: param, numeric: true}
	allDur := true
	for _, g := range groups {
		v := g.Params[param]
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			allDur = allDur && isDuration(v)
			ax.numeric = false
		}
		if l := results.Label(g.Params, g.Labels, param); !contains(ax.cats, l) {
			ax.cats = append(ax.cats, l)
		}
	}
	if !ax.numeric && allDur {
		ax.numeric, ax.unit = true, "ms"
	}
	if ax.numeric {
		ax.cats = nil
	}
	return ax
}

func isDuration(v string) bool {
	_, err := time.ParseDuration(v)
	return err == nil
}

// x is a group's position on the axis: its value, or its category's index.
func (ax sweepAxis) x(g results.Group) float64 {
	v := g.Params[ax.param]
	if ax.unit == "ms" {
		if _, err := strconv.ParseFloat(v, 64); err != nil { // "0" is a duration and a number
			d, _ := time.ParseDuration(v)
			return float64(d) / float64(time.Millisecond)
		}
	}
	if ax.numeric {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	l := results.Label(g.Params, g.Labels, ax.param)
	for i, c := range ax.cats {
		if c == l {
			return float64(i)
		}
	}
	return math.NaN()
}

// min is the smallest position of the groups on a numeric axis.
func (ax sweepAxis) min(groups []results.Group) float64 {
	m := math.Inf(1)
	for _, g := range groups {
		m = math.Min(m, ax.x(g))
	}
	return m
}

func (ax sweepAxis) title() string {
	if ax.unit != "" {
		return ax.param + " (" + ax.unit + ")"
	}
	return ax.param
}

// sweepFigures plots, for a sweep, each latency field (p50, p99) and throughput against a swept
// parameter: the first numeric one as a line per workload/series, or else the first one as
// grouped bars, one category per value. Other swept parameters split the lines (bars); error
// bars are the 95% CI across repeats when a group has more than one.
func sweepFigures(s results.Summary) []chart.Figure {
	swept := SweptParams(s.Groups)
	if len(s.Groups) < 2 || len(swept) == 0 {
		return nil
	}
	ax := newSweepAxis(s.Groups, swept[0])
	for _, p := range swept {
		if a := newSweepAxis(s.Groups, p); a.numeric {
			ax = a
			break
		}
	}
	var rest []string
	for _, p := range swept {
		if p != ax.param {
			rest = append(rest, p)
		}
	}
	type spec struct{ kind, suffix, field, ylabel, what string }
	specs := []spec{
		{"sweep-latency", "/latency_ms", "p50", "p50 latency (ms)", "Median latency"},
		{"sweep-latency", "/latency_ms", "p99", "p99 latency (ms)", "p99 latency"},
		{"sweep-throughput", "/throughput_rps", "value", "throughput (req/s)", "Throughput"},
		// Failures beside latency and throughput: a store that failed thousands of requests
		// during a partition must not look as good as one that failed none.
		{"sweep-errors", "/errors", "value", "failed requests", "Failed requests (errors and timeouts)"},
	}
	var figs []chart.Figure
	for _, sp := range specs {
		c := &chart.Line{ID: "sweep-" + sp.field + strings.ReplaceAll(sp.suffix, "/", "-"), XLabel: ax.title(), YLabel: sp.ylabel,
			XPad: 0.06, XCategories: ax.cats}
		if ax.numeric && ax.min(s.Groups) >= 0 {
			c.XMin = chart.Fp(0) // rates, delays, sizes: padding must not invent negative values
		}
		lines := map[string]*chart.Series{}
		var order []string
		for _, g := range s.Groups {
			others := results.Params{}
			for _, k := range rest {
				others[k] = g.Params[k]
			}
			for _, name := range sortedKeys(g.Metrics) {
				a, ok := g.Metrics[name][sp.field]
				if !ok || !strings.HasSuffix(name, sp.suffix) {
					continue
				}
				label := strings.TrimSuffix(name, sp.suffix)
				if w, ser, ok := strings.Cut(label, "/"); ok {
					label = SeriesName(w, ser) // "lag", not "lag/lag"
				}
				if len(others) > 0 {
					label += " (" + FormatParams(others, g.Labels) + ")"
				}
				if lines[label] == nil {
					lines[label] = &chart.Series{Name: label, Color: chart.Color(len(order)), ShowPoints: true}
					if !ax.numeric {
						lines[label].Style, lines[label].BarWidth = chart.StyleBars, 0.75 // a gap between categories
					}
					order = append(order, label)
				}
				p := chart.Pt(ax.x(g), a.Mean)
				if a.N > 1 {
					// With few repeats the t interval can reach below zero; latencies and rates
					// cannot, so the bar stops at the axis.
					p.Lo, p.Hi = math.Max(a.CI95[0], 0), a.CI95[1]
				}
				p.Tip = fmt.Sprintf("%s=%s: %s (n=%d)", ax.param, results.Label(g.Params, g.Labels, ax.param), AggCell(a), a.N)
				lines[label].Points = append(lines[label].Points, p)
			}
		}
		if len(order) == 0 {
			continue
		}
		lo, hi := math.Inf(1), 0.0
		for _, l := range order {
			sr := lines[l]
			sort.SliceStable(sr.Points, func(i, j int) bool { return sr.Points[i].X < sr.Points[j].X })
			for _, p := range sr.Points {
				if p.Y > 0 {
					lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
				}
			}
			c.Series = append(c.Series, *sr)
		}
		// Bars print their values when they span a decade or more (a 1 ms bar beside 75 ms
		// would vanish) and always for failures, whose 0 is the point.
		labelled := !ax.numeric && (sp.kind == "sweep-errors" || hi >= 10*lo)
		if labelled {
			for i := range c.Series {
				c.Series[i].ValueLabels = true
			}
		}
		shape := "one line per workload/series; points are the mean across repeats"
		if !ax.numeric {
			shape = "one bar per workload/series and value; bars are the mean across repeats"
		}
		caption := fmt.Sprintf("%s vs %s, %s, error bars the 95%% confidence interval (Student t) when a combination has more than one repeat (cut at 0). From summary.json.", sp.what, ax.param, shape)
		if labelled {
			caption += " Each bar's value is printed above it."
		}
		figs = append(figs, chart.NewFigure(c.ID, sp.kind, caption, c.SVG()))
	}
	return figs
}
