package kinds

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// The IoT part of the report: seeds/001's figures per sweep combination (implementation, b_s,
// ...). The processing table has t_ex (Fig. 3), t_rr (Figs. 4-5), the implementation's CPU and
// memory summed over its instances (Figs. 6-7) and the emulator's own load; the scaling table
// has the gateway's CPU and memory (Fig. 8) and its instances; with the MQTT ingress, a table of
// readings published, received and not received by the end and of the ingress delay t_in; the figures are t_rr CDFs with
// one line per implementation (Figs. 4-5).

func init() {
	report.RegisterSection(report.Section{ID: "iot", Title: "IoT processing", Order: 25,
		Kinds: []string{"iot", "function", "microservice", "faas-gateway"}, Build: build})
}

func build(res *report.Results) *report.SectionContent {
	groups, swept := report.Combinations(res)
	emulators := report.MetricSuffixes(groups, "iot/")
	if len(emulators) == 0 {
		return nil
	}
	c := &report.SectionContent{Note: "seeds/001 on our testbed. t_ex is the time inside handle() (X-Handler-Seconds), t_rr a batch's request-reply time from when it was due, both in ms after the warm-up. " +
		"CPU is % of one core, summed over the implementation's instances (function, microservice and gateway-started instances with their zygote); a gateway's own CPU and memory are in the scaling table. Cells are means over repeats."}
	c.Tables = append(c.Tables, processingTable(groups, swept, emulators))
	if t, ok := scalingTable(groups, swept); ok {
		c.Tables = append(c.Tables, t)
	}
	if t, ok := mqttTable(groups, swept, emulators); ok {
		c.Tables = append(c.Tables, t)
	}
	c.Figures = append(c.Figures, cdfFigures(groups, swept, emulators)...)
	c.Figures = append(c.Figures, instanceFigures(res, groups)...)
	return c
}

// instanceFigures draws, for the first run of each combination that had a function gateway,
// its functions' ready instances over time with the scaling decisions marked (replicas.csv and
// scaling.csv in the gateway's output directory).
func instanceFigures(res *report.Results, groups []report.Combination) []chart.Figure {
	var figs []chart.Figure
	for _, g := range groups {
		if len(g.Runs) == 0 || len(gateways(g)) == 0 {
			continue
		}
		run := g.Runs[0]
		var gws []string
		for gw := range gateways(g) {
			gws = append(gws, gw)
		}
		sort.Strings(gws)
		for _, gw := range gws {
			dir := filepath.Join(res.Dir, results.RunsDir, run.ID, results.ComponentsDir, gw)
			c := &chart.Line{ID: "iot-instances-" + run.ID + "-" + gw, XLabel: "time since the gateway started (s)", YLabel: "ready instances"}
			byFn := map[string]*chart.Series{}
			var order []string
			err := results.ReadCSV(filepath.Join(dir, gateway.ReplicasFile), []string{"t_s", "function", "ready"}, func(r results.CSVRow) error {
				v, err := r.Floats("t_s", "ready")
				if err != nil {
					return err
				}
				fn := r.Str("function")
				if byFn[fn] == nil {
					byFn[fn] = &chart.Series{Name: fn, Color: chart.Color(len(order))}
					order = append(order, fn)
				}
				byFn[fn].Points = append(byFn[fn].Points, chart.Pt(v[0], v[1]))
				return nil
			})
			if err != nil || len(order) == 0 {
				continue
			}
			for _, fn := range order {
				c.Series = append(c.Series, *byFn[fn])
			}
			_ = results.ReadCSV(filepath.Join(dir, gateway.ScalingFile), []string{"t_s", "function", "to", "reason"}, func(r results.CSVRow) error {
				v, err := r.Floats("t_s")
				if err == nil {
					c.Markers = append(c.Markers, chart.Marker{X: v[0], Label: r.Str("function") + " → " + r.Str("to") + " (" + r.Str("reason") + ")"})
				}
				return nil
			})
			caption := fmt.Sprintf("Ready instances of gateway %s's functions over time, run %s (%s), scaling decisions marked.", gw, run.ID, strings.Join(g.Params, ", "))
			figs = append(figs, chart.NewFigure(c.ID, "instances", caption, c.SVG()))
		}
	}
	return figs
}

func num(h, title string) report.Column { return report.Column{Header: h, Title: title, Numeric: true} }

