package report

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

// A system's section is built only for results in which one of its kinds ran: the quickstart
// fixture (http-echo and http-load) must not show it, the same results with an instance of the
// system's kind must, and results whose run.json files name no instances leave it to Build.
func TestSectionOnlyWhenItsSystemRan(t *testing.T) {
	const id = "test-system-section"
	RegisterSection(Section{ID: id, Title: "Test system", Order: 99, Kinds: []string{"test-system", "test-system-load"},
		Build: func(res *Results) *SectionContent {
			if res.Dir == "" || filepath.Base(filepath.Dir(res.Dir)) == "testdata" {
				return nil // only the results this test builds
			}
			return &SectionContent{Note: "built"}
		}})
	shown := func(res *Results) bool {
		return slices.ContainsFunc(buildSections(res), func(s sectionView) bool { return s.ID == id })
	}
	res, err := Load(filepath.Join("testdata", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) == 0 || len(res.Runs[0].Instances) == 0 {
		t.Fatalf("the quickstart fixture's run.json names no instances: %+v", res.Runs)
	}
	res.Dir = t.TempDir()
	if shown(res) {
		t.Error("the section of a system that did not run is shown")
	}
	if res.Ran("test-system") || !res.Ran("http-echo") {
		t.Errorf("Ran: test-system %v, http-echo %v; want false, true", res.Ran("test-system"), res.Ran("http-echo"))
	}
	res.Runs[0].Instances = append(res.Runs[0].Instances, results.Instance{Name: "x", Kind: "test-system-load", Node: "edge"})
	if !shown(res) {
		t.Error("the section of a system that ran (one of its kinds) is not shown")
	}
	res.Runs[0].Instances = nil
	if !shown(res) {
		t.Error("results that name no instances: the section is not left to Build")
	}
}
