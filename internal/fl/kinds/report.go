package kinds

import (
	"fmt"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/fl/plan"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
	"github.com/continuum-project/continuum/internal/results"
)

// The fl part of the report (seeds/004 §3's Figs. 12-19 as a run shows them): per run, every
// configuration the orchestrator chose (clusters, KLD, cost per epoch, epochs, local rounds),
// every reconfiguration with its times, the job's result, and the global model's accuracy over
// time with the node changes marked.

func init() {
	report.RegisterSection(report.Section{ID: "fl", Title: "Federated learning (AIoTwin orchestration §3)", Order: 40,
		Kinds: []string{"fl-orchestrator"}, Build: buildFL})
}

type flRun struct {
	run  *report.Run
	name string
	out  *Output
}

func flRuns(res *report.Results) []flRun {
	var out []flRun
	for _, r := range res.Runs {
		for _, inst := range r.Instances {
			if inst.Kind != "fl-orchestrator" {
				continue
			}
			o, err := ReadOutput(results.ComponentDir(results.RunDir(res.Dir, r.ID), inst.Name))
			if err != nil || len(o.Configurations) == 0 {
				continue
			}
			out = append(out, flRun{run: r, name: inst.Name, out: o})
		}
	}
	return out
}

func buildFL(res *report.Results) *report.SectionContent {
	runs := flRuns(res)
	if len(runs) == 0 {
		return nil
	}
	c := &report.SectionContent{Note: "The orchestrator's configurations (clusters of clients under local aggregators, their mean KLD to the global label distribution, " +
		"the communication cost per client epoch, and the epochs and local rounds the budget rule chose), its reconfigurations " +
		"(apply = from seeing the node change until the new configuration ran; resume = until the global model next completed a round) " +
		"and the global model's test accuracy. Global transfers count model uploads to the global aggregator (edge to cloud)."}
	c.Tables = append(c.Tables, resultTable(runs), configTable(runs))
	if t, ok := reconfTable(runs); ok {
		c.Tables = append(c.Tables, t)
	}
	c.Figures = append(c.Figures, accuracyFigure(runs))
	return c
}

// label names a run in the tables: its ID, its swept values, and the orchestrator when a run
// has several.
func label(r flRun, many bool) string {
	s := r.run.ID
	if len(r.run.Params) > 0 {
		s += " (" + report.FormatParams(r.run.Params, r.run.Labels) + ")"
	}
	if many {
		s += " " + r.name
	}
	return s
}

