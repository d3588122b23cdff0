package report

import (
	"fmt"
	"math"

	"github.com/continuum-project/continuum/internal/report/chart"
)

// figure is one chart as the page shows it: Kind is the data-chart attribute tests and readers
// look for ("latency-cdf", "node-cpu", ...).
// RunMarkers turns events into vertical markers; failed events are drawn red.
func RunMarkers(run *Run) []chart.Marker {
	var ms []chart.Marker
	for _, e := range run.Events {
		ms = append(ms, chart.Marker{X: e.T, Label: e.Label(), Failed: e.Status != "" && e.Status != "ok"})
	}
	return ms
}

// RunBands shades the run's warm-up.
func RunBands(run *Run) []chart.Band {
	if run.WarmupS > 0 {
		return []chart.Band{{X0: 0, X1: run.WarmupS, Label: "warm-up (not in summary)"}}
	}
	return nil
}

// TimeDomain fixes time axes to the run's planned duration so charts of one run line up.
func TimeDomain(c *chart.Line, run *Run) {
	c.XMin = chart.Fp(0)
	if run.DurationS > 0 {
		c.XMax = chart.Fp(run.DurationS)
	}
}

func cdfFigure(run *Run, w *Workload) chart.Figure {
	c := &chart.Line{ID: "cdf-" + run.ID + "-" + w.Name, XLabel: "latency (ms)", YLabel: "percentile of requests (%)", YMax: chart.Fp(100)}
	lo, hi := math.Inf(1), 0.0
	// percentiles.csv holds percentiles (0..100); a writer that used quantiles (0..1) would
	// otherwise draw a flat line at the bottom, so scale those up.
	pscale, maxP := 1.0, 0.0
	for _, p := range w.Percentiles {
		maxP = math.Max(maxP, p.Percentile)
	}
	if maxP > 0 && maxP <= 1 {
		pscale = 100
	}
	for i, s := range w.Series {
		sr := chart.Series{Name: s, Color: chart.Color(i)}
		for _, p := range w.Percentiles {
			if p.Series != s {
				continue
			}
			q := chart.Pt(p.LatencyMS, p.Percentile*pscale)
			q.Tip = fmt.Sprintf("p%s = %s ms", chart.FormatNum(p.Percentile*pscale), chart.FormatNum(p.LatencyMS))
			sr.Points = append(sr.Points, q)
			if p.LatencyMS > 0 {
				lo, hi = math.Min(lo, p.LatencyMS), math.Max(hi, p.LatencyMS)
			}
		}
		if len(sr.Points) > 0 {
			c.Series = append(c.Series, sr)
		}
	}
	// A log axis only pays off when series differ by orders of magnitude; otherwise the
	// linear axis keeps the shape of each distribution readable.
	scaleNote := "linear latency axis"
	if hi/lo > 100 {
		c.XLog = true
		scaleNote = "log latency axis: the series span more than two decades"
	}
	caption := fmt.Sprintf("Latency CDF of workload %q (run %s), from percentiles.csv (after warm-up); %s. Read: y%% of requests completed within x ms.", w.Name, run.ID, scaleNote)
	if len(w.Percentiles) == 0 {
		caption = fmt.Sprintf("Latency CDF of workload %q (run %s): percentiles.csv is missing or empty.", w.Name, run.ID)
	}
	return chart.NewFigure(c.ID, "latency-cdf", caption, c.SVG())
}

func latencyTimeFigure(run *Run, w *Workload) chart.Figure {
	c := &chart.Line{ID: "lat-" + run.ID + "-" + w.Name, XLabel: "time since start (s)", YLabel: "latency (ms)",
		Markers: RunMarkers(run), Bands: RunBands(run)}
	TimeDomain(c, run)
	for i, s := range w.Series {
		p50 := chart.Series{Name: s + " p50", Color: chart.Color(i)}
		p99 := chart.Series{Name: s + " p99", Color: chart.Color(i), Dash: true}
		for _, t := range w.Timeseries {
			if t.Series != s {
				continue
			}
			a, b := chart.Pt(t.T, t.P50), chart.Pt(t.T, t.P99)
			a.Tip = fmt.Sprintf("t=%ss p50=%s ms", chart.FormatNum(t.T), chart.FormatNum(t.P50))
			b.Tip = fmt.Sprintf("t=%ss p99=%s ms", chart.FormatNum(t.T), chart.FormatNum(t.P99))
			p50.Points, p99.Points = append(p50.Points, a), append(p99.Points, b)
		}
		if len(p50.Points) > 0 {
			c.Series = append(c.Series, p50, p99)
		}
	}
	caption := fmt.Sprintf("Latency over time of workload %q (run %s): p50 (solid) and p99 (dashed) per second, from timeseries.csv. Gaps are seconds without a successful request; dashed verticals are events.", w.Name, run.ID)
	return chart.NewFigure(c.ID, "latency-time", caption, c.SVG())
}

