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

// The stream part of the report: seeds/003 §IV's figures from stream-users runs, whatever the
// scenario swept. Rows are keyed by what the workload reported (architecture, payload, users),
// so one table compares cloud-only, edge-only and edge-cloud when a results directory holds
// them. The crossover table is the seed's scalability finding: the user count from which
// edge-cloud no longer beats cloud-only, per payload.

func init() {
	report.RegisterSection(report.Section{ID: "stream", Title: "Edge streaming (Carpio et al.)", Order: 30,
		Kinds: []string{"stream-users"}, Build: buildStream})
}

// streamRow is one stream-users instance in one combination.
type streamRow struct {
	g              report.Combination
	distorted      bool // the fabric judged one of the combination's runs distorted
	inst, arch     string
	users, payload float64
	m              map[string]results.Aggregate
}

func streamRows(groups []report.Combination) []streamRow {
	var rows []streamRow
	for _, g := range groups {
		for name, m := range g.Metrics {
			rest, ok := strings.CutPrefix(name, "stream/")
			if !ok {
				continue
			}
			inst, arch, ok := strings.Cut(rest, "/")
			if !ok {
				continue
			}
			rows = append(rows, streamRow{g: g, inst: inst, arch: arch, users: m["users"].Mean, payload: m["payload_bytes"].Mean, m: m})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.arch != b.arch {
			return a.arch < b.arch
		}
		if a.payload != b.payload {
			return a.payload < b.payload
		}
		return a.users < b.users
	})
	return rows
}

func buildStream(res *report.Results) *report.SectionContent {
	groups, swept := report.Combinations(res)
	rows := streamRows(groups)
	if len(rows) == 0 {
		return nil
	}
	distorted := map[string]bool{}
	for _, r := range res.Summary.Runs {
		distorted[r.ID] = r.Fabric != nil && r.Fabric.Distorted
	}
	for i := range rows {
		for _, run := range rows[i].g.Runs {
			rows[i].distorted = rows[i].distorted || distorted[run.ID]
		}
	}
	c := &report.SectionContent{Note: "Carpio et al. §IV on our testbed. e2e is a record's end-to-end latency, from when its user was due to send it until the subscriber received it (one host clock), in ms after the warm-up; " +
		"lost = acknowledged and never received within the grace period; duplicated = received again (by id); mismatched = received with other content than sent. " +
		"fabric pps is the testbed fabric's packets/s (mean / busiest second); a combination is flagged when the fabric judged one of its runs distorted " +
		"(it delivered late, ran out of CPU or dropped what no configured loss explains: the warning at the top of the page says which): there the fabric, not the system, may set the latency. " +
		"Cells are means over repeats."}
	c.Headlines = streamHeadlines(rows)
	c.Tables = append(c.Tables, latencyTable(rows), recordsTable(rows))
	if t, ok := crossoverTable(rows); ok {
		c.Tables = append(c.Tables, t)
	}
	if t, ok := deliveryTable(rows); ok {
		c.Tables = append(c.Tables, t)
	}
	if t, ok := resourceTable(groups, swept); ok {
		c.Tables = append(c.Tables, t)
	}
	c.Figures = append(c.Figures, p50Figures(rows)...)
	c.Figures = append(c.Figures, streamCDFs(rows)...)
	return c
}

func payloadLabel(b float64) string {
	switch {
	case b >= 1024 && math.Mod(b, 1024) == 0:
		return fmt.Sprintf("%g KiB", b/1024)
	default:
		return fmt.Sprintf("%g B", b)
	}
}

// fabricCell is the fabric's load in a combination, flagged when the fabric judged one of its
// runs distorted (summary.json's runs[].fabric).
func fabricCell(g report.Combination, distorted bool) (string, bool) {
	f, ok := g.Metrics["stream-fabric"]
	if !ok {
		if f2, ok2 := g.Metrics["fabric"]; ok2 {
			return chart.FormatNum(f2["packets_per_s"].Mean), false
		}
		return "—", false
	}
	peak := f["packets_per_s_max"].Mean
	cell := chart.FormatNum(f["packets_per_s_mean"].Mean) + " / " + chart.FormatNum(peak)
	if distorted {
		return cell + " ⚠ distorted", true
	}
	return cell, false
}

