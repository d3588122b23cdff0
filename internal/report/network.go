package report

import (
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// distortionDoc is where a reader learns what the distortion warning means and what to do.
const distortionDoc = `docs/testbed.md, "When the testbed distorts a run"`

// distortion is one distorted run in the page's warning box.
type distortion struct {
	Run     string // "run 002 (rate=100)"; empty when the results hold one run
	Reasons []string
}

// distortions lists the runs whose fabric figures say the emulated network distorted them.
func distortions(res *Results) []distortion {
	var out []distortion
	for _, r := range res.Summary.Runs {
		if r.Fabric == nil || !r.Fabric.Distorted {
			continue
		}
		d := distortion{Reasons: r.Fabric.Distortion}
		if len(res.Summary.Runs) > 1 {
			d.Run = "run " + r.ID
			if len(r.Params) > 0 {
				d.Run += " (" + FormatParams(r.Params, r.Labels) + ")"
			}
		}
		if len(d.Reasons) == 0 {
			d.Reasons = []string{"summary.json marks it distorted without saying why"}
		}
		out = append(out, d)
	}
	return out
}

// distortionHeadline is the warning box's first line.
func distortionHeadline(ds []distortion, runs int) string {
	if runs <= 1 {
		return "The testbed distorted this run:"
	}
	return fmt.Sprintf("The testbed distorted %d of the %d runs:", len(ds), runs)
}

// distortionAdvice follows the reasons in the warning box.
const distortionAdvice = "Its figures measure the testbed as much as the system under test: " +
	"the emulated network was slower or lossier than configured, or the nodes waited for the host's CPUs. See " +
	distortionDoc + " for what was measured and what to do."

// networkSection is the engine's "Emulated network" section: per run what the fabric carried,
// what it cost, how late it delivered and what it dropped that nothing configured explains, and
// per link direction. It is built from summary.json's runs (their "fabric"); runs on a platform
// that does not emulate the network have none and say so. nil when no run has figures.
func networkSection(res *Results) *sectionView {
	measured := false
	for _, r := range res.Summary.Runs {
		measured = measured || r.Fabric != nil
	}
	if !measured {
		return nil
	}
	runs := Table{Class: "network", Columns: []Column{
		{Header: "run"},
		{Header: "packets/s", Numeric: true, Title: "packets the nodes sent through the fabric per second"},
		{Header: "Mbit/s", Numeric: true},
		{Header: "fabric CPU (cores)", Numeric: true, Title: "the fabric's own CPU: mean over the run / busiest sampling interval"},
		{Header: "late p50 / p99 / max (ms)", Numeric: true, Title: "how much later than scheduled the fabric delivered packets, over the whole run"},
		{Header: "unexplained drops", Numeric: true, Title: "drops no configured loss, queue limit, partition or cut link explains"},
		{Header: "distorted"},
	}}
	links := Table{Class: "network-links", Columns: []Column{
		{Header: "run"}, {Header: "link"},
		{Header: "packets", Numeric: true},
		{Header: "late p50 / p99 (ms)", Numeric: true, Title: "of the packets whose last hop this link was"},
		{Header: "drops", Title: "by reason"},
	}}
	for _, r := range res.Summary.Runs {
		f := r.Fabric
		if f == nil {
			runs.Rows = append(runs.Rows, []string{r.ID, "–", "–", "–", "–", "–", "not measured on this platform"})
			continue
		}
		verdict := "no"
		if f.Distorted {
			verdict = "yes"
		}
		runs.Rows = append(runs.Rows, []string{r.ID, chart.FormatNum(f.PacketsPerS), chart.FormatNum(f.MbitS),
			chart.FormatNum(f.CPUCoresMean) + " / " + chart.FormatNum(f.CPUCoresMax),
			msCell(f.LateP50US) + " / " + msCell(f.LateP99US) + " / " + msCell(f.LateMaxUS),
			fmt.Sprint(f.UnexplainedDrops), verdict})
		for _, l := range f.Links {
			if l.Packets == 0 && len(l.Drops) == 0 {
				continue // an idle direction says nothing
			}
			links.Rows = append(links.Rows, []string{r.ID, l.From + " → " + l.To, fmt.Sprint(l.Packets),
				msCell(l.LateP50US) + " / " + msCell(l.LateP99US), dropsText(l.Drops)})
		}
	}
	content := SectionContent{Tables: []Table{runs}, Note: "The testbed's packet fabric measures itself: its own CPU, " +
		"how much later than scheduled it delivered each packet (queueing it added beyond the configured delay, jitter " +
		"and bandwidth), and the packets it dropped. A run is distorted when lateness p99 > 1 ms (the maximum > 5 ms " +
		"with fewer than 1000 packets), its CPU > 0.9 cores in a sampling interval, or it dropped packets no " +
		"configuration explains; see " + distortionDoc + ". Per interval: runs/<id>/network.csv; per link: links.csv."}
	if len(links.Rows) > 0 {
		content.Tables = append(content.Tables, links)
	}
	return &sectionView{ID: "network", Title: "Emulated network", SectionContent: content}
}

func msCell(us float64) string { return chart.FormatNum(us / 1000) }

func dropsText(by map[string]uint64) string {
	if len(by) == 0 {
		return "–"
	}
	parts := make([]string, 0, len(by))
	for _, k := range sortedKeys(by) {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return strings.Join(parts, ", ")
}

// networkFigures are a run's fabric charts from network.csv: its CPU and its lateness per
// sampling interval, each with the distortion limit drawn, so a reader sees when it was the limit.
func networkFigures(run *Run) []chart.Figure {
	if len(run.Network) == 0 {
		return nil
	}
	mk := func(kind, ylabel string) *chart.Line {
		c := &chart.Line{ID: kind + "-" + run.ID, XLabel: "time since start (s)", YLabel: ylabel, Markers: RunMarkers(run), Bands: RunBands(run)}
		TimeDomain(c, run)
		return c
	}
	cpu, late := mk("fabric-cpu", "fabric CPU (cores)"), mk("fabric-late", "added lateness (ms)")
	cs := chart.Series{Name: "fabric CPU", Color: chart.Color(0)}
	p99 := chart.Series{Name: "p99", Color: chart.Color(1)}
	mx := chart.Series{Name: "max", Color: chart.Color(1), Dash: true}
	cpuLimit := chart.Series{Name: fmt.Sprintf("limit %s cores", chart.FormatNum(results.DistortCPUCores)), Color: chart.Color(2), Dash: true}
	lateLimit := chart.Series{Name: fmt.Sprintf("p99 limit %s ms", chart.FormatNum(results.DistortLateP99US/1000)), Color: chart.Color(2), Dash: true}
	for _, r := range run.Network {
		// A row covers the interval before T; its value belongs to the interval's middle.
		mid := r.T - r.IntervalS/2
		c := chart.Pt(mid, r.CPUCores)
		c.Tip = fmt.Sprintf("t=%ss fabric CPU %s cores", chart.FormatNum(r.T), chart.FormatNum(r.CPUCores))
		cs.Points = append(cs.Points, c)
		p := chart.Pt(mid, r.LateP99US/1000)
		p.Tip = fmt.Sprintf("t=%ss late p99 %s ms (%s packets)", chart.FormatNum(r.T), chart.FormatNum(r.LateP99US/1000), chart.FormatNum(r.Delivered))
		p99.Points = append(p99.Points, p)
		mx.Points = append(mx.Points, chart.Pt(mid, r.LateMaxUS/1000))
	}
	first, last := run.Network[0], run.Network[len(run.Network)-1]
	x0, x1 := first.T-first.IntervalS, last.T
	cpuLimit.Points = []chart.Point{chart.Pt(x0, results.DistortCPUCores), chart.Pt(x1, results.DistortCPUCores)}
	lateLimit.Points = []chart.Point{chart.Pt(x0, results.DistortLateP99US/1000), chart.Pt(x1, results.DistortLateP99US/1000)}
	cpu.Series = []chart.Series{cs, cpuLimit}
	late.Series = []chart.Series{p99, mx, lateLimit}
	return []chart.Figure{
		chart.NewFigure(cpu.ID, "fabric-cpu", fmt.Sprintf("CPU the testbed's packet fabric used (run %s), cores per sampling interval, from network.csv; above the dashed limit the fabric, not the links, shaped the traffic.", run.ID), cpu.SVG()),
		chart.NewFigure(late.ID, "fabric-late", fmt.Sprintf("How much later than scheduled the fabric delivered packets (run %s), p99 and maximum per sampling interval, ms, from network.csv: queueing it added beyond the configured links.", run.ID), late.SVG()),
	}
}
