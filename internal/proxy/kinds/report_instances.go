package kinds

import (
	"fmt"
	"math"
	"sort"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// The per-instance part of the QoS section: for a workload whose answers named their
// instance (instances.csv, behind `continuum proxy`), the share of requests per instance over
// time with the events marked, per phase between events, and per sweep combination, in one
// colour per instance across the page.
// instancePalette gives every instance seen in the results one colour for the whole page
// (sorted names; requests no instance answered in grey), so s3 is s3 in every chart.
func instancePalette(res *report.Results) map[string]string {
	set := map[string]bool{}
	for _, r := range res.Runs {
		for _, w := range r.Workloads {
			for _, p := range w.Instances {
				set[p.Instance] = true
			}
			for _, st := range w.Stats {
				for name := range st.Instances {
					set[name] = true
				}
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	return instanceColors(names)
}

func instanceColors(names []string) map[string]string {
	sort.Strings(names)
	out := map[string]string{}
	i := 0
	for _, n := range names {
		if n == results.NoInstance {
			out[n] = "#9d9d9d"
			continue
		}
		out[n] = chart.Color(i)
		i++
	}
	return out
}

func orderedInstances(set map[string]bool) []string {
	var names []string
	for n := range set {
		if n != results.NoInstance {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if set[results.NoInstance] {
		names = append(names, results.NoInstance)
	}
	return names
}

// instanceShareByGroupFigure is the seed's "processing instance distribution": per
// configuration, the share of requests each instance served (stats.json, after the warm-up).
func instanceShareByGroupFigure(groups []qosGroup, name string, colors map[string]string) (chart.Figure, bool) {
	set := map[string]bool{}
	var cats []string
	var per []map[string]float64
	for _, g := range groups {
		sum, n := map[string]float64{}, 0
		for _, r := range g.runs {
			_, _, st, ok := seriesOf(r, name)
			if !ok || len(st.Instances) == 0 {
				continue
			}
			for inst, is := range st.Instances {
				sum[inst] += 100 * is.Share
				set[inst] = true
			}
			n++
		}
		if n == 0 {
			continue
		}
		for k := range sum {
			sum[k] /= float64(n)
		}
		cats = append(cats, g.label)
		per = append(per, sum)
	}
	if len(set) == 0 {
		return chart.Figure{}, false
	}
	names := orderedInstances(set)
	c := &chart.StackedBars{XLabel: "configuration", YLabel: "requests (%)", Categories: cats, Unit: "%", Percent: true}
	for _, inst := range names {
		st := chart.Stack{Name: inst, Color: colors[inst]}
		for _, p := range per {
			st.Values = append(st.Values, p[inst])
		}
		c.Stacks = append(c.Stacks, st)
	}
	caption := fmt.Sprintf("Share of the requests of %s served by each instance, per configuration (after the warm-up, from the X-Continuum-Instance answers counted in stats.json); %s: requests no instance answered.", name, results.NoInstance)
	return chart.NewFigure("instance-share-"+slug(name), "instance-share", caption, c.SVG()), true
}

// instanceFigures are a run's per-instance charts of one workload: the share of requests per
// instance over time (stacked, events marked) and per phase between events, for every series
// with instances; plus the % of requests within QoS per second when the workload had a QoS latency.
func instanceFigures(run *report.Run, w *report.Workload, palette map[string]string) []chart.Figure {
	var figs []chart.Figure
	bySeries := map[string][]report.InstancePoint{}
	var order []string
	for _, p := range w.Instances {
		if _, ok := bySeries[p.Series]; !ok {
			order = append(order, p.Series)
		}
		bySeries[p.Series] = append(bySeries[p.Series], p)
	}
	for _, s := range order {
		figs = append(figs, shareTimeFigure(run, w, s, bySeries[s], palette))
		if len(run.Events) > 0 { // without events the run is one phase: the share chart says it all
			figs = append(figs, sharePhaseFigure(run, w, s, bySeries[s], palette))
		}
	}
	if f, ok := qosTimeFigure(run, w); ok {
		figs = append(figs, f)
	}
	return figs
}

// binWidth keeps a time chart at about 60 bins or fewer.
func binWidth(run *report.Run, pts []report.InstancePoint) float64 {
	end := run.DurationS
	for _, p := range pts {
		end = math.Max(end, p.T+1)
	}
	return math.Max(1, math.Ceil(end/60))
}

func shareTimeFigure(run *report.Run, w *report.Workload, s string, pts []report.InstancePoint, colors map[string]string) chart.Figure {
	bw := binWidth(run, pts)
	set := map[string]bool{}
	bins := map[int]map[string]float64{}
	maxBin := 0
	for _, p := range pts {
		b := int(p.T / bw)
		if bins[b] == nil {
			bins[b] = map[string]float64{}
		}
		bins[b][p.Instance] += p.Requests
		set[p.Instance] = true
		maxBin = max(maxBin, b)
	}
	names := orderedInstances(set)
	c := &chart.Line{ID: "share-" + run.ID + "-" + w.Name + "-" + slug(s), XLabel: "time since start (s)", YLabel: "share of requests (%)",
		YMax: chart.Fp(100), Markers: report.RunMarkers(run), Bands: report.RunBands(run)}
	report.TimeDomain(c, run)
	// Layers are cumulative from the bottom (first instance) up, each filled from the layer
	// below it (Lo) to its own top.
	layers := make([]chart.Series, len(names))
	for i, n := range names {
		layers[i] = chart.Series{Name: n, Color: colors[n], Style: chart.StyleArea}
	}
	for b := 0; b <= maxBin; b++ {
		total := 0.0
		for _, v := range bins[b] {
			total += v
		}
		acc := 0.0
		for i, n := range names {
			y, lo := math.NaN(), acc
			if total > 0 {
				acc += 100 * bins[b][n] / total
				y = acc
			}
			// A bin is drawn as a flat step over its width, so shares do not seem to drift
			// between bins.
			for _, x := range []float64{float64(b) * bw, float64(b+1) * bw} {
				p := chart.Pt(x, y)
				p.Lo = lo
				p.Tip = fmt.Sprintf("t=%s–%ss %s: %s%%", chart.FormatNum(float64(b)*bw), chart.FormatNum(float64(b+1)*bw), n, chart.FormatNum(100*bins[b][n]/math.Max(total, 1)))
				layers[i].Points = append(layers[i].Points, p)
			}
		}
	}
	c.Series = layers
	caption := fmt.Sprintf("Share of the requests of %s/%s served by each instance over time (run %s), stacked, in %s s bins by intended send time, from instances.csv; dashed verticals are events.", w.Name, s, run.ID, chart.FormatNum(bw))
	return chart.NewFigure(c.ID, "instance-share-time", caption, c.SVG())
}

// sharePhaseFigure splits the run at its events (T0 = start, Ti = the i-th event) and shows the
// share per instance in each phase: the seed's distribution per time range.
func sharePhaseFigure(run *report.Run, w *report.Workload, s string, pts []report.InstancePoint, colors map[string]string) chart.Figure {
	bounds := []float64{0}
	cats := []string{"T0 start"}
	for i, e := range run.Events {
		bounds = append(bounds, e.T)
		cats = append(cats, fmt.Sprintf("T%d %s", i+1, e.Label()))
	}
	set := map[string]bool{}
	counts := make([]map[string]float64, len(bounds))
	totals := make([]float64, len(bounds))
	for i := range counts {
		counts[i] = map[string]float64{}
	}
	for _, p := range pts {
		ph := sort.SearchFloat64s(bounds, p.T+0.5) - 1 // the second's middle decides its phase
		ph = max(ph, 0)
		counts[ph][p.Instance] += p.Requests
		totals[ph] += p.Requests
		set[p.Instance] = true
	}
	names := orderedInstances(set)
	c := &chart.StackedBars{XLabel: "phase (from the event that starts it)", YLabel: "share of requests (%)", Categories: cats, Unit: "%", Percent: true}
	for _, n := range names {
		st := chart.Stack{Name: n, Color: colors[n]}
		for ph := range bounds {
			v := 0.0
			if totals[ph] > 0 {
				v = 100 * counts[ph][n] / totals[ph]
			}
			st.Values = append(st.Values, v)
		}
		c.Stacks = append(c.Stacks, st)
	}
	caption := fmt.Sprintf("Share of the requests of %s/%s per instance in each phase of run %s: T0 is the start, Ti begins at the i-th event (warm-up included), from instances.csv.", w.Name, s, run.ID)
	return chart.NewFigure("phases-"+run.ID+"-"+w.Name+"-"+slug(s), "instance-share-phases", caption, c.SVG())
}

// qosTimeFigure is the % of requests within the QoS latency per second, events marked.
func qosTimeFigure(run *report.Run, w *report.Workload) (chart.Figure, bool) {
	c := &chart.Line{ID: "qos-time-" + run.ID + "-" + w.Name, XLabel: "time since start (s)", YLabel: "requests within QoS (%)",
		YMax: chart.Fp(100), Markers: report.RunMarkers(run), Bands: report.RunBands(run)}
	report.TimeDomain(c, run)
	for i, s := range w.Series {
		sr := chart.Series{Name: s, Color: chart.Color(i)}
		for _, t := range w.Timeseries {
			if t.Series != s || !chart.Finite(t.WithinQoS) || t.Sent <= 0 {
				continue
			}
			p := chart.Pt(t.T+0.5, 100*t.WithinQoS/t.Sent)
			p.Tip = fmt.Sprintf("t=%ss %s of %s within QoS", chart.FormatNum(t.T), chart.FormatNum(t.WithinQoS), chart.FormatNum(t.Sent))
			sr.Points = append(sr.Points, p)
		}
		if len(sr.Points) > 0 {
			c.Series = append(c.Series, sr)
		}
	}
	if len(c.Series) == 0 {
		return chart.Figure{}, false
	}
	caption := fmt.Sprintf("Requests within the QoS latency per second (run %s, workload %s): successes within the requirement over the requests intended in that second, from timeseries.csv; dashed verticals are events.", run.ID, w.Name)
	return chart.NewFigure(c.ID, "qos-time", caption, c.SVG()), true
}
