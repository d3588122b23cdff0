//go:build unix

package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests open the rendered report in headless Chromium, the way a reader would, and check
// that the page actually paints charts: the PNG is not blank, and the DOM after rendering has
// every expected figure with drawn SVG content.

func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal("chromium not found: run `make setup` (as root) to install it; the report test needs it")
	}
	t.Skip("chromium not found; `make setup` installs it")
	return ""
}

// runChromium runs one headless Chromium command with a deadline; the browser's helpers share
// its process group, so a timeout kills all of them and nothing is left behind.
func runChromium(t *testing.T, bin string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--hide-scrollbars", "--window-size=1400,4000"}
	cmd := exec.CommandContext(ctx, bin, append(args, extra...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr (tail): %s", extra, err, lastBytes(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

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

func skipShort(t *testing.T) {
	if testing.Short() && os.Getenv("CONTINUUM_REQUIRE_ROOT") != "1" {
		t.Skip("headless Chromium test skipped in -short mode")
	}
}

func TestReportScreenshotChromium(t *testing.T) {
	skipShort(t)
	bin := findChromium(t)
	url := renderFixture(t, "quickstart")
	shot := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, bin, "--screenshot="+shot, url)
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

var figureRE = regexp.MustCompile(`(?s)<figure[^>]*data-chart="([a-z-]+)"[^>]*>(.*?)</figure>`)

func TestReportDOMChromium(t *testing.T) {
	skipShort(t)
	bin := findChromium(t)
	perRun := []string{"latency-cdf", "latency-time", "throughput-time", "node-cpu", "node-memory", "node-network", "node-power", "node-energy"}
	for _, tt := range []struct {
		fixture string
		want    []string
	}{
		{"quickstart", perRun},
		{"sweep", append([]string{"sweep-latency", "sweep-throughput"}, perRun...)},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			dom := string(runChromium(t, bin, "--dump-dom", renderFixture(t, tt.fixture)))
			if !strings.Contains(dom, "</html>") {
				t.Fatalf("dump-dom output is not a document: %q", lastBytes(dom, 500))
			}
			drawn := map[string]int{}
			for _, m := range figureRE.FindAllStringSubmatch(dom, -1) {
				body := m[2]
				hasMarks := strings.Contains(body, "<path") || strings.Contains(body, "<polyline") || strings.Contains(body, "<rect")
				if strings.Contains(body, "<svg") && hasMarks && strings.Contains(body, "<figcaption") {
					drawn[m[1]]++
				}
			}
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
