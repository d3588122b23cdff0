package kinds

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

var agg = reporttest.Agg

func TestNPMSection(t *testing.T) {
	run := &report.Run{Run: results.Run{ID: "001"}, Workloads: []*report.Workload{{Name: "c1"}}}
	res := &report.Results{Runs: []*report.Run{run}, Summary: results.Summary{Groups: []results.Group{{
		Params: results.Params{"components": "[etcd]"}, Labels: map[string]string{"components": "etcd"}, Runs: []string{"001"},
		Metrics: map[string]map[string]results.Aggregate{
			"pace/c1": {"processed": agg(42)},
			// db on n1: half a core, 200 MiB, 30 J per 30 s; its node moved 80 Mbit/s.
			"resources/db": {"cpu_pct": agg(50), "rss_mib_max": agg(200), "node_net_mbit_s": agg(8)},
			"resources": {"instances": agg(1), "cpu_pct": agg(50), "rss_mib": agg(200), "disk_mib_max": agg(30),
				"energy_j_per_30s": agg(30), "components_only_mbit_s": agg(4)},
			"fabric":                    {"packets_per_s": agg(1234.4)},
			"c1/put/latency_ms":         {"p50": agg(1.5), "p99": agg(4)},
			"c1/get_lin/latency_ms":     {"p50": agg(2), "p99": agg(5)},
			"maintenance/maint":         {"rounds": agg(6), "downtime_ms_max": agg(180)},
			"freshness/fresh":           {"outage_ms": agg(1500), "writes": agg(500), "ended_in_outage": agg(0)},
			"fresh/stale_n1/latency_ms": {"p50": agg(0.7), "p99": agg(2.5)},
		}}, {
		Params: results.Params{"components": "[kv]"}, Labels: map[string]string{"components": "kv"},
		Metrics: map[string]map[string]results.Aggregate{}}}}}
	// The sweep needs two values for its parameter to count as swept.
	c := buildNPM(res)
	if c == nil {
		t.Fatal("no section")
	}
	// The failover verdict first: nothing acknowledged was lost; the outage per setup.
	if len(c.Headlines) != 2 || c.Headlines[0].Text != "Acknowledged writes lost, probe fresh: none in any setup" || c.Headlines[0].Bad ||
		c.Headlines[1].Text != "Longest write outage, probe fresh: etcd 1500 ms" {
		t.Errorf("headlines %+v", c.Headlines)
	}
	tables := map[string]report.Table{}
	for _, tb := range c.Tables {
		tables[tb.Class] = tb
	}
	cell := func(class string, row int, header string) string {
		tb, ok := tables[class]
		if !ok || row >= len(tb.Rows) {
			t.Fatalf("table %s row %d missing (%+v)", class, row, tables)
		}
		for i, col := range tb.Columns {
			if col.Header == header {
				return tb.Rows[row][i]
			}
		}
		t.Fatalf("table %s has no column %q", class, header)
		return ""
	}
	for _, check := range []struct{ class, header, want string }{
		{"npm-pace", "components", "etcd"},
		{"npm-pace", "put", "1.50 (4)"},
		{"npm-pace", "get_lin", "2 (5)"},
		{"npm-pace", "processed", "42"},
		{"npm-resources", "CPU total (%)", "50"},
		{"npm-resources", "RSS total (MiB)", "200"},
		{"npm-resources", "energy / 30 s (J)", "30"},
		{"npm-resources", "node network (Mbit/s)", "8"},
		{"npm-resources", "store-only traffic (Mbit/s)", "4"},
		{"npm-resources", "fabric (packets/s)", "1234"},

		{"npm-maintenance", "downtime max (ms)", "180"},
		{"npm-freshness", "outage (ms)", "1500"},
	} {
		if got := cell(check.class, 0, check.header); got != check.want {
			t.Errorf("%s %s = %q, want %q", check.class, check.header, got, check.want)
		}
	}
	if got := cell("npm-freshness", 0, "staleness p50 / p99 (ms) per reader"); !strings.Contains(got, "n1 0.7 / 2.50") {
		t.Errorf("staleness cell %q", got)
	}
	if len(c.Figures) != 1 || !strings.Contains(string(c.Figures[0].SVG), "db") {
		t.Errorf("figures %d", len(c.Figures))
	}
	if buildNPM(&report.Results{}) != nil {
		t.Error("a section for results without NPM data")
	}
}

