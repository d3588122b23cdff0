package kinds

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// The QoS part of the report, shown whenever the data exists: a workload with a QoS latency
// (stats.json "qos", the within_qos column) gets the QoS table, the response-time ranges and
// CDFs per sweep combination; a workload whose answers named their instance (instances.csv,
// behind `continuum proxy`) gets the share of requests per instance, over time with the events
// marked and per phase between events. These are the figures of QEdgeProxy's evaluation
// (seeds/004 §4.3), computed for whatever the scenario swept (typically the routing strategy).

func init() {
	report.RegisterSection(report.Section{
		ID:    "proxy",
		Title: "QoS routing (proxy)",
		Order: 10,
		// http-load's QoS latencies and instance shares, which the proxy's experiments measure.
		Kinds: []string{"proxy", "http-load"},
		Build: func(res *report.Results) *report.SectionContent { return buildQoS(res, instancePalette(res)) },
		WorkloadFigures: func(res *report.Results, run *report.Run, w *report.Workload) []chart.Figure {
			return instanceFigures(run, w, instancePalette(res))
		},
	})
}

// qosGroup is one sweep combination (or run, without groups) with its runs.
type qosGroup struct {
	label   string
	params  []string
	metrics map[string]map[string]results.Aggregate
	runs    []*report.Run
}

func qosGroups(res *report.Results) ([]qosGroup, []string) {
	combos, swept := report.Combinations(res)
	var out []qosGroup
	for i, c := range combos {
		qg := qosGroup{params: c.Params, metrics: c.Metrics, runs: c.Runs, label: strings.Join(c.Params, ", ")}
		if qg.label == "" {
			qg.label = fmt.Sprintf("group %d", i+1)
			if len(combos) == 1 {
				qg.label = "all runs"
			}
		}
		out = append(out, qg)
	}
	if len(out) > 0 {
		return out, swept
	}
	// No groups (summary.json missing): one group per run, from its stats.json.
	for _, r := range res.Runs {
		qg := qosGroup{label: "run " + r.ID, metrics: map[string]map[string]results.Aggregate{}, runs: []*report.Run{r}}
		for _, w := range r.Workloads {
			for name, st := range w.Stats {
				if q := st.QoS; q != nil {
					qg.metrics[w.Name+"/"+name+"/qos"] = map[string]results.Aggregate{"latency_ms": results.One(q.LatencyMS),
						"within_pct": results.One(q.WithinPct), "total": results.One(float64(q.Total)), "mean_ms": results.One(st.Latency.Mean)}
				}
			}
		}
		out = append(out, qg)
	}
	return out, nil
}

