package kinds

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// The functions' part of the report: per sweep combination and function behind a gateway, the
// gateway's own CPU and memory (seeds/001 Fig. 8), its ready instances, scale events, cold starts
// and invocations (faas/<gateway>/<function> in summary.json), and for the first run of each
// combination the ready instances over time with the scaling decisions marked (the gateway's
// replicas.csv and scaling.csv).

func init() {
	report.RegisterSection(report.Section{ID: "faas", Title: "Functions (replicas and scaling)", Order: 26,
		// The old names too: results written before the kinds were renamed.
		Kinds: []string{"faas-function", "faas-microservice", "faas-gateway", "function", "microservice"}, Build: buildReport})
}

func buildReport(res *report.Results) *report.SectionContent {
	groups, swept := report.Combinations(res)
	c := &report.SectionContent{Note: "Per function behind a gateway: the gateway process's CPU (% of one core) and memory, its ready instances, " +
		"the changes of the wanted instances, the requests that waited for a first instance, and the invocations. Cells are means over repeats."}
	if t, ok := scalingTable(groups, swept); ok {
		c.Tables = append(c.Tables, t)
	}
	c.Figures = instanceFigures(res, groups)
	if len(c.Tables) == 0 && len(c.Figures) == 0 {
		return nil
	}
	return c
}

func cell(m map[string]results.Aggregate, field string) string {
	a, ok := m[field]
	if !ok {
		return "—"
	}
	return report.AggCell(a)
}

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

func scalingTable(groups []report.Combination, swept []string) (report.Table, bool) {
	t := report.Table{Class: "faas-scaling", Columns: append(report.ParamColumns(swept), report.Column{Header: "function"},
		report.NumColumn("gateway CPU %", "the gateway process (Tusa et al. Fig. 8)"), report.NumColumn("gateway MiB", ""),
		report.NumColumn("instances mean", "ready instances, mean over the run"), report.NumColumn("instances max", ""),
		report.NumColumn("scale events", "changes of the wanted instances"), report.NumColumn("cold starts", "requests that waited for a first instance"),
		report.NumColumn("invocations", ""))}
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
			c := &chart.Line{ID: "faas-instances-" + run.ID + "-" + gw, XLabel: "time since the gateway started (s)", YLabel: "ready instances"}
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