// dbCPU is the "resources" metric of one store instance using cpu % of a core.
func dbCPU(cpu float64) map[string]results.Aggregate {
	return map[string]results.Aggregate{"instances": agg(1), "cpu_pct": agg(cpu)}
}

func TestMaintenanceAdvice(t *testing.T) {
	// Two τ for one class: τ=1s costs more CPU than τ=10s; τ=60s lets the downtime exceed the bound.
	group := func(tau string, period, down, cpu float64) results.Group {
		return results.Group{
			Params: results.Params{"workloads": "[wave]", "workloads.maint.config.period": tau},
			Labels: map[string]string{"workloads": "Wave", "workloads.maint.config.period": "τ=" + tau},
			Metrics: map[string]map[string]results.Aggregate{"maintenance/maint": {
				"period_s": agg(period), "downtime_ms_max": agg(down), "db_before_mib_max": agg(50)}, "resources": dbCPU(cpu)}}
	}
	res := &report.Results{Summary: results.Summary{Groups: []results.Group{
		group("1s", 1, 20, 90), group("10s", 10, 40, 20), group("60s", 60, 400, 10),
		{Params: results.Params{"workloads": "[pulse]", "workloads.maint.config.period": "1s"}, Labels: map[string]string{"workloads": "Pulse"}},
	}}}
	groups, swept := npmGroups(res)
	tb, note, ok := advisorTable(groups, swept)
	if !ok || !strings.Contains(note, "100 ms") {
		t.Fatalf("no advice (%v) %q", ok, note)
	}
	row := tb.Rows[0]
	if row[0] != "Wave" || row[1] != "τ=10s" || !strings.Contains(row[5], "excluded τ=60s: downtime 400 ms") {
		t.Errorf("advice %q", row)
	}
}

func TestCPUSplit(t *testing.T) {
	// One class with maintenance off (30% CPU), every 1 s (90%) and every 10 s (35%); a second
	// class has no τ-off run, so nothing to split against.
	group := func(class, tau string, period, cpu float64) results.Group {
		return results.Group{
			Params: results.Params{"workloads": "[" + class + "]", "workloads.maint.config.period": tau},
			Labels: map[string]string{"workloads": class, "workloads.maint.config.period": "τ=" + tau},
			Metrics: map[string]map[string]results.Aggregate{"maintenance/maint": {
				"period_s": agg(period), "downtime_ms_max": agg(1), "db_before_mib_max": agg(1)}, "resources": dbCPU(cpu)}}
	}
	res := &report.Results{Summary: results.Summary{Groups: []results.Group{
		group("Wave", "0s", 0, 30), group("Wave", "1s", 1, 90), group("Wave", "10s", 10, 35), group("Ping", "1s", 1, 50),
	}}}
	groups, swept := npmGroups(res)
	tb, ok := cpuSplitTable(groups, swept)
	if !ok {
		t.Fatal("no CPU split")
	}
	want := [][]string{{"Wave", "τ=1s", "90", "30", "60", "66.67"}, {"Wave", "τ=10s", "35", "30", "5", "14.29"}}
	if len(tb.Rows) != len(want) {
		t.Fatalf("rows %q, want %q", tb.Rows, want)
	}
	for i, w := range want {
		if strings.Join(tb.Rows[i], "|") != strings.Join(w, "|") {
			t.Errorf("row %d: %q, want %q", i, tb.Rows[i], w)
		}
	}
}

// TestTauFromWorkloads: the period is set inside each swept workloads list, not swept by
// name; the parameter whose values give different periods is the one the advice is about.
func TestTauFromWorkloads(t *testing.T) {
	group := func(store, wl string, period float64) results.Group {
		return results.Group{
			Params:  results.Params{"components": store, "workloads": wl},
			Labels:  map[string]string{"components": store, "workloads": wl},
			Metrics: map[string]map[string]results.Aggregate{"maintenance/maint1": {"period_s": agg(period)}}}
	}
	res := &report.Results{Summary: results.Summary{Groups: []results.Group{
		group("kv", "off", 0), group("kv", "1s", 1), group("etcd", "off", 0), group("etcd", "1s", 1)}}}
	groups, swept := npmGroups(res)
	if i := tauParam(groups, swept); i < 0 || swept[i] != "workloads" {
		t.Errorf("τ parameter %d of %q, want workloads", i, swept)
	}
	res.Summary.Groups[1].Metrics["maintenance/maint1"]["period_s"] = agg(0) // no longer tells them apart
	if groups, swept := npmGroups(res); tauParam(groups, swept) >= 0 {
		t.Error("found a τ parameter where none sets the period")
	}
}