func latencyTable(rows []streamRow) report.Table {
	t := report.Table{Class: "stream-latency", Columns: []report.Column{{Header: "architecture"}, report.NumColumn("payload", "bytes of each record's JSON"),
		report.NumColumn("users", ""), report.NumColumn("e2e p50", "ms"), report.NumColumn("e2e p90", "ms"), report.NumColumn("e2e p99", "ms"),
		report.NumColumn("e2e max", "ms, unclamped"), report.NumColumn("ack p50", "ms: the send's request-reply time"), report.NumColumn("records/s", "sent"),
		report.NumColumn("fabric pps", "testbed fabric packets/s, mean / busiest second")}}
	for _, r := range rows {
		e2e, ack := r.g.Metrics[r.inst+"/e2e/latency_ms"], r.g.Metrics[r.inst+"/ack/latency_ms"]
		fab, _ := fabricCell(r.g, r.distorted)
		t.Rows = append(t.Rows, []string{r.arch, payloadLabel(r.payload), chart.FormatNum(r.users), cell(e2e, "p50"),
			cell(e2e, "p90"), cell(e2e, "p99"), cell(r.m, "max_latency_ms"), cell(ack, "p50"), cell(r.m, "records_per_s"), fab})
	}
	return t
}

// recordsTable counts each setup's records, split from the latency table so neither is wider
// than the page.
func recordsTable(rows []streamRow) report.Table {
	t := report.Table{Class: "stream-records", Columns: []report.Column{{Header: "architecture"}, report.NumColumn("payload", "bytes of each record's JSON"),
		report.NumColumn("users", ""), report.NumColumn("sent", "records sent"), report.NumColumn("acked", "acknowledged by the realtime-db or the bridge"),
		report.NumColumn("received", "received by the subscriber"), report.NumColumn("lost", "acknowledged, never received"), report.NumColumn("duplicated", ""),
		report.NumColumn("mismatched", "received with other content"),
		report.NumColumn("resyncs", "times the realtime-db re-sent the whole value to the listener mid-stream (its queue overflowed)")}}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.arch, payloadLabel(r.payload), chart.FormatNum(r.users), cell(r.m, "sent"), cell(r.m, "acked"),
			cell(r.m, "received"), cell(r.m, "lost"), cell(r.m, "duplicated"), cell(r.m, "mismatched"), cell(r.m, "resyncs")})
	}
	return t
}

func cell(m map[string]results.Aggregate, field string) string {
	a, ok := m[field]
	if !ok {
		return "—"
	}
	return report.AggCell(a)
}

// crossover is, for one payload, the smallest user count at which edge-cloud's median
// end-to-end latency is no better than cloud-only's (0: edge-cloud beat it at every count
// measured), and the largest count compared.
type crossover struct {
	Payload   float64
	Users     float64
	MaxUsers  float64
	Compared  int
	AllBeaten bool
}

// crossovers compares edge-cloud with cloud-only at every (payload, users) both measured.
func crossovers(rows []streamRow) []crossover {
	type key struct{ payload, users float64 }
	p50 := map[string]map[key]float64{}
	for _, r := range rows {
		e2e, ok := r.g.Metrics[r.inst+"/e2e/latency_ms"]["p50"]
		if !ok {
			continue
		}
		if p50[r.arch] == nil {
			p50[r.arch] = map[key]float64{}
		}
		p50[r.arch][key{r.payload, r.users}] = e2e.Mean
	}
	ec, co := p50[ArchEdgeCloud], p50[ArchCloudOnly]
	byPayload := map[float64][]float64{}
	for k := range ec {
		if _, both := co[k]; both {
			byPayload[k.payload] = append(byPayload[k.payload], k.users)
		}
	}
	var out []crossover
	for payload, users := range byPayload {
		sort.Float64s(users)
		x := crossover{Payload: payload, MaxUsers: users[len(users)-1], Compared: len(users), AllBeaten: true}
		for _, u := range users {
			if ec[key{payload, u}] >= co[key{payload, u}] {
				x.Users, x.AllBeaten = u, false
				break
			}
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Payload < out[j].Payload })
	return out
}

func crossoverTable(rows []streamRow) (report.Table, bool) {
	t := report.Table{Class: "stream-crossover", Columns: []report.Column{report.NumColumn("payload", ""),
		{Header: "edge-cloud stops beating cloud-only at", Title: "smallest user count where edge-cloud's e2e p50 >= cloud-only's (Carpio et al.: ~600 users at 1 KB, ~200 at 10 KB)"},
		report.NumColumn("user counts compared", "")}}
	for _, x := range crossovers(rows) {
		at := chart.FormatNum(x.Users) + " users"
		if x.AllBeaten {
			at = "never (beats it up to " + chart.FormatNum(x.MaxUsers) + " users)"
		}
		t.Rows = append(t.Rows, []string{payloadLabel(x.Payload), at, fmt.Sprint(x.Compared)})
	}
	return t, len(t.Rows) > 0
}

