package kinds

import (
	"fmt"
	"math"
	"strings"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// The IoT part of the report: seeds/001's figures per sweep combination (implementation, b_s,
// ...). The processing table has t_ex (Fig. 3), t_rr (Figs. 4-5), the implementation's CPU and
// memory summed over its instances (Figs. 6-7) and the emulator's own load; the scaling table
// (the gateway's CPU and memory, Fig. 8, and its instances) is the Functions section's (faas/kinds); with the MQTT ingress, a table of
// readings published, received and not received by the end and of the ingress delay t_in; the figures are t_rr CDFs with
// one line per implementation (Figs. 4-5).

func init() {
	report.RegisterSection(report.Section{ID: "iot", Title: "IoT processing", Order: 25,
		Kinds: []string{"iot"}, Build: build})
}

func build(res *report.Results) *report.SectionContent {
	groups, swept := report.Combinations(res)
	emulators := report.MetricSuffixes(groups, "iot/")
	if len(emulators) == 0 {
		return nil
	}
	c := &report.SectionContent{Note: "Tusa et al.'s experiments on our testbed. t_ex is the time inside handle() (X-Handler-Seconds), t_rr a batch's request-reply time from when it was due, both in ms after the warm-up. " +
		"CPU is % of one core, summed over the implementation's instances (function, microservice and gateway-started instances with their zygote); a gateway's own CPU and memory, its instances and scaling are in the Functions section. Cells are means over repeats."}
	c.Headlines = headlines(groups, emulators)
	c.Tables = append(c.Tables, processingTable(groups, swept, emulators))
	if t, ok := mqttTable(groups, swept, emulators); ok {
		c.Tables = append(c.Tables, t)
	}
	c.Figures = append(c.Figures, cdfFigures(groups, swept, emulators)...)
	return c
}

// implementationResources sums CPU and RSS over the group's processing components (every
// component but the gateways) and the gateways' function instances.
func implementationResources(g report.Combination) (cpu, rss float64, ok bool) {
	// The gateways are the components with function metrics (faas/<gateway>/<function> in
	// summary.json, written by the faas kinds).
	gws := map[string]bool{}
	for name := range g.Metrics {
		if rest, found := strings.CutPrefix(name, "faas/"); found {
			gw, _, _ := strings.Cut(rest, "/")
			gws[gw] = true
		}
	}
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
		report.NumColumn("batches due", "batches the gateways' adaptors had ready"), report.NumColumn("answered", "batches answered 200"),
		report.NumColumn("errors", "batches that timed out or failed, by the t_rr series"),
		report.NumColumn("t_ex mean", ""), report.NumColumn("t_ex p50", ""), report.NumColumn("t_rr p50", ""), report.NumColumn("t_rr p90", ""), report.NumColumn("t_rr p99", ""),
		report.NumColumn("CPU %", "the implementation's CPU, % of one core, summed over its instances"),
		report.NumColumn("memory MiB", "the implementation's memory (RSS), summed over its instances"),
		report.NumColumn("msgs/s sent", ""), report.NumColumn("emulator CPU (cores)", "the emulator process's own CPU"))}
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
		report.NumColumn("published", "readings the devices published (QoS 1: acknowledged by the broker)"),
		report.NumColumn("publish failed", ""), report.NumColumn("received", "readings the adaptors received"),
		report.NumColumn("not received", "published, not received by the run's end (QoS 0: lost; QoS 1: still queued at the broker)"), report.NumColumn("unbatched", "received into a last batch that never filled"),
		report.NumColumn("t_in p50", "ms from a batch being due until its adaptor had all its readings"), report.NumColumn("t_in p99", ""))}
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
		caption := "t_rr CDF per implementation (Tusa et al. Figs. 4-5), first run of each combination"
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

// headlines: each setup's batch request-reply time t_rr (p50), and the batches a setup did not
// answer, if any did.
func headlines(groups []report.Combination, emulators []string) []report.Headline {
	var out []report.Headline
	for _, e := range emulators {
		var rr []report.Named
		var lost []string
		for i, g := range groups {
			name := report.ComboName(g)
			if name == "" {
				name = fmt.Sprintf("group %d", i+1)
				if len(groups) == 1 {
					name = ""
				}
			}
			if a, ok := g.Metrics[e+"/t_rr/latency_ms"]["p50"]; ok {
				rr = append(rr, report.Named{Name: name, Value: a.Mean})
			}
			if m, ok := g.Metrics["iot/"+e]; ok {
				due, answered := m["batches_due"].Mean, m["batches_ok"].Mean
				if due > answered {
					lost = append(lost, fmt.Sprintf("%s %s of %s", name, chart.FormatNum(due-answered), chart.FormatNum(due)))
				}
			}
		}
		if len(rr) > 0 {
			out = append(out, report.Headline{Text: "Batch request-reply time t_rr p50, " + e + ": " + report.Spread(rr, "ms")})
		}
		if len(lost) > 0 {
			if len(lost) > 6 {
				lost = append(lost[:6], fmt.Sprintf("and %d more setups", len(lost)-6))
			}
			out = append(out, report.Headline{Text: "Batches not answered (timed out or failed), " + e + ": " + strings.Join(lost, "; "), Bad: true})
		}
	}
	return out
}
