package kinds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

var agg = reporttest.Agg

// The Functions section: one row per gateway and function with the gateway's own resources and
// the function's instances, and the ready instances over time with the scaling decisions.
func TestFunctionsSection(t *testing.T) {
	run := &report.Run{Run: results.Run{ID: "002"}}
	res := &report.Results{Dir: t.TempDir(), Runs: []*report.Run{run}, Summary: results.Summary{Groups: []results.Group{{
		Params: results.Params{"components": "[gw]"}, Labels: map[string]string{"components": "Flask scaled"}, Runs: []string{"002"},
		Metrics: map[string]map[string]results.Aggregate{
			"resources/gw":      {"cpu_pct": agg(7), "rss_mib_max": agg(30)},
			"faas/gw/analytics": {"cpu_pct": agg(180), "rss_mib": agg(400), "mean_ready": agg(3.5), "max_ready": agg(5), "scale_events": agg(2)},
		}}}}}
	// The gateway's record of its instances, as `continuum faas gateway --out` writes it.
	gwDir := filepath.Join(res.Dir, results.RunsDir, "002", results.ComponentsDir, "gw")
	if err := os.MkdirAll(gwDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"replicas.csv": "t_s,function,wanted,ready,inflight\n1.0,analytics,1,1,0\n2.0,analytics,2,1,3\n3.0,analytics,2,2,3\n",
		"scaling.csv":  "t_s,function,from,to,reason\n1.5,analytics,1,2,rps above threshold\n",
	} {
		if err := os.WriteFile(filepath.Join(gwDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := buildReport(res)
	if c == nil || len(c.Tables) != 1 || len(c.Figures) != 1 {
		t.Fatalf("section %+v: want the scaling table and an instances figure", c)
	}
	tb := c.Tables[0]
	row := map[string]string{}
	for j, col := range tb.Columns {
		row[col.Header] = tb.Rows[0][j]
	}
	if row["function"] != "gw/analytics" || row["gateway CPU %"] != "7" || row["instances max"] != "5" || row["scale events"] != "2" {
		t.Errorf("scaling row %v", row)
	}
	if inst := string(c.Figures[0].SVG); !strings.Contains(inst, "rps above threshold") || !strings.Contains(inst, "analytics") {
		t.Error("the instances figure lacks the function or its scaling decision")
	}
	if buildReport(&report.Results{}) != nil {
		t.Error("a section without function results")
	}
}
