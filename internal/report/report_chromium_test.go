//go:build unix

package report

import (
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

// These tests open the rendered report in headless Chromium, the way a reader would, and check
// that the page actually paints charts: the PNG is not blank, and the DOM after rendering has
// every expected figure with drawn SVG content.

func renderFixture(t *testing.T, name string) string {
	t.Helper()
	dir := copyFixture(t, name)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(HTMLPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + abs
}

func TestReportScreenshotChromium(t *testing.T) {
	bin := reporttest.Chromium(t)
	url := renderFixture(t, "quickstart")
	shot := filepath.Join(t.TempDir(), "report.png")
	reporttest.RunChromium(t, bin, "--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 2000 {
		t.Fatalf("screenshot is %dx%d, want the 1400x4000 window", b.Dx(), b.Dy())
	}
	colours := map[uint32]bool{}
	nonWhite, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			colours[r>>3<<10|g>>3<<5|bl>>3] = true // 5 bits per channel: antialiasing noise merges
			if r < 235 || g < 235 || bl < 235 {
				nonWhite++
			}
			total++
		}
	}
	frac := float64(nonWhite) / float64(total)
	t.Logf("screenshot %dx%d: %d colours, %.1f%% non-white", b.Dx(), b.Dy(), len(colours), 100*frac)
	if len(colours) < 20 || frac < 0.02 {
		t.Errorf("screenshot looks blank: %d distinct colours, %.2f%% non-white pixels", len(colours), 100*frac)
	}
	if dir := os.Getenv("CONTINUUM_REPORT_PNG_DIR"); dir != "" { // keep the PNG for a human look
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(filepath.Join(dir, "quickstart-report.png"), data, 0o644)
	}
}

func TestReportDOMChromium(t *testing.T) {
	bin := reporttest.Chromium(t)
	perRun := []string{"latency-cdf", "latency-time", "throughput-time", "node-cpu", "node-memory", "node-network", "node-power", "node-energy",
		"fabric-cpu", "fabric-late"}
	for _, tt := range []struct {
		fixture string
		want    []string
	}{
		{"quickstart", append([]string{"outage-timeline"}, perRun...)},
		{"sweep", append([]string{"sweep-latency", "sweep-throughput", "sweep-errors", "outage-timeline"}, perRun...)},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			dom := reporttest.DumpDOM(t, bin, renderFixture(t, tt.fixture))
			drawn := reporttest.DrawnFigures(dom)
			for _, k := range tt.want {
				if drawn[k] == 0 {
					t.Errorf("no drawn figure with data-chart=%q in the rendered DOM (found %v)", k, drawn)
				}
			}
			// Events must be on the time-series charts as labelled markers.
			for _, label := range []string{"partition cloud", "heal"} {
				if !strings.Contains(dom, `class="marker"`) || !strings.Contains(dom, label) {
					t.Errorf("rendered DOM lacks the event marker %q", label)
				}
			}
		})
	}
}

// TestReportWorkloadWithoutRequestsChromium: a workload whose kind writes no request series
// (an FL training job: job.json only, as run.json's outputs say) gets neither request charts
// nor a missing-file warning, while a load workload that should have written stats.json and
// did not is still flagged, and one from before run.json named outputs is judged as a load.
func TestReportWorkloadWithoutRequestsChromium(t *testing.T) {
	bin := reporttest.Chromium(t)
	dir := copyFixture(t, "quickstart")
	runDir := results.RunDir(dir, "001")
	var run results.Run
	if err := results.ReadJSON(filepath.Join(runDir, results.RunFile), &run); err != nil {
		t.Fatal(err)
	}
	run.Instances = append(run.Instances,
		results.Instance{Name: "job", Kind: "train-job", Node: "cloud", Outputs: []string{"job.json"}},
		results.Instance{Name: "lost", Kind: "http-load", Node: "device", Outputs: results.LoadFiles})
	reporttest.WriteJSON(t, filepath.Join(runDir, results.RunFile), run)
	reporttest.WriteJSON(t, filepath.Join(results.WorkloadDir(runDir, "job"), "job.json"), map[string]any{"state": "done"})
	// lost wrote its time series but not its stats.json.
	src := results.WorkloadDir(runDir, "load")
	if err := os.MkdirAll(results.WorkloadDir(runDir, "lost"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.TimeseriesFile, results.PercentilesFile, results.ErrorsFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(results.WorkloadDir(runDir, "lost"), f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(HTMLPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	dom := reporttest.DumpDOM(t, bin, "file://"+abs)

	var missing []string
	for _, m := range missingRE.FindAllStringSubmatch(dom, -1) {
		missing = append(missing, html.UnescapeString(tagRE.ReplaceAllString(m[1], "")))
	}
	text := strings.Join(missing, " | ")
	if strings.Contains(text, "workloads/job/") {
		t.Errorf("the training job is reported missing files it never writes: %q", text)
	}
	if !strings.Contains(text, "workloads/lost/stats.json") {
		t.Errorf("the load workload's absent stats.json is not flagged: %q", text)
	}
	for _, id := range []string{"cdf-001-job", "lat-001-job", "tput-001-job"} {
		if strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("the training job has the request chart %s", id)
		}
	}
	for _, id := range []string{"cdf-001-load", "lat-001-load", "cdf-001-lost"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("load workload chart %s is missing", id)
		}
	}
	if !strings.Contains(html.UnescapeString(dom), "This workload records no request series") {
		t.Error("the training job's part does not say why it has no request charts")
	}
}

var (
	missingRE = regexp.MustCompile(`(?s)<div class="missing">(.*?)</div>`)
	tagRE     = regexp.MustCompile(`<[^>]*>`)
)
