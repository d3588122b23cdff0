package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/report/chart"
)

// The availability part of the report, for runs with faults (partition, kill, pause, ...): when
// each workload series got nothing through, per run, on one time axis with the fault windows
// shaded, and the longest such stretch per combination at the top of the page. It reads only
// timeseries.csv and events.csv, so it knows no system: for a failover scenario the lanes are
// each probe's gaps per store.

// faultActions are the events that can interrupt service; their windows end at the matching
// recovery (endsFault) or at the end of the run.
var faultActions = map[string]string{"partition": "heal", "kill": "restart", "pause": "resume", "link": "", "cpu": "", "stop": "start"}

// maxOutageLanes bounds the timeline; a larger sweep shows the first runs (the table has all).
const maxOutageLanes = 24

// gap is a stretch of whole seconds in which a series had no successful request: [From, To).
type gap struct{ From, To float64 }

// seriesGaps returns the gaps of one series from its timeseries rows: seconds with no success
// after the series' first success (seconds before it are start-up, not an outage). A second
// missing from the file counts as a gap too, up to the last row.
func seriesGaps(w *Workload, series string) (gaps []gap, seen bool) {
	ok := map[float64]float64{}
	first, last := math.Inf(1), math.Inf(-1)
	for _, t := range w.Timeseries {
		if t.Series != series {
			continue
		}
		ok[t.T] += t.OK
		last = math.Max(last, t.T)
		if t.OK > 0 {
			first = math.Min(first, t.T)
		}
	}
	if !chart.Finite(first) {
		return nil, false
	}
	for s := first; s <= last; s++ {
		if ok[s] > 0 {
			continue
		}
		if n := len(gaps); n > 0 && gaps[n-1].To == s {
			gaps[n-1].To = s + 1
		} else {
			gaps = append(gaps, gap{From: s, To: s + 1})
		}
	}
	return gaps, true
}

// slowFactor and slowMinMS define a slowed second: requests got through, but their median took
// more than slowFactor times the series' median before the first fault, and at least slowMinMS
// more. A probe whose writes wait out a partition (kv-lag's visibility) shows here, not as a gap.
const (
	slowFactor = 10
	slowMinMS  = 50
)

// seriesSlow returns the slowed stretches of a series from faultStart on (seconds with successes
// whose p50 is far above the series' median p50 before faultStart) and that median.
func seriesSlow(w *Workload, series string, faultStart float64) ([]gap, float64) {
	var before []float64
	for _, t := range w.Timeseries {
		if t.Series == series && t.T+1 <= faultStart && t.OK > 0 && chart.Finite(t.P50) {
			before = append(before, t.P50)
		}
	}
	if len(before) == 0 {
		return nil, math.NaN()
	}
	sort.Float64s(before)
	base := before[len(before)/2]
	var out []gap
	for _, t := range w.Timeseries {
		if t.Series != series || t.T+1 <= faultStart || t.OK == 0 || !chart.Finite(t.P50) || t.P50 <= slowFactor*base || t.P50-base < slowMinMS {
			continue
		}
		if n := len(out); n > 0 && out[n-1].To == t.T {
			out[n-1].To = t.T + 1
		} else {
			out = append(out, gap{From: t.T, To: t.T + 1})
		}
	}
	return out, base
}

// faultWindows are the run's fault intervals from its events, each to its recovery or the end.
func faultWindows(r *Run) []chart.Band {
	var out []chart.Band
	for i, e := range r.Events {
		end, isFault := faultActions[e.Action]
		if !isFault {
			continue
		}
		to := r.DurationS
		for _, f := range r.Events[i+1:] {
			if end != "" && f.Action == end && (e.Target == "" || f.Target == "" || f.Target == e.Target) {
				to = f.T
				break
			}
		}
		if to <= e.T {
			to = e.T + 1
		}
		out = append(out, chart.Band{X0: e.T, X1: to, Label: e.Label() + fmt.Sprintf(" (%s–%s s)", chart.FormatNum(e.T), chart.FormatNum(to))})
	}
	return out
}