func throughputFigure(run *Run, w *Workload) chart.Figure {
	c := &chart.Line{ID: "tput-" + run.ID + "-" + w.Name, XLabel: "time since start (s)", YLabel: "requests per second (req/s)",
		Markers: RunMarkers(run), Bands: RunBands(run)}
	TimeDomain(c, run)
	var errSeries []chart.Series
	for i, s := range w.Series {
		ok := chart.Series{Name: s + " throughput", Color: chart.Color(i)}
		errs := chart.Series{Name: s + " errors/s", Color: chart.Color(i), Style: chart.StyleBars}
		prev, anyErr := math.NaN(), false
		for _, t := range w.Timeseries {
			if t.Series != s {
				continue
			}
			// Errors are counts per row; dividing by the row interval gives a rate on the same
			// axis as throughput even if the runner's interval is not one second.
			dt := 1.0
			if chart.Finite(prev) && t.T > prev {
				dt = t.T - prev
			}
			prev = t.T
			q := chart.Pt(t.T, t.ThroughputRPS)
			q.Tip = fmt.Sprintf("t=%ss %s req/s ok", chart.FormatNum(t.T), chart.FormatNum(t.ThroughputRPS))
			ok.Points = append(ok.Points, q)
			e := chart.Pt(t.T+dt/2, t.Errors/dt)
			e.Tip = fmt.Sprintf("t=%ss %s errors/s", chart.FormatNum(t.T), chart.FormatNum(t.Errors/dt))
			errs.Points = append(errs.Points, e)
			errs.BarWidth = dt
			anyErr = anyErr || t.Errors > 0
		}
		if len(ok.Points) > 0 {
			c.Series = append(c.Series, ok)
		}
		if anyErr {
			errSeries = append(errSeries, errs)
		}
	}
	c.Series = append(c.Series, errSeries...)
	caption := fmt.Sprintf("Throughput (successful requests per second, lines) and errors per second (bars) of workload %q (run %s), from timeseries.csv.", w.Name, run.ID)
	return chart.NewFigure(c.ID, "throughput-time", caption, c.SVG())
}

// nodeSeries groups the node rows (component empty) of samples.csv by node, in order of first
// appearance, so each node keeps its colour across the node charts.
func nodeSeries(run *Run) (nodes []string, rows map[string][]Sample) {
	rows = map[string][]Sample{}
	for _, s := range run.Samples {
		if s.Component != "" {
			continue
		}
		if _, ok := rows[s.Node]; !ok {
			nodes = append(nodes, s.Node)
		}
		rows[s.Node] = append(rows[s.Node], s)
	}
	return nodes, rows
}

