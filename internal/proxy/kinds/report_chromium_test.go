//go:build unix

package kinds

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
)

// The QoS section, registered from this package, is on the page a reader opens: headless
// Chromium renders report.html and every QoS figure is drawn, with the section's table.
func TestQoSReportDOMChromium(t *testing.T) {
	bin := reporttest.Chromium(t)
	dir := writeQoSResults(t)
	abs, err := filepath.Abs(report.HTMLPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	dom := reporttest.DumpDOM(t, bin, "file://"+abs)
	drawn := reporttest.DrawnFigures(dom)
	for _, k := range qosFigures {
		if drawn[k] == 0 {
			t.Errorf("no drawn figure with data-chart=%q in the rendered DOM (found %v)", k, drawn)
		}
	}
	for _, want := range []string{`<section id="proxy">`, "<td>round-robin</td>", "kill a"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
}
