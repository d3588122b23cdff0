//go:build unix

package report

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report/reporttest"
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
