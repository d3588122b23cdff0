//go:build unix

package experiment

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
)

var sectionIDRE = regexp.MustCompile(`<section id="([^"]+)">`)

// engineSections are the report's own parts, shown for any results.
var engineSections = []string{"environment", "runs", "summary", "sweep", "network", "outage"}

// A report shows the sections of the systems that ran and no others: the quickstart (echo
// servers and a load generator) and the kv partition (kv/etcd members, YCSB, the lag probe) get
// no system's section, and each system's own scenario gets its section. The results are made up
// from the shipped scenarios as in TestShippedScenarioReportsFitThePage, with every system's
// section registered (systems/install).
func TestReportShowsOnlySectionsOfSystemsThatRan(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		want     []string // shown
		allowed  []string // may be shown besides want
	}{
		{"quickstart.yaml", nil, nil},
		{"kv/partition.yaml", nil, nil},
		{"kv/lag.yaml", nil, nil},
		{"iot/scenario-a.yaml", []string{"iot"}, []string{"faas"}},
		{"shareddata/failover-partition.yaml", []string{"shareddata"}, nil},
		{"shareddata/maintenance-1x.yaml", []string{"shareddata"}, nil},
		{"stream/edge-cloud-quick.yaml", []string{"stream"}, nil},
		{"proxy/static.yaml", []string{"proxy"}, nil},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			dir := syntheticResults(t, filepath.Join("..", "..", "scenarios", tt.scenario))
			if err := report.Render(dir); err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(report.HTMLPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			var shown []string
			for _, m := range sectionIDRE.FindAllStringSubmatch(string(html), -1) {
				if !slices.Contains(engineSections, m[1]) {
					shown = append(shown, m[1])
				}
			}
			sort.Strings(shown)
			for _, id := range shown {
				if !slices.Contains(tt.want, id) && !slices.Contains(tt.allowed, id) {
					t.Errorf("section %q is shown, but its system did not run (shown: %q)", id, shown)
				}
			}
			for _, id := range tt.want {
				if !slices.Contains(shown, id) {
					t.Errorf("section %q is not shown, but its system ran (shown: %q)", id, shown)
				}
			}
		})
	}
}