// gateways are the components whose function metrics (faas/<gw>/<fn>) the group has.
func gateways(g report.Combination) map[string]bool {
	out := map[string]bool{}
	for name := range g.Metrics {
		if rest, ok := strings.CutPrefix(name, "faas/"); ok {
			if gw, _, ok := strings.Cut(rest, "/"); ok {
				out[gw] = true
			}
		}
	}
	return out
}

// implementationResources sums CPU and RSS over the group's processing components (every
// component but the gateways) and the gateways' function instances.
func implementationResources(g report.Combination) (cpu, rss float64, ok bool) {
	gws := gateways(g)
	for name, m := range g.Metrics {
		switch {
		case strings.HasPrefix(name, "resources/"):
			comp := strings.TrimPrefix(name, "resources/")
			if gws[comp] || startedBy(comp, gws) {
				continue // the gateway itself, or its instances and zygotes: counted by faas/
			}
			cpu += m["cpu_pct"].Mean
			rss += m["rss_mib_max"].Mean
			ok = true
		case strings.HasPrefix(name, "faas/"):
			if _, has := m["cpu_pct"]; has {
				cpu += m["cpu_pct"].Mean
				rss += m["rss_mib"].Mean
				ok = true
			}
		}
	}
	return cpu, rss, ok
}

// startedBy reports whether a component is a process a gateway started (<gateway>-...).
func startedBy(comp string, gws map[string]bool) bool {
	for gw := range gws {
		if strings.HasPrefix(comp, gw+"-") {
			return true
		}
	}
	return false
}

func cell(m map[string]results.Aggregate, field string) string {
	a, ok := m[field]
	if !ok {
		return "—"
	}
	return report.AggCell(a)
}

func processingTable(groups []report.Combination, swept, emulators []string) report.Table {
	t := report.Table{Class: "iot-processing", Columns: append(report.ParamColumns(swept), report.Column{Header: "emulator"},
		num("batches due", "batches the gateways' adaptors had ready"), num("answered", "batches answered 200"),
		num("errors", "batches that timed out or failed, by the t_rr series"),
		num("t_ex mean", ""), num("t_ex p50", ""), num("t_rr p50", ""), num("t_rr p90", ""), num("t_rr p99", ""),
		num("CPU %", "the implementation's CPU, % of one core, summed over its instances"),
		num("memory MiB", "the implementation's memory (RSS), summed over its instances"),
		num("msgs/s sent", ""), num("emulator CPU (cores)", "the emulator process's own CPU"))}
	for _, g := range groups {
		cpu, rss, ok := implementationResources(g)
		cpuCell, rssCell := "—", "—"
		if ok {
			cpuCell, rssCell = chart.FormatNum(cpu), chart.FormatNum(rss)
		}
		for _, e := range emulators {
			m, have := g.Metrics["iot/"+e]
			if !have {
				continue
			}
			ex, rr := g.Metrics[e+"/t_ex/latency_ms"], g.Metrics[e+"/t_rr/latency_ms"]
			errs := g.Metrics[e+"/t_rr/errors"]
			t.Rows = append(t.Rows, append(append([]string{}, g.Params...), e, cell(m, "batches_due"), cell(m, "batches_ok"),
				cell(errs, "value"), cell(ex, "mean"), cell(ex, "p50"), cell(rr, "p50"), cell(rr, "p90"), cell(rr, "p99"),
				cpuCell, rssCell, cell(m, "messages_per_s"), cell(m, "cpu_cores")))
		}
	}
	return t
}

// mqttTable is the MQTT ingress: readings published and received, not received by the end,
// and t_in, from a batch being due until its adaptor had all its readings.
func mqttTable(groups []report.Combination, swept, emulators []string) (report.Table, bool) {
	t := report.Table{Class: "iot-mqtt", Columns: append(report.ParamColumns(swept), report.Column{Header: "emulator"},
		num("published", "readings the devices published (QoS 1: acknowledged by the broker)"),
		num("publish failed", ""), num("received", "readings the adaptors received"),
		num("not received", "published, not received by the run's end (QoS 0: lost; QoS 1: still queued at the broker)"), num("unbatched", "received into a last batch that never filled"),
		num("t_in p50", "ms from a batch being due until its adaptor had all its readings"), num("t_in p99", ""))}
	for _, g := range groups {
		for _, e := range emulators {
			m := g.Metrics["iot/"+e]
			if _, mq := m["mqtt_published"]; !mq {
				continue
			}
			in := g.Metrics[e+"/t_in/latency_ms"]
			t.Rows = append(t.Rows, append(append([]string{}, g.Params...), e, cell(m, "mqtt_published"), cell(m, "mqtt_publish_failed"),
				cell(m, "mqtt_received"), cell(m, "mqtt_not_received"), cell(m, "mqtt_unbatched"), cell(in, "p50"), cell(in, "p99")))
		}
	}
	return t, len(t.Rows) > 0
}

