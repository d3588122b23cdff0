//go:build unix

package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
)

// TestShippedScenarioReportsFitThePage renders a report for every shipped scenario and opens it
// in headless Chromium at a laptop's width: the page must not scroll sideways, and nothing
// outside a table's own scroll box may reach past the page's column.
//
// Running every scenario would take hours and root: the results are made up from each scenario
// (syntheticResults). The federated-learning section reads the orchestrator's event files, which
// are not made up: its tables are not in these pages.
func TestShippedScenarioReportsFitThePage(t *testing.T) {
	bin := reporttest.Chromium(t)
	paths := shippedScenarios(t)
	// One browser for every page (a Chromium start per page took most of the time).
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1024, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	browser, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if _, err := chromedp.Run(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(path), "../../scenarios/"), ".yaml")
		t.Run(name, func(t *testing.T) {
			dir := syntheticResults(t, path)
			if err := report.Render(dir); err != nil {
				t.Fatal(err)
			}
			if keep := os.Getenv("CONTINUUM_REPORT_KEEP_DIR"); keep != "" { // the pages, for a human look
				page, _ := os.ReadFile(report.HTMLPath(dir))
				_ = os.WriteFile(filepath.Join(keep, strings.ReplaceAll(name, "/", "-")+".html"), page, 0o644)
			}
			probe := overflowProbe(t, browser, report.HTMLPath(dir))
			if probe.ViewportWidth > 1100 {
				t.Fatalf("the page was laid out %d px wide, not at the narrow window the test asked for", probe.ViewportWidth)
			}
			if probe.ScrollWidth > probe.ClientWidth {
				t.Errorf("the page scrolls sideways: scrollWidth %d > clientWidth %d", probe.ScrollWidth, probe.ClientWidth)
			}
			for _, o := range probe.Outside {
				t.Errorf("reaches past the page's column: %s", o)
			}
			if probe.Tables == 0 {
				t.Error("the rendered page has no table: the probe did not see the report")
			}
			t.Logf("%d tables, %d of them scroll inside their own box %q", probe.Tables, probe.Scrolling, probe.Scrolled)
		})
	}
}

// shippedScenarios lists the scenario files under scenarios/ (not the topology files).
func shippedScenarios(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join("..", "..", "scenarios"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(string(b), "version:") || strings.Contains(string(b), "\nversion:") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found %d scenarios under scenarios/", len(out))
	}
	return out
}

type probeResult struct {
	ViewportWidth int      `json:"viewport"`
	ScrollWidth   int      `json:"scrollWidth"`
	ClientWidth   int      `json:"clientWidth"`
	Tables        int      `json:"tables"`
	Scrolling     int      `json:"scrolling"`
	Scrolled      []string `json:"scrolled"` // the classes of the tables that scroll
	Outside       []string `json:"outside"`
}

// probeScript runs in the page after it is laid out (every run's <details> opened, as for
// printing) and writes what it measured into the DOM, where the test reads it.
const probeScript = `<script>
(function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var de = document.documentElement, main = document.querySelector("main");
  var box = main.getBoundingClientRect();
  var right = box.right - parseFloat(getComputedStyle(main).paddingRight) + 1;
  var out = [], tables = 0, scrolling = 0;
  main.querySelectorAll("*").forEach(function (e) {
    if (e.closest("svg") && e.tagName.toLowerCase() !== "svg") return;
    if (e.parentElement && e.parentElement.closest(".tbl")) return; // scrolls in its own box
    var r = e.getBoundingClientRect(), pr = e.parentElement.getBoundingClientRect();
    if (e.parentElement !== main && pr.right > right) return; // its parent is reported: the outermost only
    if (r.width > 0 && r.right > right && out.length < 10) {
      out.push(e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? "." + e.className : "") +
        " right edge " + Math.round(r.right) + " px > " + Math.round(right) + " px: " + (e.textContent || "").slice(0, 80));
    }
  });
  var scrolled = [];
  main.querySelectorAll(".tbl").forEach(function (b) {
    tables++;
    if (b.scrollWidth > b.clientWidth) { scrolling++; scrolled.push(b.firstElementChild.className); }
  });
  var p = document.createElement("pre");
  p.id = "overflow-probe";
  p.textContent = JSON.stringify({viewport: window.innerWidth, scrollWidth: de.scrollWidth, clientWidth: de.clientWidth,
    tables: tables, scrolling: scrolling, scrolled: scrolled, outside: out});
  document.body.appendChild(p);
})();
</script>`

func overflowProbe(t *testing.T, browser context.Context, htmlPath string) probeResult {
	t.Helper()
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	probed := strings.Replace(string(page), "</body>", probeScript+"</body>", 1)
	path := filepath.Join(filepath.Dir(htmlPath), "probe.html")
	if err := os.WriteFile(path, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	// 1024 px wide (the browser's window): a laptop's half screen, narrower than the page's column.
	ctx, cancel := context.WithTimeout(browser, time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+abs)); err != nil {
		t.Fatalf("open %s in Chromium: %v", abs, err)
	}
	out, err := chromedp.Run(ctx, chromedp.Poll[string](`(document.getElementById("overflow-probe") || {}).textContent`,
		chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		t.Fatalf("the probe wrote nothing into %s: %v", abs, err)
	}
	var p probeResult
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	return p
}
