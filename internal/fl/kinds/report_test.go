package kinds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/fl/orchestrator"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

// TestFLSection: a run's configurations, its reconfiguration with the resume time the
// "resumed" event gave it, its result (rounds, accuracy, global transfers counted per the
// configuration in force) and the accuracy figure come out of the orchestrator's files.
func TestFLSection(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(1_800_000_000, 0)
	runDir := results.RunDir(dir, "001")
	reporttest.WriteJSON(t, filepath.Join(runDir, results.RunFile), results.Run{ID: "001", Status: "ok", T0: t0,
		Params:    results.Params{"workloads.job.config.strategy": "min-kld"},
		Instances: []results.Instance{{Name: "orch", Kind: "fl-orchestrator", Node: "n1"}}})
	out := results.ComponentDir(runDir, "orch")
	two := `"clusters":[{"aggregator":"n2","clients":["n5","n6"]},{"aggregator":"n3","clients":["n4","n8","n9"]}]`
	one := `"clusters":[{"aggregator":"n2","clients":["n5","n6"]},{"aggregator":"n3","clients":["n4","n8"]}]`
	events := strings.Join([]string{
		`{"t":1800000001,"event":"configure","config":{"strategy":"min-kld","global":"n1",` + two + `,"kld":0.2244,"epochs":8,"local_rounds":7,"cost_per_epoch":598.2}}`,
		`{"t":1800000020,"event":"node-change","change":"n9 left (its service exited (signal killed))"}`,
		`{"t":1800000020.2,"event":"reconfigure","config":{"strategy":"min-kld","global":"n1",` + one + `,"kld":0.3804,"epochs":7,"local_rounds":10,"cost_per_epoch":600},` +
			`"reconfiguration":{"cause":"n9 left","detected_at":1800000020,"applied_at":1800000020.2,"apply_s":0.2,"configured":["fl-la-n3"],"decision":"kept the clusters"}}`,
		`{"t":1800000022,"event":"resumed","round":3,"resume_s":1.5,"detected_at":1800000020}`,
		`{"t":1800000040,"event":"stop","reason":"4 global rounds done"}`,
		`not json (a line cut by a kill)`,
	}, "\n") + "\n"
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, orchestrator.EventsFile), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	reporttest.WriteCSV(t, filepath.Join(out, orchestrator.RoundsFile), orchestrator.RoundsHeader, [][]string{
		{"1800000010", "1", "0.5", "1.2", "2", "0", "100", "1000000", "100", "1"},
		{"1800000018", "2", "0.7", "0.9", "2", "0", "200", "2000000", "200", "1"},
		{"1800000022", "3", "0.65", "0.8", "2", "0", "300", "3000000", "300", "2"},
		{"1800000030", "4", "0.8", "0.6", "2", "0", "400", "4000000", "400", "2"},
	})
	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := buildFL(res)
	if c == nil {
		t.Fatal("no section")
	}
	tables := map[string]report.Table{}
	for _, tb := range c.Tables {
		tables[tb.Class] = tb
	}
	r := tables["fl-result"].Rows
	if len(r) != 1 || !strings.Contains(r[0][0], "strategy=min-kld") || r[0][2] != "4" || r[0][3] != "0.8000" || r[0][4] != "0.8000" ||
		r[0][6] != "8" || r[0][7] != "4.0" || r[0][8] != "1" || r[0][9] != "4 global rounds done" {
		t.Errorf("result row %q", r)
	}
	cf := tables["fl-configs"].Rows
	if len(cf) != 2 || cf[0][1] != "1.0" || cf[0][2] != "start" || cf[0][4] != "n2: n5 n6 | n3: n4 n8 n9" || cf[0][7] != "8" ||
		cf[1][2] != "n9 left" || cf[1][4] != "n2: n5 n6 | n3: n4 n8" || cf[1][8] != "10" {
		t.Errorf("configurations %q", cf)
	}
	rc := tables["fl-reconf"].Rows
	if len(rc) != 1 || rc[0][1] != "20.0" || rc[0][4] != "0.20" || rc[0][5] != "1.50" || rc[0][7] != "fl-la-n3" {
		t.Errorf("reconfigurations %q", rc)
	}
	if len(c.Figures) != 1 || !strings.Contains(string(c.Figures[0].SVG), "n9 left") {
		t.Errorf("accuracy figure without the node change mark")
	}
}

// TestMetrics: summary.json gets the accuracy of every round, the first configuration and the
// reconfiguration times.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	events := `{"t":1,"event":"configure","config":{"strategy":"min-kld","global":"n1","kld":0.2244,"epochs":8,"local_rounds":7,"cost_per_epoch":598.2}}
{"t":5,"event":"reconfigure","config":{"strategy":"min-kld","global":"n1","epochs":7,"local_rounds":10},"reconfiguration":{"cause":"n9 left","detected_at":5,"applied_at":5.2,"apply_s":0.2}}
{"t":7,"event":"resumed","round":2,"resume_s":1.5,"detected_at":5}
`
	if err := os.WriteFile(filepath.Join(dir, orchestrator.EventsFile), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	reporttest.WriteCSV(t, filepath.Join(dir, orchestrator.RoundsFile), orchestrator.RoundsHeader, [][]string{
		{"4", "1", "0.5", "1.2", "2", "0", "100", "100", "10", "1"}, {"7", "2", "0.7", "0.9", "2", "0", "200", "200", "20", "2"}})
	m := orchestratorMetrics(kind.RunOutput{Instances: []kind.InstanceOutput{{Name: "orch", Config: &OrchestratorConfig{}, OutDir: dir}}})["orch"]
	for k, want := range map[string]float64{"rounds": 2, "round_001_accuracy": 0.5, "round_002_accuracy": 0.7, "final_accuracy": 0.7,
		"kld": 0.2244, "epochs": 8, "local_rounds": 7, "reconfigurations": 1, "reconfiguration_1_apply_s": 0.2,
		"reconfiguration_1_resume_s": 1.5, "max_resume_s": 1.5, "cost_spent": 20} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v (all: %v)", k, m[k], want, m)
		}
	}
}
