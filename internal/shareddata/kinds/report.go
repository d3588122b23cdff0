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

// The NPM platform's part of the report: the figures of seeds/000 §6 as tables per sweep
// combination (store, architecture, class, τ): PACE's operation durations (Figs. 6, 13, 18),
// the store instances' CPU, memory, disk, energy per 30 s and network (Figs. 9-12, 14-17,
// 21-24), maintenance (Figs. 7, 8, 20) and staleness and failover (Fig. 19). Each table is
// shown when the results have its data.

func init() {
	report.RegisterSection(report.Section{ID: "shareddata", Title: "Shared data (NPM platform)", Order: 20,
		// The old names too: results written before the kinds were renamed.
		Kinds: []string{"shareddata-pace", "shareddata-maintenance", "shareddata-freshness", "pace", "maintenance", "freshness"}, Build: buildNPM})
}

// npmGroup is one sweep combination with its runs.
type npmGroup = report.Combination

func npmGroups(res *report.Results) ([]npmGroup, []string) { return report.Combinations(res) }

// paceOps is the order operation types are shown in.
var paceOps = []string{"put", "get_lin", "get_ser", "del", "push", "notify", "process", "ctrl_notify", "loop"}

func buildNPM(res *report.Results) *report.SectionContent {
	groups, swept := npmGroups(res)
	c := &report.SectionContent{}
	c.Tables = append(c.Tables, paceTables(groups, swept)...)
	if t, f, ok := resourceTable(groups, swept); ok {
		c.Tables = append(c.Tables, t)
		c.Figures = append(c.Figures, f)
	}
	var advice string
	if t, ok := maintenanceTable(groups, swept); ok {
		c.Tables = append(c.Tables, t)
		if t, ok := maintenanceSizeTable(groups, swept); ok {
			c.Tables = append(c.Tables, t)
		}
		if t, ok := cpuSplitTable(groups, swept); ok {
			c.Tables = append(c.Tables, t)
		}
		if a, note, ok := advisorTable(groups, swept); ok {
			c.Tables = append(c.Tables, a)
			advice = " " + note
		}
	}
	if t, ok := freshnessTable(groups, swept); ok {
		c.Tables = append(c.Tables, t)
		c.Headlines = freshnessHeadlines(groups)
	}
	if len(c.Tables) == 0 {
		return nil
	}
	c.Note = "Cells are means over a combination's repeats (± the 95% confidence half-width when there are several). " +
		"PACE durations are p50 (p99) in ms per operation type. Store instances are the run's components: CPU is the mean " +
		"utilisation of one core over the run, energy the modelled dynamic energy per 30 s, network the instances' nodes' " +
		"traffic (it includes PACE's when PACE shares their nodes); the fabric column is what the testbed's link emulation forwarded, " +
		"whose own delay stays within 1 ms up to ~20k packets/s. Maintenance downtime is the longest a probe request " +
		"to the member waited during a defragmentation. The CPU split takes a combination's reads and writes to cost what its " +
		"run with maintenance off (τ off: the probe alone) used, and maintenance what a period τ added to that." + advice
	return c
}

// maxOpColumns is how many operation types one PACE table holds; the rest go to a second table
// with the same rows, so neither is wider than the page.
const maxOpColumns = 5

// paceTables: per combination and PACE instance, every operation type's p50 (p99), in tables
// of at most maxOpColumns operations (the first also has the metrics processed).
func paceTables(groups []npmGroup, swept []string) []report.Table {
	insts := report.MetricSuffixes(groups, "pace/")
	if len(insts) == 0 {
		return nil
	}
	var ops []string
	for _, op := range paceOps {
		for _, g := range groups {
			if hasOp(g, insts, op) {
				ops = append(ops, op)
				break
			}
		}
	}
	var out []report.Table
	for i := 0; i == 0 || i < len(ops); i += maxOpColumns {
		class := "npm-pace"
		if i > 0 {
			class = "npm-pace-more"
		}
		if t, ok := paceTable(groups, swept, insts, ops[i:min(i+maxOpColumns, len(ops))], class, i == 0); ok {
			out = append(out, t)
		}
	}
	return out
}

