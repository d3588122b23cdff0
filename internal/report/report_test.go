package report

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

// copyFixture copies testdata/<name> to a temporary directory, because Render writes into the
// results directory it reads.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestLoadQuickstart(t *testing.T) {
	res, err := Load(filepath.Join("testdata", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Scenario != "quickstart" || len(res.Runs) != 1 || len(res.Missing) != 0 {
		t.Fatalf("scenario %q, %d runs, missing %v", res.Summary.Scenario, len(res.Runs), res.Missing)
	}
	r := res.Runs[0]
	if r.DurationS != 30 || r.Status != "ok" || len(r.Missing) != 0 {
		t.Errorf("run: duration %v status %q missing %v", r.DurationS, r.Status, r.Missing)
	}
	if len(r.Events) != 2 || r.Events[0].Label() != "partition cloud" || r.Events[0].T != 10 || r.Events[1].Label() != "heal" {
		t.Errorf("events = %+v", r.Events)
	}
	nodes, _ := nodeSeries(r)
	if strings.Join(nodes, ",") != "device,edge,cloud" {
		t.Errorf("nodes = %v", nodes)
	}
	if len(r.Workloads) != 1 || r.Workloads[0].Name != "load" {
		t.Fatalf("workloads = %+v", r.Workloads)
	}
	w := r.Workloads[0]
	if strings.Join(w.Series, ",") != "edge,cloud" {
		t.Errorf("series = %v", w.Series)
	}
	if len(w.Errors) != 1 || w.Errors[0].Series != "cloud" || w.Errors[0].Type != "timeout" {
		t.Errorf("errors = %+v", w.Errors)
	}
	if p50 := w.Stats["edge"].Latency.P50; p50 < 18 || p50 > 22 {
		t.Errorf("edge p50 = %v, want about 20 ms", p50)
	}
}

func TestLoadSweep(t *testing.T) {
	res, err := Load(filepath.Join("testdata", "sweep"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 4 || len(res.Summary.Groups) != 2 {
		t.Fatalf("%d runs, %d groups", len(res.Runs), len(res.Summary.Groups))
	}
	if got := SweptParams(res.Summary.Groups); len(got) != 1 || got[0] != "workloads.load.rate" {
		t.Errorf("swept params = %v", got)
	}
	a := res.Summary.Groups[0].Metrics["load/edge/latency_ms"]["p50"]
	if a.N != 2 || !(a.CI95[0] <= a.Mean && a.Mean <= a.CI95[1]) {
		t.Errorf("aggregate = %+v", a)
	}
}

var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|@import`)

func TestRender(t *testing.T) {
	perRun := []string{"latency-cdf", "latency-time", "throughput-time", "node-cpu", "node-memory", "node-network", "node-power", "node-energy",
		"fabric-cpu", "fabric-late"}
	tests := []struct {
		fixture    string
		wantCharts []string
		runs       int
		wantText   []string
	}{
		{"quickstart", perRun, 1, []string{"partition cloud", "timeout", "load/edge/latency_ms", "Linux", "p99.9"}},
		{"sweep", append([]string{"sweep-latency", "sweep-throughput"}, perRun...), 4, []string{"<details", "workloads.load.rate", "±"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dir := copyFixture(t, tt.fixture)
			if err := Render(dir); err != nil {
				t.Fatal(err)
			}
			h, err := os.ReadFile(HTMLPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			html := string(h)
			for _, k := range tt.wantCharts {
				n := strings.Count(html, `data-chart="`+k+`"`)
				want := tt.runs
				if strings.HasPrefix(k, "sweep-") {
					want = 1
				}
				if n < want {
					t.Errorf("data-chart=%q appears %d times, want at least %d", k, n, want)
				}
			}
			for _, s := range tt.wantText {
				if s == "Linux" {
					s = "6.1.0-28-amd64" // the kernel from environment.json
				}
				if !strings.Contains(html, s) {
					t.Errorf("report.html lacks %q", s)
				}
			}
			if m := externalRef.FindString(html); m != "" {
				t.Errorf("report.html refers to an external resource: %q", m)
			}
			if strings.Contains(html, "NaN") {
				t.Error("report.html contains NaN")
			}
			if f, c := strings.Count(html, "<figure"), strings.Count(html, "<figcaption>"); f == 0 || f != c {
				t.Errorf("%d figures, %d captions", f, c)
			}
			md, err := os.ReadFile(MarkdownPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"| metric | count | mean | p50 | p90 | p99 | p99.9 | max |", "| load/edge/latency_ms |", "## Runs", "partition cloud", "heal"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("summary.md lacks %q:\n%s", want, md)
				}
			}
		})
	}
}

// The warning box: on top of report.html and summary.md when a run was distorted, with its
// reasons and the pointer to the docs; absent otherwise. The "Emulated network" table is there
// either way.
func TestRenderDistortion(t *testing.T) {
	for _, tt := range []struct {
		fixture  string
		want     []string
		distorts bool
	}{
		{"quickstart", []string{"Emulated network", "device → edge", "partition 40"}, false},
		{"sweep", []string{"The testbed distorted 1 of the 4 runs:", "run 004 (workloads.load.rate=100)",
			"the fabric used up to 0.97 cores (&gt; 0.9) from 6 s to 9 s", "When the testbed distorts a run", `<span class="badge bad">distorted</span>`}, true},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			dir := copyFixture(t, tt.fixture)
			if err := Render(dir); err != nil {
				t.Fatal(err)
			}
			h, _ := os.ReadFile(HTMLPath(dir))
			md, _ := os.ReadFile(MarkdownPath(dir))
			html := string(h)
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("report.html lacks %q", w)
				}
			}
			box := strings.Index(html, `class="distorted"`)
			if !tt.distorts {
				if box >= 0 || strings.Contains(html, "The testbed distorted") || strings.Contains(string(md), "The testbed distorted") {
					t.Error("a warning on results that were not distorted")
				}
				return
			}
			// At the top: before the environment, the summary and any run.
			if box < 0 || box > strings.Index(html, `id="environment"`) {
				t.Errorf("the warning box is missing or not at the top (at %d, environment at %d)", box, strings.Index(html, `id="environment"`))
			}
			mdText := string(md)
			for _, w := range []string{"> **The testbed distorted 1 of the 4 runs:**", "> - the fabric used up to 0.97 cores (> 0.9) from 6 s to 9 s",
				"docs/testbed.md", "## Emulated network"} {
				if !strings.Contains(mdText, w) {
					t.Errorf("summary.md lacks %q:\n%s", w, mdText)
				}
			}
			if strings.Index(mdText, "The testbed distorted") > strings.Index(mdText, "## Summary") {
				t.Error("summary.md: the warning comes after the summary")
			}
		})
	}
}

// Runs on a platform that does not emulate the network have no fabric figures: no warning,
// and the network table says they were not measured.
func TestRenderNetworkNotMeasured(t *testing.T) {
	dir := copyFixture(t, "sweep")
	var sum results.Summary
	if err := results.ReadJSON(filepath.Join(dir, results.SummaryFile), &sum); err != nil {
		t.Fatal(err)
	}
	for i := range sum.Runs {
		if sum.Runs[i].ID != "001" {
			sum.Runs[i].Fabric = nil
		}
	}
	if err := results.WriteJSON(filepath.Join(dir, results.SummaryFile), sum); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	h, _ := os.ReadFile(HTMLPath(dir))
	if html := string(h); strings.Contains(html, `class="distorted"`) || strings.Count(html, "not measured on this platform") != 3 {
		t.Errorf("want no warning and 3 runs not measured; warning %v, %d not measured", strings.Contains(html, `class="distorted"`),
			strings.Count(html, "not measured on this platform"))
	}
}

// An interrupted run without samples or events still renders, and the report says what is missing.
func TestRenderMissingOptional(t *testing.T) {
	dir := copyFixture(t, "quickstart")
	run := filepath.Join(dir, "runs", "001")
	for _, f := range []string{"samples.csv", "events.csv", "workloads/load/percentiles.csv"} {
		if err := os.Remove(filepath.Join(run, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"environment.json", "summary.json"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	rj := filepath.Join(run, "run.json")
	data, _ := os.ReadFile(rj)
	data = []byte(strings.Replace(string(data), `"status": "ok"`, `"status": "interrupted"`, 1))
	if err := os.WriteFile(rj, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	h, _ := os.ReadFile(HTMLPath(dir))
	html := string(h)
	for _, want := range []string{"interrupted", "samples.csv", "events.csv", "percentiles.csv", "environment.json is missing",
		"summary.json is missing", "No node samples", "load/edge/latency_ms", `data-chart="latency-time"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string // relative to the fixture copy
		content string
		want    string
	}{
		{"bad number", "runs/001/workloads/load/timeseries.csv",
			"t_s,series,sent,ok,errors,throughput_rps,p50_ms,p99_ms,max_ms\n0,edge,1,1,0,1,20,21,22\n1,edge,1,1,0,1,fast,21,22\n",
			"timeseries.csv:3: column \"p50_ms\""},
		{"field count", "runs/001/samples.csv", "t_s,node,cpu_util\n0,edge,0.5\n1,edge\n", "samples.csv:3:"},
		{"missing column", "runs/001/events.csv", "time,action\n10,partition\n", "events.csv:1: header has no column \"t_s\""},
		{"bad quote", "runs/001/workloads/load/errors.csv", "series,type,count\ncloud,\"timeout,3\n", "errors.csv:2:"},
		{"json syntax", "summary.json", "{\n  \"schema\": 1,\n  \"scenario\": \"x\"\n  \"runs\": []\n}\n", "summary.json:4:"},
		{"json type", "runs/001/run.json", "{\n\"id\": \"001\",\n\"duration_s\": \"thirty\"\n}\n", "run.json:3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFixture(t, "quickstart")
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Render(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if _, serr := os.Stat(HTMLPath(dir)); serr == nil {
				t.Error("report.html written despite the error")
			}
		})
	}
}

func TestNotAResultsDir(t *testing.T) {
	err := Render(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "summary.json") || !strings.Contains(err.Error(), "not a results directory") {
		t.Fatalf("error = %v", err)
	}
}

// FuzzLoadWorkload feeds arbitrary CSV to the workload loader: it must return an error or a
// workload, never panic, and rendering what it returns must not panic either.
func FuzzLoadWorkload(f *testing.F) {
	f.Add("t_s,series,sent,ok,errors,throughput_rps,p50_ms,p99_ms,max_ms\n0,edge,1,1,0,1,20,21,22\n", "series,percentile,latency_ms,count\nedge,50,20,1\n")
	f.Add("t_s,series\n\"", "series,percentile,latency_ms\nedge,1e400,-1,x\n")
	f.Fuzz(func(t *testing.T, ts, pct string) {
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "timeseries.csv"), []byte(ts), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "percentiles.csv"), []byte(pct), 0o644)
		w, _, err := loadWorkload(dir, "w", nil)
		if err != nil {
			return
		}
		run := &Run{Run: results.Run{ID: "001", DurationS: 10}}
		_ = cdfFigure(run, w)
		_ = latencyTimeFigure(run, w)
		_ = throughputFigure(run, w)
	})
}

// TestLoadFlagsDeclaredOutputs: a workload is held to the files its kind says it writes: one
// that declared job.json and wrote nothing is flagged for job.json alone, and gets no request
// charts.
func TestLoadFlagsDeclaredOutputs(t *testing.T) {
	dir := copyFixture(t, "quickstart")
	runDir := results.RunDir(dir, "001")
	reporttest.WriteJSON(t, filepath.Join(runDir, results.RunFile), results.Run{ID: "001", Status: "ok",
		Instances: []results.Instance{{Name: "load", Kind: "http-load", Outputs: results.LoadFiles},
			{Name: "job", Kind: "train-job", Outputs: []string{"job.json"}}}})
	if err := os.MkdirAll(results.WorkloadDir(runDir, "job"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if want := []string{"workloads/job/job.json"}; !slices.Equal(r.Missing, want) {
		t.Errorf("missing %q, want %q", r.Missing, want)
	}
	for _, w := range r.Workloads {
		if w.Requests != (w.Name == "load") {
			t.Errorf("workload %s: Requests = %v", w.Name, w.Requests)
		}
	}
}