func nodeFigures(run *Run) []chart.Figure {
	nodes, rows := nodeSeries(run)
	if len(nodes) == 0 {
		return nil
	}
	mk := func(kind, ylabel string) *chart.Line {
		c := &chart.Line{ID: kind + "-" + run.ID, XLabel: "time since start (s)", YLabel: ylabel, Markers: RunMarkers(run), Bands: RunBands(run)}
		TimeDomain(c, run)
		return c
	}
	cpu, mem, pow := mk("node-cpu", "CPU (cores)"), mk("node-memory", "memory (MiB)"), mk("node-power", "power (W)")
	net := mk("node-network", "network rate (Mbit/s)")
	for i, n := range nodes {
		cs, ms, ps := chart.Series{Name: n, Color: chart.Color(i)}, chart.Series{Name: n, Color: chart.Color(i)}, chart.Series{Name: n, Color: chart.Color(i)}
		rx := chart.Series{Name: n + " rx", Color: chart.Color(i)}
		tx := chart.Series{Name: n + " tx", Color: chart.Color(i), Dash: true}
		var prev *Sample
		for j := range rows[n] {
			s := &rows[n][j]
			cs.Points = append(cs.Points, chart.Pt(s.T, s.CPUUtil))
			ms.Points = append(ms.Points, chart.Pt(s.T, s.RSSBytes/(1<<20)))
			ps.Points = append(ps.Points, chart.Pt(s.T, s.PowerW))
			// The counters are cumulative; the rate belongs to the middle of the interval.
			// A counter going backwards (interface recreated) gives no rate for that interval.
			if prev != nil && s.T > prev.T {
				dt, mid := s.T-prev.T, (s.T+prev.T)/2
				if r := s.RxBytes - prev.RxBytes; r >= 0 {
					rx.Points = append(rx.Points, chart.Pt(mid, r*8/dt/1e6))
				}
				if t := s.TxBytes - prev.TxBytes; t >= 0 {
					tx.Points = append(tx.Points, chart.Pt(mid, t*8/dt/1e6))
				}
			}
			prev = s
		}
		cpu.Series, mem.Series, pow.Series = append(cpu.Series, cs), append(mem.Series, ms), append(pow.Series, ps)
		net.Series = append(net.Series, rx, tx)
	}
	return []chart.Figure{
		chart.NewFigure(cpu.ID, "node-cpu", fmt.Sprintf("CPU used per node (run %s), cores averaged over each sample interval, from samples.csv.", run.ID), cpu.SVG()),
		chart.NewFigure(mem.ID, "node-memory", fmt.Sprintf("Resident memory per node (run %s), MiB, from samples.csv.", run.ID), mem.SVG()),
		chart.NewFigure(net.ID, "node-network", fmt.Sprintf("Network rate per node on its emulated interface (run %s): received (solid) and sent (dashed), Mbit/s derived from the cumulative byte counters.", run.ID), net.SVG()),
		chart.NewFigure(pow.ID, "node-power", fmt.Sprintf("Modelled power per node (run %s), W: idle power plus the utilisation-proportional dynamic part.", run.ID), pow.SVG()),
		energyFigure(run, nodes, rows),
	}
}

// energyFigure stacks each node's energy at the end of the run: idle, each component's dynamic
// share, and whatever dynamic energy no component accounts for (the node's own processes).
func energyFigure(run *Run, nodes []string, rows map[string][]Sample) chart.Figure {
	lastComp := map[[2]string]float64{}
	var comps []string
	for _, s := range run.Samples {
		if s.Component == "" {
			continue
		}
		k := [2]string{s.Node, s.Component}
		if _, ok := lastComp[k]; !ok && !contains(comps, s.Component) {
			comps = append(comps, s.Component)
		}
		if chart.Finite(s.EnergyJ) {
			lastComp[k] = s.EnergyJ
		}
	}
	idle := chart.Stack{Name: "idle", Color: "#c9c9c9"}
	other := chart.Stack{Name: "other dynamic", Color: "#9c755f"}
	cstacks := make([]chart.Stack, len(comps))
	for i, c := range comps {
		cstacks[i] = chart.Stack{Name: c + " (dynamic)", Color: chart.Color(i)}
	}
	maxE := 0.0
	for _, n := range nodes {
		r := rows[n]
		last := r[len(r)-1]
		ie := last.IdleEnergyJ
		if !chart.Finite(ie) {
			ie = 0
		}
		idle.Values = append(idle.Values, ie)
		dyn := last.EnergyJ - ie
		for i, c := range comps {
			v := lastComp[[2]string{n, c}]
			cstacks[i].Values = append(cstacks[i].Values, v)
			dyn -= v
		}
		other.Values = append(other.Values, math.Max(dyn, 0))
		maxE = math.Max(maxE, last.EnergyJ)
	}
	unit, div := "J", 1.0
	if maxE >= 10000 {
		unit, div = "kJ", 1000
	}
	c := &chart.StackedBars{XLabel: "node", YLabel: "energy (" + unit + ")", Categories: nodes, Unit: unit}
	for _, s := range append(append([]chart.Stack{idle}, cstacks...), other) {
		for i := range s.Values {
			s.Values[i] /= div
		}
		c.Stacks = append(c.Stacks, s)
	}
	id := "node-energy-" + run.ID
	return chart.NewFigure(id, "node-energy", fmt.Sprintf("Energy per node over the whole run (run %s, warm-up included), split into idle and the dynamic share of each component, from the last row of samples.csv.", run.ID), c.SVG())
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