// runLabel names a run by its swept parameters' labels (and repeat when there are several).
func runLabel(res *Results, r *Run, swept []string, repeats bool) string {
	var parts []string
	for _, p := range swept {
		parts = append(parts, labelOf(r, p))
	}
	l := strings.Join(parts, ", ")
	if l == "" {
		l = "run " + r.ID
	}
	if repeats {
		l += fmt.Sprintf(" #%d", r.Repeat)
	}
	return l
}

func labelOf(r *Run, p string) string {
	if l, ok := r.Labels[p]; ok && l != "" {
		return l
	}
	return r.Params[p]
}

func outageSection(res *Results) *sectionView {
	swept := SweptParams(res.Summary.Groups)
	repeats := false
	for _, r := range res.Runs {
		repeats = repeats || r.Repeat > 1
	}
	type laneRow struct {
		run      *Run
		label    string
		series   string
		gaps     []gap
		longest  float64
		totalGap float64
		slow     []gap
		base     float64 // the series' median p50 before the fault (ms)
		slowSecs float64
	}
	var rows []laneRow
	var bands []chart.Band
	var markers []chart.Marker
	for _, r := range res.Runs {
		wins := faultWindows(r)
		if len(wins) == 0 {
			continue
		}
		if bands == nil {
			bands, markers = wins, RunMarkers(r)
		}
		label := runLabel(res, r, swept, repeats)
		for _, w := range r.Workloads {
			for _, s := range w.Series {
				gaps, seen := seriesGaps(w, s)
				if !seen {
					continue
				}
				lr := laneRow{run: r, label: label, series: SeriesName(w.Name, s), gaps: gaps}
				for _, g := range gaps {
					lr.longest = math.Max(lr.longest, g.To-g.From)
					lr.totalGap += g.To - g.From
				}
				lr.slow, lr.base = seriesSlow(w, s, wins[0].X0)
				for _, g := range lr.slow {
					lr.slowSecs += g.To - g.From
				}
				rows = append(rows, lr)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].series < rows[j].series })

	tl := &chart.Timeline{ID: "outage-timeline", XLabel: "time since start (s)", Bands: bands, Markers: markers, Empty: "no gap", XMin: chart.Fp(0)}
	if d := rows[0].run.DurationS; d > 0 {
		tl.XMax = chart.Fp(d)
	}
	colors := map[string]string{}
	for i, lr := range rows {
		if i == maxOutageLanes {
			break
		}
		if _, ok := colors[lr.label]; !ok {
			colors[lr.label] = chart.Color(len(colors))
		}
		lane := chart.Lane{Name: lr.label + " · " + lr.series, Color: colors[lr.label]}
		for _, g := range lr.slow {
			lane.Spans = append(lane.Spans, chart.Span{X0: g.From, X1: g.To, Faint: true,
				Tip: fmt.Sprintf("%s, %s: slowed from %s s to %s s (median above %d× the %s ms before the fault)", lr.label, lr.series,
					chart.FormatNum(g.From), chart.FormatNum(g.To), slowFactor, chart.FormatNum(lr.base))})
		}
		for _, g := range lr.gaps {
			lane.Spans = append(lane.Spans, chart.Span{X0: g.From, X1: g.To,
				Tip: fmt.Sprintf("%s, %s: nothing got through from %s s to %s s", lr.label, lr.series, chart.FormatNum(g.From), chart.FormatNum(g.To))})
		}
		tl.Lanes = append(tl.Lanes, lane)
	}
	caption := fmt.Sprintf("When each workload series got no request through (solid bars) or got through only slowly (pale bars: "+
		"median latency above %d× the series' median before the fault and at least %d ms more), whole seconds by intended send time "+
		"from timeseries.csv; one lane per run and series, with the fault windows shaded (from events.csv", slowFactor, slowMinMS)
	if len(rows) > 1 && rows[0].run != rows[len(rows)-1].run {
		caption += fmt.Sprintf(", of run %s; the other runs' faults are at the same times when the scenario schedules them by time", rows[0].run.ID)
	}
	caption += ")."
	if len(rows) > maxOutageLanes {
		caption += fmt.Sprintf(" The first %d of %d lanes; the table has all.", maxOutageLanes, len(rows))
	}

	// The setup column names the swept values; without a sweep it would repeat the run.
	withSetup := len(swept) > 0
	t := Table{Class: "outage", Columns: []Column{{Header: "run"}, {Header: "setup"}, {Header: "series"},
		{Header: "gaps", Numeric: true}, {Header: "longest (s)", Title: "the longest stretch of seconds without a successful request", Numeric: true},
		{Header: "seconds without success", Numeric: true},
		{Header: "seconds slowed", Title: fmt.Sprintf("seconds whose median latency was above %d× the series' median before the fault", slowFactor), Numeric: true},
		{Header: "median before the fault (ms)", Numeric: true}}}
	if !withSetup {
		t.Columns = append(t.Columns[:1], t.Columns[2:]...)
	}
	// The headline: per series, each setup's longest gap (the worst repeat).
	worst := map[string]map[string]float64{}
	var seriesOrder, setupOrder []string
	for _, lr := range rows {
		row := []string{lr.run.ID, lr.label, lr.series, fmt.Sprint(len(lr.gaps)), chart.FormatNum(lr.longest),
			chart.FormatNum(lr.totalGap), chart.FormatNum(lr.slowSecs), chart.FormatNum(lr.base)}
		if !withSetup {
			row = append(row[:1], row[2:]...)
		}
		t.Rows = append(t.Rows, row)
		setup := runLabel(res, lr.run, swept, false)
		if worst[lr.series] == nil {
			worst[lr.series] = map[string]float64{}
			seriesOrder = append(seriesOrder, lr.series)
		}
		if _, ok := worst[lr.series][setup]; !ok && !contains(setupOrder, setup) {
			setupOrder = append(setupOrder, setup)
		}
		worst[lr.series][setup] = math.Max(worst[lr.series][setup], lr.longest)
	}
	c := SectionContent{Tables: []Table{t}, Figures: []chart.Figure{chart.NewFigure(tl.ID, "outage-timeline", caption, tl.SVG())},
		Note: "Runs with faults only. A gap is a second in which a series had no successful request, counted from its first success (start-up is not an outage); a series whose requests only slowed down during a fault (a probe whose writes wait out a partition) has slowed seconds instead."}
	// Headlines: the series that lost a second somewhere, each setup's worst repeat (the best and
	// worst setups when there are many); or one line saying none did.
	for _, s := range seriesOrder {
		var parts []string
		var lost int
		for _, setup := range setupOrder {
			if v, ok := worst[s][setup]; ok {
				parts = append(parts, fmt.Sprintf("%s: %s s", setup, chart.FormatNum(v)))
				if v > 0 {
					lost++
				}
			}
		}
		if lost == 0 {
			continue
		}
		if len(parts) > 6 {
			parts = []string{fmt.Sprintf("%d of %d setups lost at least a second, up to %s s", lost, len(parts), chart.FormatNum(maxOf(worst[s])))}
		}
		if len(c.Headlines) == 4 {
			c.Headlines = append(c.Headlines, Headline{Text: "… and more series: see the table", Bad: true})
			break
		}
		c.Headlines = append(c.Headlines, Headline{Text: "Longest stretch without a successful request, " + s + ": " + strings.Join(parts, "; "), Bad: true})
	}
	if len(c.Headlines) == 0 {
		c.Headlines = []Headline{{Text: "Every series got requests through in every second of every run with faults."}}
	}
	return &sectionView{ID: "outage", Title: "Availability under faults", SectionContent: c}
}

func maxOf(m map[string]float64) float64 {
	v := 0.0
	for _, x := range m {
		v = math.Max(v, x)
	}
	return v
}
