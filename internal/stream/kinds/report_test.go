package kinds

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

var agg = reporttest.Agg

// streamGroup is one combination of a stream-users run as summary.json holds it.
func streamGroup(id, arch string, users, payload, p50, p99 float64, extra map[string]float64) (results.Group, *report.Run) {
	acct := map[string]results.Aggregate{"users": agg(users), "payload_bytes": agg(payload), "sent": agg(users * 10),
		"acked": agg(users * 10), "received": agg(users * 10), "lost": agg(0), "duplicated": agg(0), "mismatched": agg(0)}
	for k, v := range extra {
		acct[k] = agg(v)
	}
	g := results.Group{Params: results.Params{"x": id}, Runs: []string{id}, Metrics: map[string]map[string]results.Aggregate{
		"stream/users/" + arch:  acct,
		"users/e2e/latency_ms":  {"p50": agg(p50), "p90": agg(p50 * 1.5), "p99": agg(p99)},
		"users/ack/latency_ms":  {"p50": agg(p50 / 2)},
		"stream-fabric":         {"packets_per_s_mean": agg(users * 10), "packets_per_s_max": agg(users * 20)},
		"stream-resources/rtdb": {"cpu_pct_mean": agg(30), "cpu_pct_max": agg(90), "rss_mib_mean": agg(40), "rss_mib_max": agg(60)},
	}}
	run := &report.Run{Run: results.Run{ID: id}, Workloads: []*report.Workload{{Name: "users", Percentiles: []report.PercentilePoint{
		{Series: "e2e", Percentile: 50, LatencyMS: p50, Count: 1}, {Series: "e2e", Percentile: 99, LatencyMS: p99, Count: 1}}}}}
	return g, run
}

// TestStreamSection: the latency table has a row per architecture x payload x users, the
// crossover is the first user count where edge-cloud's p50 is no better than cloud-only's (per
// payload; "never" when it always is), a combination the fabric judged distorted is flagged, the delivery table
// appears only with database checks or drains, and CDFs and p50 charts are drawn.
func TestStreamSection(t *testing.T) {
	res := &report.Results{}
	add := func(id, arch string, users, payload, p50, p99 float64, extra map[string]float64) {
		g, r := streamGroup(id, arch, users, payload, p50, p99, extra)
		res.Summary.Groups = append(res.Summary.Groups, g)
		res.Runs = append(res.Runs, r)
	}
	// 1 KiB: edge-cloud faster at 100 and 200 users, slower from 300. 10 KiB: always faster.
	add("01", ArchCloudOnly, 100, 1024, 80, 120, nil)
	add("02", ArchCloudOnly, 200, 1024, 90, 150, nil)
	add("03", ArchCloudOnly, 300, 1024, 100, 200, nil)
	add("04", ArchEdgeCloud, 100, 1024, 60, 90, nil)
	add("05", ArchEdgeCloud, 200, 1024, 70, 95, nil)
	add("06", ArchEdgeCloud, 300, 1024, 400, 900, map[string]float64{"db_records": 3000, "db_missing": 0, "drain_after_heal_s": 12.5})
	add("07", ArchCloudOnly, 100, 10240, 85, 130, nil)
	add("08", ArchEdgeCloud, 100, 10240, 65, 100, nil)
	add("09", ArchEdgeOnly, 1000, 1024, 5, 9, nil)
	// The fabric judged run 09 distorted and run 01 not; the others carry no fabric figures.
	res.Summary.Runs = append(res.Summary.Runs, results.SummaryRun{ID: "09", Fabric: &results.Fabric{Distorted: true}},
		results.SummaryRun{ID: "01", Fabric: &results.Fabric{}})
	c := buildStream(res)
	if c == nil {
		t.Fatal("no section")
	}
	tables := map[string]report.Table{}
	for _, tb := range c.Tables {
		tables[tb.Class] = tb
	}
	lat := tables["stream-latency"]
	if len(lat.Rows) != 9 {
		t.Fatalf("latency rows %d, want 9", len(lat.Rows))
	}
	row := func(tb report.Table, i int) map[string]string {
		m := map[string]string{}
		for j, col := range tb.Columns {
			m[col.Header] = tb.Rows[i][j]
		}
		return m
	}
	// Sorted by architecture, payload, users: cloud-only first.
	if r := row(lat, 0); r["architecture"] != ArchCloudOnly || r["users"] != "100" || r["payload"] != "1 KiB" || r["e2e p50"] != "80" || r["ack p50"] != "40" {
		t.Errorf("first latency row %v", r)
	}
	var flagged int
	for i := range lat.Rows {
		if strings.Contains(row(lat, i)["fabric pps"], "distorted") {
			flagged++
			if row(lat, i)["architecture"] != ArchEdgeOnly {
				t.Errorf("row %v flagged", row(lat, i))
			}
		}
	}
	if flagged != 1 {
		t.Errorf("%d rows flagged as distorted, want the edge-only one", flagged)
	}
	x := tables["stream-crossover"]
	if len(x.Rows) != 2 {
		t.Fatalf("crossover rows %v", x.Rows)
	}
	if r := row(x, 0); r["payload"] != "1 KiB" || !strings.HasPrefix(r["edge-cloud stops beating cloud-only at"], "300 users") || r["user counts compared"] != "3" {
		t.Errorf("1 KiB crossover %v", r)
	}
	if r := row(x, 1); !strings.HasPrefix(r["edge-cloud stops beating cloud-only at"], "never") {
		t.Errorf("10 KiB crossover %v", r)
	}
	var heads []string
	for _, h := range c.Headlines {
		heads = append(heads, h.Text)
	}
	want := []string{"Acknowledged records lost: none in any setup",
		"Edge-cloud stops beating cloud-only (e2e p50), 1 KiB records: at 300 users",
		"Edge-cloud stops beating cloud-only (e2e p50), 10 KiB records: never (up to 100 users)"}
	if strings.Join(heads, "\n") != strings.Join(want, "\n") {
		t.Errorf("headlines:\n%s\nwant:\n%s", strings.Join(heads, "\n"), strings.Join(want, "\n"))
	}
	d := tables["stream-delivery"]
	if len(d.Rows) != 1 || row(d, 0)["drain after heal (s)"] != "12.50" || row(d, 0)["db missing"] != "0" {
		t.Errorf("delivery table %v", d.Rows)
	}
	if r := tables["stream-resources"]; len(r.Rows) != 9 || row(r, 0)["CPU % max"] != "90" {
		t.Errorf("resources table %v", r.Rows)
	}
	var cdfs, lines int
	for _, f := range c.Figures {
		switch {
		case strings.HasPrefix(f.ID, "stream-cdf-"):
			cdfs++
		case strings.HasPrefix(f.ID, "stream-p50-"):
			lines++
		}
	}
	if cdfs != 5 || lines != 2 {
		t.Errorf("%d CDF figures (want one per architecture x payload: 5), %d p50 figures (want 2)", cdfs, lines)
	}
	if !strings.Contains(string(c.Figures[0].SVG), "edge-cloud p50") {
		t.Error("the p50 figure lacks an architecture's line")
	}
	if buildStream(&report.Results{}) != nil {
		t.Error("a section without stream results")
	}
}