func paceTable(groups []npmGroup, swept, insts, ops []string, class string, processed bool) (report.Table, bool) {
	t := report.Table{Class: class, Columns: append(report.ParamColumns(swept), report.Column{Header: "PACE process"})}
	for _, op := range ops {
		t.Columns = append(t.Columns, report.Column{Header: op, Title: op + ": p50 (p99) ms", Numeric: true})
	}
	if processed {
		t.Columns = append(t.Columns, report.Column{Header: "processed", Title: "metrics processed (consumer) or published (producer)", Numeric: true})
	}
	for _, g := range groups {
		for _, in := range insts {
			counts, ok := g.Metrics["pace/"+in]
			if !ok {
				continue
			}
			row := append(append([]string{}, g.Params...), in)
			for _, op := range ops {
				m, ok := g.Metrics[in+"/"+op+"/latency_ms"]
				if !ok || m["p50"].N == 0 {
					row = append(row, "")
					continue
				}
				row = append(row, fmt.Sprintf("%s (%s)", report.AggCell(m["p50"]), chart.FormatNum(m["p99"].Mean)))
			}
			if processed {
				n := counts["processed"]
				if n.Mean == 0 {
					n = counts["published"]
				}
				row = append(row, report.AggCell(n))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t, len(t.Rows) > 0
}

func hasOp(g npmGroup, insts []string, op string) bool {
	for _, in := range insts {
		if _, ok := g.Metrics[in+"/"+op+"/latency_ms"]; ok {
			return true
		}
	}
	return false
}

// groupTotals is a combination's store instances together, averaged over its runs, from the
// runner's resource metrics (summary.json's "resources", "resources/<instance>" and "fabric"):
// CPU, RSS and energy summed over instances, disk the largest instance's, network the mean
// instance node's. Helper components (the Redis Cluster joiner) are not among them.
type groupTotals struct {
	instances                                  float64
	cpuPct, rssMiB, diskMiB, energy30, netMbps float64
	// dbMbps is the traffic among the store's nodes alone; haveDB says some run could tell it
	// apart (no workload on a store node).
	dbMbps float64
	haveDB bool
	// fabricPPS is the packets per second the testbed's fabric forwarded.
	fabricPPS  float64
	haveFabric bool
}

// groupUsage reads a combination's totals and each instance's mean CPU; ok is false without
// resource metrics.
func groupUsage(g npmGroup) (groupTotals, map[string]float64, bool) {
	tot, ok := g.Metrics["resources"]
	if !ok || tot["instances"].Mean == 0 {
		return groupTotals{}, nil, false
	}
	gt := groupTotals{instances: tot["instances"].Mean, cpuPct: tot["cpu_pct"].Mean, rssMiB: tot["rss_mib"].Mean,
		diskMiB: tot["disk_mib_max"].Mean, energy30: tot["energy_j_per_30s"].Mean}
	if a, ok := tot["components_only_mbit_s"]; ok {
		gt.dbMbps, gt.haveDB = a.Mean, true
	}
	if f, ok := g.Metrics["fabric"]; ok {
		gt.fabricPPS, gt.haveFabric = f["packets_per_s"].Mean, true
	}
	perInst := map[string]float64{}
	for name, m := range g.Metrics {
		if inst, ok := strings.CutPrefix(name, "resources/"); ok {
			perInst[inst] = m["cpu_pct"].Mean
			gt.netMbps += m["node_net_mbit_s"].Mean
		}
	}
	if len(perInst) > 0 {
		gt.netMbps /= float64(len(perInst))
	}
	return gt, perInst, true
}

// resourceTable: per combination, the store instances' totals and per-instance means, and a
// stacked CPU bar per combination (seeds/000 Figs. 9 and 14).
func resourceTable(groups []npmGroup, swept []string) (report.Table, chart.Figure, bool) {
	t := report.Table{Class: "npm-resources", Columns: append(report.ParamColumns(swept),
		report.Column{Header: "instances", Numeric: true},
		report.Column{Header: "CPU total (%)", Numeric: true}, report.Column{Header: "CPU per instance (%)", Numeric: true},
		report.Column{Header: "RSS total (MiB)", Numeric: true}, report.Column{Header: "disk max (MiB)", Numeric: true},
		report.Column{Header: "energy / 30 s (J)", Numeric: true}, report.Column{Header: "node network (Mbit/s)", Title: "mean over the instances' nodes, both directions", Numeric: true},
		report.Column{Header: "store-only traffic (Mbit/s)", Title: "between the store's nodes alone; shown when no workload shares a store node", Numeric: true},
		report.Column{Header: "fabric (packets/s)", Title: "what the testbed's fabric forwarded; its own delay stays within 1 ms up to ~20k packets/s (docs/testbed.md)", Numeric: true})}
	bars := chart.StackedBars{YLabel: "CPU (% of a core)", Unit: "%"}
	stackIdx := map[string]int{}
	for gi, g := range groups {
		gu, perInst, ok := groupUsage(g)
		if !ok {
			continue
		}
		db, fabric := "", ""
		if gu.haveDB {
			db = fmtF(gu.dbMbps)
		}
		if gu.haveFabric {
			fabric = chart.FormatNum(math.Round(gu.fabricPPS))
		}
		row := append(append([]string{}, g.Params...), chart.FormatNum(gu.instances),
			fmtF(gu.cpuPct), fmtF(gu.cpuPct/gu.instances), fmtF(gu.rssMiB), fmtF(gu.diskMiB), fmtF(gu.energy30), fmtF(gu.netMbps), db, fabric)
		t.Rows = append(t.Rows, row)
		label := strings.Join(g.Params, ", ")
		if label == "" {
			label = fmt.Sprintf("group %d", gi+1)
		}
		bars.Categories = append(bars.Categories, label)
		for name, v := range perInst {
			i, ok := stackIdx[name]
			if !ok {
				i = len(bars.Stacks)
				stackIdx[name] = i
				bars.Stacks = append(bars.Stacks, chart.Stack{Name: name, Color: chart.Color(i)})
			}
			for len(bars.Stacks[i].Values) < len(bars.Categories) {
				bars.Stacks[i].Values = append(bars.Stacks[i].Values, 0)
			}
			bars.Stacks[i].Values[len(bars.Categories)-1] = v
		}
	}
	for i := range bars.Stacks {
		for len(bars.Stacks[i].Values) < len(bars.Categories) {
			bars.Stacks[i].Values = append(bars.Stacks[i].Values, 0)
		}
	}
	if len(t.Rows) == 0 {
		return t, chart.Figure{}, false
	}
	f := chart.NewFigure("npm-cpu", "bars", "CPU of the run's components (the store's members: workloads and helpers such as the Redis Cluster joiner left out), stacked per component, per combination, % of one core, from samples.csv.", bars.SVG())
	return t, f, true
}

func fmtF(v float64) string { return chart.FormatNum(math.Round(v*100) / 100) }

// maintenanceTable: per combination and maintained member (seeds/000 Figs. 7, 8, 20).
func maintenanceTable(groups []npmGroup, swept []string) (report.Table, bool) {
	insts := report.MetricSuffixes(groups, "maintenance/")
	if len(insts) == 0 {
		return report.Table{}, false
	}
	// The database sizes are a table of their own (maintenanceSizeTable): with the timings they
	// would make a table wider than the page.
	fields := []struct{ key, header string }{
		{"rounds", "rounds"}, {"compact_ms_p50", "compact p50 (ms)"}, {"defrag_ms_p50", "defrag p50 (ms)"},
		{"defrag_ms_max", "defrag max (ms)"}, {"downtime_ms_p50", "downtime p50 (ms)"}, {"downtime_ms_max", "downtime max (ms)"},
		{"probe_max_ms", "probe max, whole run (ms)"},
	}
	return maintenanceFieldsTable(groups, swept, insts, "npm-maintenance", fields)
}

// maintenanceSizeTable: per combination and maintained member, the database's size before
// compaction and after defragmentation.
func maintenanceSizeTable(groups []npmGroup, swept []string) (report.Table, bool) {
	insts := report.MetricSuffixes(groups, "maintenance/")
	fields := []struct{ key, header string }{
		{"db_before_mib_max", "db before compaction (MiB)"}, {"db_after_mib_min", "db after defrag (MiB)"},
	}
	return maintenanceFieldsTable(groups, swept, insts, "npm-maintenance-db", fields)
}

func maintenanceFieldsTable(groups []npmGroup, swept, insts []string, class string, fields []struct{ key, header string }) (report.Table, bool) {
	if len(insts) == 0 {
		return report.Table{}, false
	}
	t := report.Table{Class: class, Columns: append(report.ParamColumns(swept), report.Column{Header: "maintenance"})}
	for _, f := range fields {
		t.Columns = append(t.Columns, report.Column{Header: f.header, Numeric: true})
	}
	for _, g := range groups {
		for _, in := range insts {
			m, ok := g.Metrics["maintenance/"+in]
			if !ok {
				continue
			}
			row := append(append([]string{}, g.Params...), in)
			for _, f := range fields {
				row = append(row, report.AggCell(m[f.key]))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t, len(t.Rows) > 0
}

// freshnessTable: per combination and probe, the write outage and every reader's staleness
// (seeds/000 Fig. 19).
func freshnessTable(groups []npmGroup, swept []string) (report.Table, bool) {
	insts := report.MetricSuffixes(groups, "freshness/")
	if len(insts) == 0 {
		return report.Table{}, false
	}
	t := report.Table{Class: "npm-freshness", Columns: append(report.ParamColumns(swept), report.Column{Header: "probe"},
		report.Column{Header: "writes", Numeric: true}, report.Column{Header: "write errors", Numeric: true},
		report.Column{Header: "outage (ms)", Title: "longest time between acknowledged writes, minus the write interval", Numeric: true},
		report.Column{Header: "outage began (s)", Numeric: true},
		report.Column{Header: "acknowledged writes lost", Numeric: true},
		report.Column{Header: "staleness p50 / p99 (ms) per reader"})}
	for _, g := range groups {
		for _, in := range insts {
			m, ok := g.Metrics["freshness/"+in]
			if !ok {
				continue
			}
			var stale []string
			for _, name := range sortedMetricNames(g.Metrics, in+"/stale_") {
				l := g.Metrics[name]
				reader := strings.TrimSuffix(strings.TrimPrefix(name, in+"/stale_"), "/latency_ms")
				stale = append(stale, fmt.Sprintf("%s %s / %s", reader, chart.FormatNum(l["p50"].Mean), chart.FormatNum(l["p99"].Mean)))
			}
			outage := report.AggCell(m["outage_ms"])
			if m["ended_in_outage"].Mean > 0 {
				outage += " (not over at the end)"
			}
			lost := report.AggCell(m["lost_acknowledged"])
			if fc, ok := m["final_check"]; ok && fc.Mean < 1 {
				lost += " (not read back at the end)"
			}
			t.Rows = append(t.Rows, append(append([]string{}, g.Params...), in, report.AggCell(m["writes"]),
				report.AggCell(m["write_errors"]), outage, report.AggCell(m["gap_start_s"]), lost,
				strings.Join(stale, "; ")))
		}
	}
	return t, len(t.Rows) > 0
}

// sortedMetricNames lists the latency metrics whose name starts with prefix.
func sortedMetricNames(metrics map[string]map[string]results.Aggregate, prefix string) []string {
	var out []string
	for name := range metrics {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, "/latency_ms") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// freshnessHeadlines: per probe, the acknowledged writes lost (the verdict of a failover
// experiment) and each setup's longest write outage.
func freshnessHeadlines(groups []npmGroup) []report.Headline {
	var out []report.Headline
	for _, in := range report.MetricSuffixes(groups, "freshness/") {
		var outage []report.Named
		var lost []string
		for i, g := range groups {
			m, ok := g.Metrics["freshness/"+in]
			if !ok {
				continue
			}
			name := report.ComboName(g)
			if name == "" && len(groups) > 1 {
				name = fmt.Sprintf("group %d", i+1)
			}
			outage = append(outage, report.Named{Name: name, Value: m["outage_ms"].Mean})
			if l := m["lost_acknowledged"].Mean; l > 0 {
				lost = append(lost, strings.TrimSpace(name+" "+chart.FormatNum(l)))
			}
		}
		if len(outage) == 0 {
			continue
		}
		if len(lost) == 0 {
			out = append(out, report.Headline{Text: "Acknowledged writes lost, probe " + in + ": none in any setup"})
		} else {
			out = append(out, report.Headline{Text: "Acknowledged writes lost, probe " + in + ": " + strings.Join(lost, "; "), Bad: true})
		}
		out = append(out, report.Headline{Text: "Longest write outage, probe " + in + ": " + report.Spread(outage, "ms")})
	}
	return out
}