// qosSeries lists the "<workload>/<series>" names that have a QoS metric in any group.
func qosSeries(groups []qosGroup) []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range groups {
		for _, name := range sortedKeys(g.metrics) {
			if s, ok := strings.CutSuffix(name, "/qos"); ok && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// buildQoS returns the QoS section, or nil when no workload had a QoS latency.
func buildQoS(res *report.Results, palette map[string]string) *report.SectionContent {
	groups, swept := qosGroups(res)
	names := qosSeries(groups)
	if len(names) == 0 {
		return nil
	}
	t := report.Table{Class: "qos"}
	for _, p := range swept {
		t.Columns = append(t.Columns, report.Column{Header: p[strings.LastIndex(p, ".")+1:], Title: p})
	}
	t.Columns = append(t.Columns, report.Column{Header: "workload/series"}, report.Column{Header: "QoS (ms)", Numeric: true},
		report.Column{Header: "avg response (ms)", Numeric: true}, report.Column{Header: "within QoS (%)", Numeric: true},
		report.Column{Header: "requests", Numeric: true}, report.Column{Header: "runs"})
	for _, g := range groups {
		for _, s := range names {
			m, ok := g.metrics[s+"/qos"]
			if !ok {
				continue
			}
			var ids []string
			for _, r := range g.runs {
				ids = append(ids, r.ID)
			}
			row := append(append([]string{}, g.params...), s, chart.FormatNum(m["latency_ms"].Mean),
				report.AggCell(m["mean_ms"]), report.AggCell(m["within_pct"]), report.AggCell(m["total"]), strings.Join(ids, ", "))
			t.Rows = append(t.Rows, row)
		}
	}
	c := &report.SectionContent{Tables: []report.Table{t}}
	for _, s := range names {
		var within []report.Named
		qos := 0.0
		for _, g := range groups {
			if m, ok := g.metrics[s+"/qos"]; ok {
				within = append(within, report.Named{Name: g.label, Value: m["within_pct"].Mean})
				qos = m["latency_ms"].Mean
			}
		}
		c.Headlines = append(c.Headlines, report.Headline{Text: fmt.Sprintf("Requests within QoS (%s ms), %s: %s", chart.FormatNum(qos), s, report.Spread(within, "%"))})
	}
	for _, s := range names {
		c.Figures = append(c.Figures, rangesFigure(groups, s), qosCDFFigure(groups, s))
		if f, ok := instanceShareByGroupFigure(groups, s, palette); ok {
			c.Figures = append(c.Figures, f)
		}
	}
	c.Note = "Average response time is over the successful requests; % within QoS counts every request sent after the warm-up, so errors and timeouts are misses."
	c.MarkdownNote = c.Note
	for _, p := range swept {
		c.MarkdownNote += fmt.Sprintf(" %s: %s.", p[strings.LastIndex(p, ".")+1:], p)
	}
	return c
}

// seriesOf splits "<workload>/<series>" and finds the run's workload and that series' stats.
func seriesOf(r *report.Run, name string) (*report.Workload, string, results.SeriesStats, bool) {
	wname, series, _ := strings.Cut(name, "/")
	for _, w := range r.Workloads {
		if w.Name == wname {
			st, ok := w.Stats[series]
			return w, series, st, ok
		}
	}
	return nil, "", results.SeriesStats{}, false
}

// shareBelow is the fraction of successful requests with latency <= x, interpolated linearly
// in percentiles.csv's CDF of the series; NaN without points.
func shareBelow(pts []report.PercentilePoint, x float64) float64 {
	if len(pts) == 0 {
		return math.NaN()
	}
	if x < pts[0].LatencyMS {
		return 0
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if x < b.LatencyMS {
			if b.LatencyMS == a.LatencyMS {
				return a.Percentile / 100
			}
			f := (x - a.LatencyMS) / (b.LatencyMS - a.LatencyMS)
			return (a.Percentile + f*(b.Percentile-a.Percentile)) / 100
		}
	}
	return 1
}

func percentilesOf(w *report.Workload, series string) []report.PercentilePoint {
	var pts []report.PercentilePoint
	for _, p := range w.Percentiles {
		if p.Series == series {
			pts = append(pts, p)
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].LatencyMS < pts[j].LatencyMS })
	return pts
}

// rangeShares splits a run's requests into the seed's response-time ranges, scaled to the
// requirement q (for q = 80 ms: 0-20, 20-50, 50-80, 80-120, >120 ms) plus failed ones, as % of
// all requests: exact from stats.json's counts, or, for results without them, split at q
// exactly and interpolated inside each side from the CDF in percentiles.csv.
func rangeShares(w *report.Workload, series string, st results.SeriesStats) ([]float64, bool) {
	q := st.QoS
	if q == nil || q.Total <= 0 {
		return nil, false
	}
	if b := q.Below; exactRanges(b, q.LatencyMS) {
		ok, total := float64(st.OK), float64(q.Total)
		c := func(i int) float64 { return float64(b[i].Count) }
		vals := []float64{c(0), c(1) - c(0), c(2) - c(1), c(3) - c(2), ok - c(3), total - ok}
		for i := range vals {
			vals[i] = 100 * math.Max(vals[i], 0) / total
		}
		return vals, true
	}
	pts := percentilesOf(w, series)
	ok, total := float64(st.OK), float64(q.Total)
	within := float64(q.Within)
	above := math.Max(ok-within, 0)
	split := func(x, lo, hi float64) float64 { // successes in (lo, x], bounded by the exact totals
		v := shareBelow(pts, x)
		if !chart.Finite(v) {
			return math.NaN()
		}
		return math.Min(math.Max(v*ok-lo, 0), hi)
	}
	b1 := split(q.LatencyMS/4, 0, within)
	b2 := split(q.LatencyMS*5/8, 0, within)
	if !chart.Finite(b1) || !chart.Finite(b2) { // no CDF: all of it in the last range below the limit
		b1, b2 = 0, 0
	}
	b2 = math.Max(b2, b1)
	b4 := split(q.LatencyMS*1.5, within, above)
	if !chart.Finite(b4) {
		b4 = 0
	}
	vals := []float64{b1, b2 - b1, within - b2, b4, above - b4, math.Max(total-ok, 0)}
	for i := range vals {
		vals[i] = 100 * vals[i] / total
	}
	return vals, true
}

var rangeColors = []string{"#1a9850", "#66bd63", "#a6d96a", "#fdae61", "#f46d43", "#a50026"}

// rangeFractions are the upper bounds of the seed's response-time ranges as fractions of the
// requirement (for 80 ms: 20, 50, 80 and 120 ms). A scenario gets exact ranges by giving http-load
// these as latency_bounds.
var rangeFractions = [...]float64{0.25, 0.625, 1, 1.5}

// exactRanges reports whether stats.json counted the successes at exactly the range bounds of
// requirement q.
func exactRanges(below []results.QoSBelow, q float64) bool {
	if len(below) != len(rangeFractions) {
		return false
	}
	for i, f := range rangeFractions {
		if math.Abs(below[i].LatencyMS-f*q) > 1e-6*q {
			return false
		}
	}
	return true
}

func rangeNames(q float64) []string {
	f := chart.FormatNum
	return []string{
		fmt.Sprintf("≤ %s ms", f(q/4)), fmt.Sprintf("%s–%s ms", f(q/4), f(q*5/8)), fmt.Sprintf("%s–%s ms", f(q*5/8), f(q)),
		fmt.Sprintf("%s–%s ms", f(q), f(q*1.5)), fmt.Sprintf("> %s ms", f(q*1.5)), "failed",
	}
}

// rangesFigure is the seed's response-time distribution: one bar per sweep combination, split
// into ranges around the requirement (the mean over the combination's runs).
func rangesFigure(groups []qosGroup, name string) chart.Figure {
	var q float64
	var cats []string
	var per [][]float64
	for _, g := range groups {
		sum := make([]float64, len(rangeColors))
		n := 0
		for _, r := range g.runs {
			w, sname, st, ok := seriesOf(r, name)
			if !ok {
				continue
			}
			vals, ok := rangeShares(w, sname, st)
			if !ok {
				continue
			}
			q = st.QoS.LatencyMS
			for i, v := range vals {
				sum[i] += v
			}
			n++
		}
		if n == 0 {
			continue
		}
		for i := range sum {
			sum[i] /= float64(n)
		}
		cats = append(cats, g.label)
		per = append(per, sum)
	}
	c := &chart.StackedBars{XLabel: "configuration", YLabel: "requests (%)", Categories: cats, Unit: "%", Percent: true}
	for i, rn := range rangeNames(q) {
		st := chart.Stack{Name: rn, Color: rangeColors[i]}
		for _, p := range per {
			st.Values = append(st.Values, p[i])
		}
		c.Stacks = append(c.Stacks, st)
	}
	caption := fmt.Sprintf("Response-time distribution of %s per configuration: share of all requests after the warm-up in each range around the %s ms requirement (green: within it); failed requests on top. From stats.json's counts (results without them: interpolated from percentiles.csv); with repeats, the mean over runs.", name, chart.FormatNum(q))
	return chart.NewFigure("qos-ranges-"+slug(name), "qos-ranges", caption, c.SVG())
}

// qosCDFFigure overlays the latency CDFs of the configurations, the requirement marked.
func qosCDFFigure(groups []qosGroup, name string) chart.Figure {
	c := &chart.Line{ID: "qos-cdf-" + slug(name), XLabel: "response time (ms)", YLabel: "percentile of successful requests (%)", YMax: chart.Fp(100)}
	var q float64
	lo, hi := math.Inf(1), 0.0
	i := 0
	for _, g := range groups {
		for k, r := range g.runs {
			w, sname, st, ok := seriesOf(r, name)
			if !ok || w == nil {
				continue
			}
			if st.QoS != nil {
				q = st.QoS.LatencyMS
			}
			label := g.label
			if len(g.runs) > 1 {
				label += fmt.Sprintf(" (run %s)", r.ID)
			}
			sr := chart.Series{Name: label, Color: chart.Color(i)}
			if k > 0 {
				sr.Dash = true
			}
			for _, p := range percentilesOf(w, sname) {
				pp := chart.Pt(p.LatencyMS, p.Percentile)
				pp.Tip = fmt.Sprintf("p%s = %s ms", chart.FormatNum(p.Percentile), chart.FormatNum(p.LatencyMS))
				sr.Points = append(sr.Points, pp)
				if p.LatencyMS > 0 {
					lo, hi = math.Min(lo, p.LatencyMS), math.Max(hi, p.LatencyMS)
				}
			}
			if len(sr.Points) > 0 {
				c.Series = append(c.Series, sr)
			}
		}
		i++
	}
	if q > 0 {
		c.Markers = []chart.Marker{{X: q, Label: "QoS " + chart.FormatNum(q) + " ms"}}
	}
	if hi/lo > 100 {
		c.XLog = true
	}
	caption := fmt.Sprintf("Response-time CDF of %s per configuration, from percentiles.csv (successful requests after the warm-up); the dashed vertical is the requirement. Read: y%% of the successful requests took at most x ms.", name)
	return chart.NewFigure(c.ID, "qos-cdf", caption, c.SVG())
}

// slug makes a name usable in element ids.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
