//go:build unix

package reporttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Chromium returns the path of a headless-capable Chromium, skipping the test without one, or
// failing it when CONTINUUM_REQUIRE_ROOT=1 (the full suite, where `make setup` installed it).
// In -short mode the test is skipped unless the full suite was asked for.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv("CONTINUUM_REQUIRE_ROOT") != "1" {
		t.Skip("headless Chromium test skipped in -short mode")
	}
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

// RunChromium runs one headless Chromium command (e.g. --dump-dom URL) with a deadline and
// returns its stdout. The browser's helpers share its process group, so a timeout kills all of
// them and nothing is left behind.
func RunChromium(t testing.TB, bin string, extra ...string) []byte {
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
		t.Fatalf("chromium %v: %v\nstderr (tail): %s", extra, err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

// DumpDOM opens url in headless Chromium and returns the DOM after rendering.
func DumpDOM(t testing.TB, bin, url string) string {
	t.Helper()
	dom := string(RunChromium(t, bin, "--dump-dom", url))
	if !strings.Contains(dom, "</html>") {
		t.Fatalf("dump-dom output is not a document: %q", tail(dom, 500))
	}
	return dom
}

var figureRE = regexp.MustCompile(`(?s)<figure[^>]*data-chart="([a-z-]+)"[^>]*>(.*?)</figure>`)

// DrawnFigures counts, by data-chart kind, the figures of a rendered DOM that hold an SVG with
// drawn marks (paths, polylines or rects) and a caption.
func DrawnFigures(dom string) map[string]int {
	drawn := map[string]int{}
	for _, m := range figureRE.FindAllStringSubmatch(dom, -1) {
		body := m[2]
		hasMarks := strings.Contains(body, "<path") || strings.Contains(body, "<polyline") || strings.Contains(body, "<rect")
		if strings.Contains(body, "<svg") && hasMarks && strings.Contains(body, "<figcaption") {
			drawn[m[1]]++
		}
	}
	return drawn
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
