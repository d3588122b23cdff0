package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/report/chart"
)

// page is everything the HTML and Markdown templates show, computed once from Results.
type page struct {
	Scenario string
	Started  string
	Finished string
	Dir      string
	Env      [][2]string
	Runs     []runRow
	Missing  []string
	Tables   []summaryTable
	// Compare is the summary's metric × combination comparison (Tables is the full list, folded).
	Compare []compareTable
	// Headlines are the verdicts shown first, each linking to the section that has its details.
	Headlines  []pageHeadline
	Extra      []sectionView // the registered sections with content
	Sweep      []chart.Figure
	Sections   []runSection
	MultiRun   bool
	LatHeaders []string
	// Distortion lists the runs the testbed distorted (the warning box at the top), under
	// DistortionHead and followed by DistortionAdvice.
	Distortion       []distortion
	DistortionHead   string
	DistortionAdvice string
}

type pageHeadline struct {
	Headline
	Section, SectionTitle string // the section's ID (the link) and title
}

type runRow struct {
	ID, Params, Status, Error, Started string
	Repeat                             int
	Duration, Warmup                   string
	Distorted                          bool
	// Platform and Links as run.json has them: what the run ran on, how its links were emulated.
	Platform, Links string
}

type runSection struct {
	ID        string
	Title     string
	Status    string
	Open      bool
	Missing   []string
	Events    []eventRow
	Workloads []workloadSection
	Nodes     []chart.Figure
	NodesNote string
	Network   []chart.Figure // the fabric's charts (network.csv), when the platform wrote them
}

// eventRow is an event with its time as the table prints it.
type eventRow struct {
	Event
	Time string
}

// eventRows prints the events' times with one number of decimals for the whole column, so
// "5.00" does not stand beside "10": whole seconds when every event fired on one, else
// milliseconds.
func eventRows(evs []Event) []eventRow {
	whole := true
	for _, e := range evs {
		whole = whole && e.T == math.Trunc(e.T)
	}
	out := make([]eventRow, len(evs))
	for i, e := range evs {
		out[i] = eventRow{Event: e, Time: strconv.FormatFloat(e.T, 'f', 3, 64)}
		if whole {
			out[i].Time = strconv.FormatFloat(e.T, 'f', 0, 64)
		}
	}
	return out
}

type workloadSection struct {
	Name     string
	Requests bool   // it records request series: the request charts and errors table are shown
	Note     string // for a workload without request series: where its results are
	Figures  []chart.Figure
	Errors   []ErrorCount
}

func buildPage(res *Results) *page {
	p := &page{
		Scenario: res.Summary.Scenario,
		Started:  res.Summary.Started,
		Finished: res.Summary.Finished,
		Dir:      res.Dir,
		Missing:  res.Missing,
		Tables:   summaryTables(res.Summary),
		Compare:  compareTables(res.Summary),
		Extra:    buildSections(res),
		Sweep:    sweepFigures(res.Summary),
		MultiRun: len(res.Runs) > 1,
	}
	if ns := networkSection(res); ns != nil {
		p.Extra = append([]sectionView{*ns}, p.Extra...)
	}
	// Availability first: for a failover experiment it is the figure a reader looks for.
	if os := outageSection(res); os != nil {
		p.Extra = append([]sectionView{*os}, p.Extra...)
	}
	for _, sec := range p.Extra {
		for _, h := range sec.Headlines {
			p.Headlines = append(p.Headlines, pageHeadline{Headline: h, Section: sec.ID, SectionTitle: sec.Title})
		}
	}
	if p.Distortion = distortions(res); len(p.Distortion) > 0 {
		p.DistortionHead = distortionHeadline(p.Distortion, max(len(res.Summary.Runs), len(res.Runs)))
		p.DistortionAdvice = distortionAdvice
	}
	distorted := map[string]bool{}
	for _, r := range res.Summary.Runs {
		distorted[r.ID] = r.Fabric != nil && r.Fabric.Distorted
	}
	if p.Scenario == "" {
		p.Scenario = "(unnamed scenario)"
	}
	for _, f := range latencyFields {
		p.LatHeaders = append(p.LatHeaders, f.Header)
	}
	for _, k := range sortedKeys(res.Environment) {
		p.Env = append(p.Env, [2]string{k, envValue(k, res.Environment[k])})
	}
	for i, r := range res.Runs {
		p.Runs = append(p.Runs, runRow{ID: r.ID, Params: FormatParams(r.Params, r.Labels), Status: orDash(r.Status), Error: r.Error,
			Started: timeText(r.Started), Repeat: r.Repeat, Duration: seconds(r.DurationS), Warmup: seconds(r.WarmupS),
			Distorted: distorted[r.ID], Platform: r.Platform, Links: r.LinkEmulation})
		p.Sections = append(p.Sections, buildRunSection(res, r, i == 0))
	}
	return p
}

func buildRunSection(res *Results, r *Run, first bool) runSection {
	s := runSection{ID: r.ID, Status: orDash(r.Status), Open: first, Missing: r.Missing, Events: eventRows(r.Events)}
	s.Title = "Run " + r.ID
	if len(r.Params) > 0 {
		s.Title += " — " + FormatParams(r.Params, r.Labels)
	}
	if r.Repeat > 0 {
		s.Title += fmt.Sprintf(" — repeat %d", r.Repeat)
	}
	for _, w := range r.Workloads {
		ws := workloadSection{Name: w.Name, Requests: w.Requests, Errors: errorRows(w)}
		if w.Requests {
			ws.Figures = []chart.Figure{cdfFigure(r, w), latencyTimeFigure(r, w), throughputFigure(r, w)}
		} else {
			ws.Note = "This workload records no request series (no latency or throughput charts); its results are in its system's section."
		}
		ws.Figures = append(ws.Figures, workloadFigures(res, r, w)...)
		s.Workloads = append(s.Workloads, ws)
	}
	s.Nodes = nodeFigures(r)
	s.Network = networkFigures(r)
	if len(s.Nodes) == 0 {
		s.NodesNote = "No node samples (samples.csv missing or without node rows): no resource or energy charts for this run."
	}
	return s
}

// errorRows prefers errors.csv and falls back to stats.json's errors_by_type.
func errorRows(w *Workload) []ErrorCount {
	if len(w.Errors) > 0 {
		return w.Errors
	}
	var out []ErrorCount
	for _, s := range w.Series {
		st := w.Stats[s]
		for _, t := range sortedKeys(st.ErrorsByType) {
			out = append(out, ErrorCount{Series: s, Type: t, Count: float64(st.ErrorsByType[t])})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Series < out[j].Series })
	return out
}

func envValue(k string, v any) string {
	if f, ok := v.(float64); ok && strings.HasSuffix(k, "_bytes") {
		return fmt.Sprintf("%.1f GiB", f/(1<<30))
	}
	return FormatValue(v)
}

func seconds(v float64) string {
	if v == 0 {
		return "0 s"
	}
	return chart.FormatNum(v) + " s"
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
