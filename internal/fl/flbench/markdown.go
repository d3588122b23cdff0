package flbench

import (
	"fmt"
	"math"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// RatioBound is the heuristic's factor plan's tests assert (plan.heuristicFactorBound).
const RatioBound = 1.10

// PlanSecondsGoal bounds the planning at the largest n: a fifth of the 5 s reconfiguration goal.
const PlanSecondsGoal = 1.0

func goals(res *Result) []benchkit.Goal {
	var g []benchkit.Goal
	worst, inst := 1.0, 0
	for _, r := range res.Ratios {
		worst, inst = max(worst, r.Worst), inst+r.Instances
	}
	if inst > 0 {
		g = append(g, benchkit.Check(fmt.Sprintf("min-kld heuristic within %.2fx of the exact mean KLD where both run", RatioBound),
			worst <= RatioBound, fmt.Sprintf("worst %.4fx over %d random instances", worst, inst)))
	}
	largest := 0
	for _, t := range res.Timings {
		if t.Skipped == "" {
			largest = max(largest, t.Clients)
		}
	}
	var slowest Timing
	for _, t := range res.Timings {
		if t.Skipped == "" && t.Clients == largest && (len(slowest.Seconds) == 0 || benchkit.Median(t.Seconds) > benchkit.Median(slowest.Seconds)) {
			slowest = t
		}
	}
	if len(slowest.Seconds) > 0 {
		s := benchkit.Median(slowest.Seconds)
		g = append(g, benchkit.Check(fmt.Sprintf("every plan and replan at n = %d within %.0f s (a fifth of the 5 s reconfiguration goal)", slowest.Clients, PlanSecondsGoal),
			s <= PlanSecondsGoal, fmt.Sprintf("slowest %.3f s (%s, k = %d, median)", s, slowest.What, slowest.Aggregators)))
	}
	return g
}

func count(v float64) string {
	if math.IsInf(v, 1) {
		return "> 1e308"
	}
	return fmt.Sprintf("%.3g", v)
}

// Markdown renders the result.
func Markdown(res *Result) string {
	d := benchkit.NewDoc("fl-plan: clustering runtime and the heuristic's quality", res.Header)
	c := res.Config
	d.Para("Random label-skewed populations as in the AIoTwin orchestration deliverable (each client holds 1 to 3 of 10 classes, 100 to 20000 samples each; "+
		"costs 10 to 200 per MB to every local aggregator). One process, one goroutine; medians of %d repeats, range in brackets. "+
		"The exact min-kld search enumerates every balanced partition once (clusters of equal size interchangeable) and runs when there are at most %.3g of them; "+
		"the seed's search enumerated k! times as many (every labelled assignment). Budget set out of the way (what is timed is the search).",
		c.Repeats, c.ExactMaxPartitions)
	d.Section("Runtime")
	t := benchkit.NewTable("rrlrrl", "clients", "local aggregators", "what", "seconds", "mean KLD", "balanced partitions")
	for _, x := range res.Timings {
		secs, kld := x.Skipped, ""
		if x.Skipped == "" {
			secs, kld = benchkit.Summarize(x.Seconds).Format("%.4f"), fmt.Sprintf("%.5f", x.KLD)
		} else {
			secs = "not run: " + secs
		}
		t.Row(fmt.Sprint(x.Clients), fmt.Sprint(x.Aggregators), x.What, secs, kld, x.PartText)
	}
	d.Table(t)
	d.Section("Heuristic / exact mean KLD")
	rt := benchkit.NewTable("rrrrrrrr", "clients", "local aggregators", "instances", "heuristic optimal", "worst ratio", "mean ratio", "exact s (median)", "heuristic s (median)")
	for _, r := range res.Ratios {
		rt.Row(fmt.Sprint(r.Clients), fmt.Sprint(r.Aggregators), fmt.Sprint(r.Instances), fmt.Sprint(r.Optimal),
			fmt.Sprintf("%.4f", r.Worst), fmt.Sprintf("%.4f", r.Mean), fmt.Sprintf("%.4f", r.ExactSec), fmt.Sprintf("%.4f", r.HeurSec))
	}
	d.Table(rt)
	d.Para("Ratios are of the mean KLD over the clusters (the seed's \"Best KLD\"), heuristic over exact (1 = optimal); instances whose exact KLD is 0 are left out of the ratio.")
	d.Goals("Goals", goals(res))
	return d.String()
}