// deliveryTable is the exactly-once evidence of the offline and crash scenarios: what the
// database held at the end and how long the backlog took to drain after a heal or restart.
func deliveryTable(rows []streamRow) (report.Table, bool) {
	t := report.Table{Class: "stream-delivery", Columns: []report.Column{{Header: "architecture"}, report.NumColumn("payload", ""), report.NumColumn("users", ""),
		report.NumColumn("acked", ""), report.NumColumn("lost", ""), report.NumColumn("duplicated", ""), report.NumColumn("db records", "under the path at the end"),
		report.NumColumn("db missing", "acknowledged, absent"), report.NumColumn("db mismatched", "other content than sent"), report.NumColumn("db unexpected", "never sent"),
		report.NumColumn("drain after heal (s)", "from the heal until the last record sent before it arrived"),
		report.NumColumn("drain after restart (s)", "from the restart until the last record sent before it arrived")}}
	for _, r := range rows {
		_, v := r.m["db_records"]
		_, dh := r.m["drain_after_heal_s"]
		_, dr := r.m["drain_after_restart_s"]
		if !v && !dh && !dr {
			continue
		}
		t.Rows = append(t.Rows, []string{r.arch, payloadLabel(r.payload), chart.FormatNum(r.users), cell(r.m, "acked"), cell(r.m, "lost"),
			cell(r.m, "duplicated"), cell(r.m, "db_records"), cell(r.m, "db_missing"), cell(r.m, "db_mismatched"), cell(r.m, "db_unexpected"),
			cell(r.m, "drain_after_heal_s"), cell(r.m, "drain_after_restart_s")})
	}
	return t, len(t.Rows) > 0
}

// resourceTable is seeds/003 Fig. 6: each component's CPU, memory and network, mean and max.
func resourceTable(groups []report.Combination, swept []string) (report.Table, bool) {
	t := report.Table{Class: "stream-resources", Columns: append(report.ParamColumns(swept), report.Column{Header: "component"},
		report.NumColumn("CPU % mean", "% of one core"), report.NumColumn("CPU % max", ""), report.NumColumn("memory MiB mean", "RSS"), report.NumColumn("memory MiB max", ""),
		report.NumColumn("node net Mbit/s mean", "its node's received + sent"), report.NumColumn("node net Mbit/s max", ""))}
	for _, g := range groups {
		for _, comp := range report.MetricSuffixes([]report.Combination{g}, "stream-resources/") {
			m := g.Metrics["stream-resources/"+comp]
			t.Rows = append(t.Rows, append(append([]string{}, g.Params...), comp, cell(m, "cpu_pct_mean"), cell(m, "cpu_pct_max"),
				cell(m, "rss_mib_mean"), cell(m, "rss_mib_max"), cell(m, "node_net_mbit_s_mean"), cell(m, "node_net_mbit_s_max")))
		}
	}
	return t, len(t.Rows) > 0
}

// p50Figures draw, per payload, e2e p50 and p99 against users with one line per
// architecture (seeds/003 Figs. 3-4 as medians).
func p50Figures(rows []streamRow) []chart.Figure {
	payloads := map[float64]bool{}
	for _, r := range rows {
		payloads[r.payload] = true
	}
	var ps []float64
	for p := range payloads {
		ps = append(ps, p)
	}
	sort.Float64s(ps)
	var figs []chart.Figure
	for pi, p := range ps {
		c := &chart.Line{ID: fmt.Sprintf("stream-p50-%d", pi), XLabel: "users", YLabel: "e2e latency (ms)"}
		archs := map[string][2]*chart.Series{}
		var order []string
		for _, r := range rows {
			e2e, ok := r.g.Metrics[r.inst+"/e2e/latency_ms"]
			if r.payload != p || !ok {
				continue
			}
			s, ok := archs[r.arch]
			if !ok {
				col := chart.Color(len(order))
				s = [2]*chart.Series{{Name: r.arch + " p50", Color: col, ShowPoints: true}, {Name: r.arch + " p99", Color: col, Dash: true, ShowPoints: true}}
				archs[r.arch] = s
				order = append(order, r.arch)
			}
			for i, f := range []string{"p50", "p99"} {
				pt := chart.Pt(r.users, e2e[f].Mean)
				pt.Tip = fmt.Sprintf("%s, %s users: %s %s ms", r.arch, chart.FormatNum(r.users), f, chart.FormatNum(e2e[f].Mean))
				s[i].Points = append(s[i].Points, pt)
			}
		}
		for _, a := range order {
			c.Series = append(c.Series, *archs[a][0], *archs[a][1])
		}
		if len(c.Series) == 0 {
			continue
		}
		figs = append(figs, chart.NewFigure(c.ID, "latency", "End-to-end latency against users, "+payloadLabel(p)+" records: p50 (solid) and p99 (dashed) per architecture.", c.SVG()))
	}
	return figs
}

