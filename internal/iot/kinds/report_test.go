package kinds

import (
	"fmt"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

var agg = reporttest.Agg

func TestIoTSection(t *testing.T) {
	pct := func(p, ms float64) report.PercentilePoint {
		return report.PercentilePoint{Series: "t_rr", Percentile: p, LatencyMS: ms, Count: 1}
	}
	micro := &report.Run{Run: results.Run{ID: "001"}, Workloads: []*report.Workload{{Name: "adaptor",
		Percentiles: []report.PercentilePoint{pct(50, 20), pct(99, 40)}}}}
	gw := &report.Run{Run: results.Run{ID: "002"}, Workloads: []*report.Workload{{Name: "adaptor",
		Percentiles: []report.PercentilePoint{pct(50, 150), pct(99, 1500)}}}}
	res := &report.Results{Runs: []*report.Run{micro, gw}, Summary: results.Summary{Groups: []results.Group{{
		Params: results.Params{"components": "[micro]"}, Labels: map[string]string{"components": "Micro"}, Runs: []string{"001"},
		Metrics: map[string]map[string]results.Aggregate{
			"iot/adaptor":             {"batches_due": agg(100), "batches_ok": agg(98), "messages_per_s": agg(4000), "cpu_cores": agg(0.01)},
			"adaptor/t_rr/latency_ms": {"p50": agg(20), "p90": agg(30), "p99": agg(40)},
			"adaptor/t_ex/latency_ms": {"mean": agg(14), "p50": agg(13)},
			"adaptor/t_rr/errors":     {"value": agg(2)},
			"resources/fn":            {"cpu_pct": agg(25), "rss_mib_max": agg(60)},
		}}, {
		Params: results.Params{"components": "[gw]"}, Labels: map[string]string{"components": "Flask scaled"}, Runs: []string{"002"},
		Metrics: map[string]map[string]results.Aggregate{
			"iot/adaptor":             {"batches_due": agg(100), "batches_ok": agg(100)},
			"adaptor/t_rr/latency_ms": {"p50": agg(150)},
			// The gateway's own resources are not the implementation's; its instances' are.
			"resources/gw": {"cpu_pct": agg(7), "rss_mib_max": agg(30)},
			// The runner reports the processes the gateway started too; faas/ has their sum.
			"resources/gw-analytics-1": {"cpu_pct": agg(90), "rss_mib_max": agg(100)},
			"faas/gw/analytics":        {"cpu_pct": agg(180), "rss_mib": agg(400), "mean_ready": agg(3.5), "max_ready": agg(5), "scale_events": agg(2)},
		}}}}}
	c := build(res)
	if c == nil || len(c.Tables) != 1 || len(c.Figures) != 1 {
		t.Fatalf("section %+v: want the processing table and a CDF figure (scaling is the Functions section's)", c)
	}
	row := func(tb report.Table, i int) map[string]string {
		m := map[string]string{}
		for j, col := range tb.Columns {
			m[col.Header] = tb.Rows[i][j]
		}
		return m
	}
	p0, p1 := row(c.Tables[0], 0), row(c.Tables[0], 1)
	if p0["components"] != "Micro" || p0["t_rr p99"] != "40" || p0["errors"] != "2" || p0["CPU %"] != "25" || p0["t_ex mean"] != "14" {
		t.Errorf("micro row %v", p0)
	}
	if p1["CPU %"] != "180" || p1["memory MiB"] != "400" || p1["t_ex p50"] != "—" {
		t.Errorf("gateway row %v: want the instances' CPU and memory, not the gateway's", p1)
	}
	// At the top of the page: each implementation's t_rr, and the batches Micro did not answer.
	var heads []string
	for _, h := range c.Headlines {
		heads = append(heads, fmt.Sprintf("%s bad=%v", h.Text, h.Bad))
	}
	want := []string{"Batch request-reply time t_rr p50, adaptor: Micro 20 ms; Flask scaled 150 ms bad=false",
		"Batches not answered (timed out or failed), adaptor: Micro 2 of 100 bad=true"}
	if strings.Join(heads, "\n") != strings.Join(want, "\n") {
		t.Errorf("headlines:\n%s\nwant:\n%s", strings.Join(heads, "\n"), strings.Join(want, "\n"))
	}
	svg := string(c.Figures[0].SVG)
	if !strings.Contains(svg, "Micro") || !strings.Contains(svg, "Flask scaled") {
		t.Error("the CDF lacks a line per implementation")
	}
	// With the MQTT ingress, a second table has the readings and t_in.
	res.Summary.Groups[0].Metrics["iot/adaptor"]["mqtt_published"] = agg(4000)
	res.Summary.Groups[0].Metrics["iot/adaptor"]["mqtt_received"] = agg(3990)
	res.Summary.Groups[0].Metrics["iot/adaptor"]["mqtt_not_received"] = agg(10)
	res.Summary.Groups[0].Metrics["adaptor/t_in/latency_ms"] = map[string]results.Aggregate{"p50": agg(3), "p99": agg(9)}
	c = build(res)
	if len(c.Tables) != 2 || len(c.Tables[1].Rows) != 1 {
		t.Fatalf("tables %+v: want an MQTT table with the one MQTT run", c.Tables)
	}
	if m := row(c.Tables[1], 0); m["not received"] != "10" || m["received"] != "3990" || m["t_in p99"] != "9" || m["publish failed"] != "—" {
		t.Errorf("mqtt row %v", m)
	}
	if build(&report.Results{}) != nil {
		t.Error("a section without IoT results")
	}
}