func scalingTable(groups []report.Combination, swept []string) (report.Table, bool) {
	t := report.Table{Class: "iot-scaling", Columns: append(report.ParamColumns(swept), report.Column{Header: "function"},
		num("gateway CPU %", "the gateway process (seeds/001 Fig. 8)"), num("gateway MiB", ""),
		num("instances mean", "ready instances, mean over the run"), num("instances max", ""),
		num("scale events", "changes of the wanted instances"), num("cold starts", "requests that waited for a first instance"),
		num("invocations", ""))}
	for _, g := range groups {
		var names []string
		for name := range g.Metrics {
			if strings.HasPrefix(name, "faas/") {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			gw, fn, _ := strings.Cut(strings.TrimPrefix(name, "faas/"), "/")
			m, res := g.Metrics[name], g.Metrics["resources/"+gw]
			t.Rows = append(t.Rows, append(append([]string{}, g.Params...), gw+"/"+fn, cell(res, "cpu_pct"), cell(res, "rss_mib_max"),
				cell(m, "mean_ready"), cell(m, "max_ready"), cell(m, "scale_events"), cell(m, "cold_starts"), cell(m, "invocations")))
		}
	}
	return t, len(t.Rows) > 0
}

// cdfFigures draws, per combination of the swept parameters other than the components (the
// implementation), the t_rr CDF of each implementation, from each combination's first run.
func cdfFigures(groups []report.Combination, swept, emulators []string) []chart.Figure {
	impl := -1
	for i, p := range swept {
		if p == "components" {
			impl = i
		}
	}
	type panel struct {
		key   string
		lines []report.Combination
	}
	var panels []*panel
	byKey := map[string]*panel{}
	for _, g := range groups {
		var key []string
		for i, p := range g.Params {
			if i != impl {
				key = append(key, swept[i]+"="+p)
			}
		}
		k := strings.Join(key, ", ")
		if byKey[k] == nil {
			byKey[k] = &panel{key: k}
			panels = append(panels, byKey[k])
		}
		byKey[k].lines = append(byKey[k].lines, g)
	}
	var figs []chart.Figure
	for pi, p := range panels {
		c := &chart.Line{ID: fmt.Sprintf("iot-trr-cdf-%d", pi), XLabel: "t_rr (ms)", YLabel: "batches answered within (%)", YMax: chart.Fp(100)}
		lo, hi := math.Inf(1), 0.0
		for li, g := range p.lines {
			if len(g.Runs) == 0 {
				continue
			}
			name := strings.Join(g.Params, ", ")
			if impl >= 0 {
				name = g.Params[impl]
			}
			for _, w := range g.Runs[0].Workloads {
				if !contains(emulators, w.Name) {
					continue
				}
				sr := chart.Series{Name: name, Color: chart.Color(li)}
				if len(emulators) > 1 {
					sr.Name += " (" + w.Name + ")"
				}
				for _, pt := range w.Percentiles {
					if pt.Series == "t_rr" {
						q := chart.Pt(pt.LatencyMS, pt.Percentile)
						q.Tip = fmt.Sprintf("%s: p%s = %s ms", sr.Name, chart.FormatNum(pt.Percentile), chart.FormatNum(pt.LatencyMS))
						sr.Points = append(sr.Points, q)
						if pt.LatencyMS > 0 {
							lo, hi = math.Min(lo, pt.LatencyMS), math.Max(hi, pt.LatencyMS)
						}
					}
				}
				if len(sr.Points) > 0 {
					c.Series = append(c.Series, sr)
				}
			}
		}
		if len(c.Series) == 0 {
			continue
		}
		if hi/lo > 100 {
			c.XLog = true
		}
		caption := "t_rr CDF per implementation (seeds/001 Figs. 4-5), first run of each combination"
		if p.key != "" {
			caption += ": " + p.key
		}
		figs = append(figs, chart.NewFigure(c.ID, "latency-cdf", caption+".", c.SVG()))
	}
	return figs
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