// streamCDFs draw, per architecture and payload, the e2e CDF of each user count (seeds/003
// Fig. 5), from each combination's first run.
func streamCDFs(rows []streamRow) []chart.Figure {
	type panel struct {
		arch    string
		payload float64
		rows    []streamRow
	}
	var panels []*panel
	by := map[string]*panel{}
	for _, r := range rows {
		k := r.arch + "|" + fmt.Sprint(r.payload)
		if by[k] == nil {
			by[k] = &panel{arch: r.arch, payload: r.payload}
			panels = append(panels, by[k])
		}
		by[k].rows = append(by[k].rows, r)
	}
	var figs []chart.Figure
	for pi, p := range panels {
		c := &chart.Line{ID: fmt.Sprintf("stream-cdf-%d", pi), XLabel: "e2e latency (ms)", YLabel: "records received within (%)", YMax: chart.Fp(100)}
		lo, hi := math.Inf(1), 0.0
		for li, r := range p.rows {
			if len(r.g.Runs) == 0 {
				continue
			}
			for _, w := range r.g.Runs[0].Workloads {
				if w.Name != r.inst {
					continue
				}
				s := chart.Series{Name: chart.FormatNum(r.users) + " users", Color: chart.Color(li)}
				for _, pt := range w.Percentiles {
					if pt.Series != "e2e" {
						continue
					}
					q := chart.Pt(pt.LatencyMS, pt.Percentile)
					q.Tip = fmt.Sprintf("%s: p%s = %s ms", s.Name, chart.FormatNum(pt.Percentile), chart.FormatNum(pt.LatencyMS))
					s.Points = append(s.Points, q)
					if pt.LatencyMS > 0 {
						lo, hi = math.Min(lo, pt.LatencyMS), math.Max(hi, pt.LatencyMS)
					}
				}
				if len(s.Points) > 0 {
					c.Series = append(c.Series, s)
				}
			}
		}
		if len(c.Series) == 0 {
			continue
		}
		c.XLog = hi/lo > 100
		figs = append(figs, chart.NewFigure(c.ID, "latency-cdf",
			fmt.Sprintf("End-to-end latency CDF per user count: %s, %s records (Carpio et al. Fig. 5), first run of each combination.", p.arch, payloadLabel(p.payload)), c.SVG()))
	}
	return figs
}

// streamHeadlines: acknowledged records lost (the exactly-once verdict) and, per payload, where
// edge-cloud stops beating cloud-only (the seed's scalability finding).
func streamHeadlines(rows []streamRow) []report.Headline {
	var out []report.Headline
	var lost []string
	measured := false
	for _, r := range rows {
		l, ok := r.m["lost"]
		if !ok {
			continue
		}
		measured = true
		if l.Mean > 0 {
			lost = append(lost, fmt.Sprintf("%s, %s, %s users: %s", r.arch, payloadLabel(r.payload), chart.FormatNum(r.users), chart.FormatNum(l.Mean)))
		}
	}
	switch {
	case len(lost) > 6:
		out = append(out, report.Headline{Text: fmt.Sprintf("Acknowledged records lost in %d of %d setups, e.g. %s", len(lost), len(rows), lost[0]), Bad: true})
	case len(lost) > 0:
		out = append(out, report.Headline{Text: "Acknowledged records lost: " + strings.Join(lost, "; "), Bad: true})
	case measured:
		out = append(out, report.Headline{Text: "Acknowledged records lost: none in any setup"})
	}
	for _, x := range crossovers(rows) {
		at := "at " + chart.FormatNum(x.Users) + " users"
		if x.AllBeaten {
			at = "never (up to " + chart.FormatNum(x.MaxUsers) + " users)"
		}
		out = append(out, report.Headline{Text: fmt.Sprintf("Edge-cloud stops beating cloud-only (e2e p50), %s records: %s", payloadLabel(x.Payload), at)})
	}
	return out
}