func resultTable(runs []flRun) report.Table {
	t := report.Table{Class: "fl-result", Columns: []report.Column{{Header: "run"}, {Header: "strategy"}, {Header: "rounds", Numeric: true},
		{Header: "final accuracy", Numeric: true}, {Header: "best accuracy", Numeric: true}, {Header: "cost spent", Numeric: true},
		{Header: "global transfers", Title: "model uploads to the global aggregator over the run", Numeric: true},
		{Header: "model MB to global", Title: "bytes the global aggregator received", Numeric: true},
		{Header: "reconfigurations", Numeric: true}, {Header: "ended"}}}
	for _, r := range runs {
		o := r.out
		row := []string{label(r, len(runs) > len(uniqueRuns(runs))), string(o.Configurations[0].Config.Strategy), "0", "-", "-", "-", "-", "-",
			fmt.Sprint(len(o.Reconfigurations)), o.Stop}
		if n := len(o.Rounds); n > 0 {
			last := o.Rounds[n-1]
			best := 0.0
			for _, x := range o.Rounds {
				best = max(best, x.Accuracy)
			}
			row[2], row[3], row[4], row[5] = fmt.Sprint(last.Round), fmt.Sprintf("%.4f", last.Accuracy), fmt.Sprintf("%.4f", best), chart.FormatNum(last.CostSpent)
			row[6] = fmt.Sprint(globalTransfers(o))
			row[7] = fmt.Sprintf("%.1f", float64(last.BytesReceived)/1e6)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func uniqueRuns(runs []flRun) map[string]bool {
	m := map[string]bool{}
	for _, r := range runs {
		m[r.run.ID] = true
	}
	return m
}

// globalTransfers is the number of model uploads to the global aggregator: per round, one per
// child of the global aggregator in the configuration in force.
func globalTransfers(o *Output) int {
	n := 0
	for _, r := range o.Rounds {
		k := r.Config - 1
		if k < 0 || k >= len(o.Configurations) {
			k = len(o.Configurations) - 1
		}
		conf := o.Configurations[k].Config
		if len(conf.Clusters) > 0 {
			n += len(conf.Clusters)
		} else {
			n += len(conf.Clients)
		}
	}
	return n
}

func clustersText(c plan.Config) string {
	if len(c.Clusters) == 0 {
		return c.Global + ": " + strings.Join(c.Clients, " ")
	}
	parts := make([]string, len(c.Clusters))
	for i, cl := range c.Clusters {
		parts[i] = cl.Aggregator + ": " + strings.Join(cl.Clients, " ")
	}
	return strings.Join(parts, " | ")
}

func configTable(runs []flRun) report.Table {
	t := report.Table{Class: "fl-configs", Columns: []report.Column{{Header: "run"}, {Header: "from (s)", Numeric: true}, {Header: "cause"},
		{Header: "global"}, {Header: "clusters"}, {Header: "KLD", Numeric: true}, {Header: "cost / epoch", Numeric: true},
		{Header: "epochs", Numeric: true}, {Header: "local rounds", Numeric: true}}}
	for _, r := range runs {
		t0 := runT0(r)
		for _, cf := range r.out.Configurations {
			c := cf.Config
			t.Rows = append(t.Rows, []string{label(r, len(runs) > len(uniqueRuns(runs))), fmt.Sprintf("%.1f", cf.T-t0), cf.Cause, c.Global,
				clustersText(c), fmt.Sprintf("%.4f", c.KLD), fmt.Sprintf("%.2f", c.CostPerEpoch), fmt.Sprint(c.Epochs), fmt.Sprint(c.LocalRounds)})
		}
	}
	return t
}

func reconfTable(runs []flRun) (report.Table, bool) {
	t := report.Table{Class: "fl-reconf", Columns: []report.Column{{Header: "run"}, {Header: "at (s)", Numeric: true}, {Header: "cause"},
		{Header: "decision"}, {Header: "apply (s)", Numeric: true}, {Header: "resume (s)", Numeric: true}, {Header: "restarted"},
		{Header: "reconfigured in place"}, {Header: "stopped"}}}
	for _, r := range runs {
		t0 := runT0(r)
		for _, rc := range r.out.Reconfigurations {
			resume := "-"
			if rc.ResumeS > 0 {
				resume = fmt.Sprintf("%.2f", rc.ResumeS)
			}
			t.Rows = append(t.Rows, []string{label(r, len(runs) > len(uniqueRuns(runs))), fmt.Sprintf("%.1f", rc.DetectedAt-t0), rc.Cause, rc.Decision,
				fmt.Sprintf("%.2f", rc.ApplyS), resume, strings.Join(rc.Restarted, " "), strings.Join(rc.Configured, " "), strings.Join(rc.Stopped, " ")})
		}
	}
	return t, len(t.Rows) > 0
}

// runT0 is the run's clock start in unix seconds (events.csv's zero), else the orchestrator's
// first event.
func runT0(r flRun) float64 {
	if !r.run.T0.IsZero() {
		return float64(r.run.T0.UnixNano()) / 1e9
	}
	return r.out.T0
}

func accuracyFigure(runs []flRun) chart.Figure {
	line := &chart.Line{ID: "fl-accuracy", XLabel: "time (s)", YLabel: "global model test accuracy", YMax: chart.Fp(1)}
	many := len(runs) > len(uniqueRuns(runs))
	for i, r := range runs {
		t0 := runT0(r)
		s := chart.Series{Name: label(r, many), Color: chart.Color(i), ShowPoints: true}
		for _, x := range r.out.Rounds {
			p := chart.Pt(x.T-t0, x.Accuracy)
			p.Tip = fmt.Sprintf("round %d: %.4f", x.Round, x.Accuracy)
			s.Points = append(s.Points, p)
		}
		line.Series = append(line.Series, s)
		if len(runs) == 1 {
			for _, nc := range r.out.NodeChanges {
				line.Markers = append(line.Markers, chart.Marker{X: nc.T - t0, Label: nc.Change})
			}
			for _, ev := range r.run.Events {
				if ev.Action == "partition" || ev.Action == "heal" || ev.Action == "kill" || ev.Action == "set" {
					line.Markers = append(line.Markers, chart.Marker{X: ev.T, Label: ev.Action + " " + ev.Target, Failed: ev.Status != "" && ev.Status != "ok"})
				}
			}
		}
	}
	sort.SliceStable(line.Markers, func(a, b int) bool { return line.Markers[a].X < line.Markers[b].X })
	return chart.NewFigure("fl-accuracy", "line", "The global model's accuracy on the held-out test split after each global round; marks: the run's events and the node changes the orchestrator saw.", line.SVG())
}
