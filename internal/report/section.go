package report

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/continuum-project/continuum/internal/report/chart"
)

// Section is a part of the report a system contributes from its own package (its scenario
// adapter registers it in init()): tables and figures built from a results directory, shown
// after the summary, and optionally figures inside each run's workloads. The page renders every
// section the same way; the report knows no system.
type Section struct {
	ID    string // HTML id and Markdown anchor, unique in the report
	Title string
	// Order places the section among the registered ones (lower first; ties by ID).
	Order int
	// Kinds are the kinds of the section's system. The section is built only from results
	// in which at least one run had an instance of one of them, so a report shows the sections
	// of the systems that ran and no others. (Results written before run.json named its
	// instances give Build the decision.) Required.
	Kinds []string
	// Build returns the section's content, or nil when the results have nothing for it (the
	// section is then left out).
	Build func(res *Results) *SectionContent
	// WorkloadFigures returns figures for one workload of one run, shown in that run's part of
	// the report after the engine's own (optional).
	WorkloadFigures func(res *Results, run *Run, w *Workload) []chart.Figure
}

// SectionContent is what a section shows: a note, tables (also in summary.md) and figures.
type SectionContent struct {
	// Headlines are the section's verdicts (acknowledged writes lost, the longest outage, the
	// share of requests within QoS), shown at the top of the page under "At a glance" with a
	// link to the section, so a reader learns the outcome before the details.
	Headlines []Headline
	Note      string
	Tables    []Table
	Figures   []chart.Figure
	// MarkdownNote is added below the tables in summary.md (default: Note).
	MarkdownNote string
}

// Headline is one verdict of a section, one line of text; Bad marks a verdict the reader should
// not miss (writes lost, requests outside QoS), drawn in red.
type Headline struct {
	Text string
	Bad  bool
}

// Table is a table of text cells. Columns say how the cells of each column are aligned.
type Table struct {
	Class   string // CSS class (tests and styles find the table by it)
	Columns []Column
	Rows    [][]string
}

// Column is a table column: its header, an optional tooltip, and whether it holds numbers
// (right-aligned).
type Column struct {
	Header  string
	Title   string
	Numeric bool
}

// NumColumn is a numeric column (right-aligned) with a tooltip (title may be empty).
func NumColumn(header, title string) Column {
	return Column{Header: header, Title: title, Numeric: true}
}

var (
	sectionsMu sync.RWMutex
	sections   []Section
)

// RegisterSection adds a section to every report; it panics on a duplicate or incomplete
// section (a programming error).
func RegisterSection(s Section) {
	if s.ID == "" || s.Title == "" || len(s.Kinds) == 0 || s.Build == nil && s.WorkloadFigures == nil {
		panic(fmt.Sprintf("report.RegisterSection: incomplete section %q", s.ID))
	}
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	for _, x := range sections {
		if x.ID == s.ID {
			panic(fmt.Sprintf("report.RegisterSection: duplicate section %q", s.ID))
		}
	}
	sections = append(sections, s)
	sort.SliceStable(sections, func(i, j int) bool {
		if sections[i].Order != sections[j].Order {
			return sections[i].Order < sections[j].Order
		}
		return sections[i].ID < sections[j].ID
	})
}

func registeredSections() []Section {
	sectionsMu.RLock()
	defer sectionsMu.RUnlock()
	return append([]Section(nil), sections...)
}

// sectionView is a built section as the templates show it.
type sectionView struct {
	ID, Title string
	SectionContent
}

func buildSections(res *Results) []sectionView {
	var out []sectionView
	for _, s := range registeredSections() {
		if s.Build == nil || !res.Ran(s.Kinds...) {
			continue
		}
		if c := s.Build(res); c != nil {
			out = append(out, sectionView{ID: s.ID, Title: s.Title, SectionContent: *c})
		}
	}
	return out
}

func workloadFigures(res *Results, run *Run, w *Workload) []chart.Figure {
	var out []chart.Figure
	for _, s := range registeredSections() {
		if s.WorkloadFigures != nil && ranIn(run, s.Kinds) != notRan {
			out = append(out, s.WorkloadFigures(res, run, w)...)
		}
	}
	return out
}

// Ran says whether an instance of one of kinds ran in any of the results' runs. Results whose
// run.json files name no instances (written before they did) count as having run every kind.
func (res *Results) Ran(kinds ...string) bool {
	if len(res.Runs) == 0 {
		return true
	}
	for _, r := range res.Runs {
		if ranIn(r, kinds) != notRan {
			return true
		}
	}
	return false
}

type ran int

const (
	notRan ran = iota
	didRun
	unknown // run.json names no instances
)

func ranIn(r *Run, kinds []string) ran {
	if len(r.Instances) == 0 {
		return unknown
	}
	for _, inst := range r.Instances {
		if slices.Contains(kinds, inst.Kind) {
			return didRun
		}
	}
	return notRan
}
