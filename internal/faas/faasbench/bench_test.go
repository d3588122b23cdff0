package faasbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestRunShort runs the benchmark in miniature: every path answers, nothing fails, and the
// Markdown has its rows. (The figures themselves are the benchmark's, not the test's.)
func TestRunShort(t *testing.T) {
	py, err := faas.FindPython()
	if err != nil {
		t.Fatalf("%v (make setup builds the venv)", err)
	}
	h, err := faas.ResolveHandler(filepath.Join("python", "functions", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	cfg := Config{Python: py, Handler: h, Rates: []float64{50}, Step: 600 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Repeats: 1, Clients: 2, ThroughputStep: 600 * time.Millisecond, Binary: bin, GatewayClients: 4}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Overhead) != 1 || r.Overhead[0].Errors != 0 || r.Overhead[0].Gate.P50 <= 0 || r.Overhead[0].Direct.P50 <= 0 {
		t.Errorf("overhead %+v", r.Overhead)
	}
	if len(r.Throughput) != 4 {
		t.Fatalf("throughput %+v: want continuum and flask, direct and watchdog", r.Throughput)
	}
	for _, tp := range r.Throughput {
		if tp.RPS <= 0 || tp.Errors != 0 {
			t.Errorf("throughput %+v", tp)
		}
	}
	if len(r.Scale.DecisionS) != 1 || r.Scale.DecisionS[0] <= 0 || r.Scale.ReadyS[0] < r.Scale.DecisionS[0] || r.Scale.Errors != 0 {
		t.Errorf("scale step %+v: want a decision, then a ready instance, no failed request", r.Scale)
	}
	// The measurement pinned this process to one CPU: it must have given the others back.
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil || after.Count() != before.Count() {
		t.Errorf("CPU affinity after the run: %d CPUs (%v), want the %d before", after.Count(), err, before.Count())
	}
	if before.Count() >= 2 && (r.Gateway == nil || r.Gateway.PinnedCPU < 0) {
		t.Errorf("gateway core %+v: with %d CPUs the gateway should run pinned to one", r.Gateway, before.Count())
	}
	if g := r.Gateway; g == nil || len(g.RPS) != 1 || g.RPS[0] <= 0 || g.Errors != 0 || g.Cores[0] <= 0 {
		t.Errorf("gateway core %+v: want one measured repeat without errors", g)
	}
	md := Markdown(r)
	if !strings.Contains(md, "| 50 |") || !strings.Contains(md, "| flask | watchdog |") || !strings.Contains(md, "## Against the goals") {
		t.Errorf("markdown:\n%s", md)
	}
}

func TestGoals(t *testing.T) {
	over := func(rate float64, added ...float64) Overhead {
		return Overhead{Rate: rate, GatewayAddedP99: benchkit.Median(added), GatewayAddedP99Spread: benchkit.Summarize(added)}
	}
	for _, c := range []struct {
		name string
		r    Result
		want []string
	}{
		{"all met", Result{Overhead: []Overhead{over(100, 0.1), over(1000, 0.2, 0.4, 0.3)}, Scale: ScaleStep{DecisionS: []float64{1.1, 1.3, 0.9}},
			Gateway: &GatewayCore{RPS: []float64{21000, 23000, 22000}}},
			[]string{"- p99 added by gateway + watchdog <= 1 ms at 1000 req/s: +0.300 ms (median of 3 per-repeat differences (+0.200–+0.400)): **met**",
				"- scale-out decision within 2 s of a load step: 1.10 (0.90–1.30) s (median of the repeats): **met**",
				"- gateway >= 20000 req/s on one core: 22000 (21000–23000) req/s (median of the repeats): **met**"}},
		{"not met", Result{Overhead: []Overhead{over(1000, 1.5)}, Scale: ScaleStep{DecisionS: []float64{2.5}}, Gateway: &GatewayCore{RPS: []float64{15000}}},
			[]string{"+1.500 ms (median of 1 per-repeat differences): **not met**", "2.50 s (median of the repeats): **not met**", "15000 req/s (median of the repeats): **not met**"}},
		{"not measured", Result{Overhead: []Overhead{over(100, 0.1)}},
			[]string{"at 1000 req/s: **not evaluated** (1000 req/s not measured)", "load step: **not evaluated** (no scale step measured)",
				"one core: **not evaluated** (not measured (no continuum binary))"}},
	} {
		md := Markdown(&c.r)
		for _, w := range c.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: markdown lacks %q:\n%s", c.name, w, md)
			}
		}
	}
}

func TestColdStartGoalsAndMarkdown(t *testing.T) {
	rep := &ColdStartReport{Header: benchkit.Header{Command: "continuum bench coldstart --runs 3", Machine: "test machine"}, Runs: 3,
		Results: []ColdStartResult{
			{Handler: "hello", Variant: "fresh interpreter", P50: 54, P90: 64.4, Max: 64.6, WarmP50: 0.51},
			{Handler: "hello", Variant: "zygote", P50: 12.9, P90: 21.6, Max: 25.4, WarmP50: 0.53},
			{Handler: "iot-analytics", Variant: "zygote", P50: 99.9, P90: 120, Max: 130, WarmP50: 4.69},
		}}
	md := ColdStartMarkdown(rep)
	for _, want := range []string{"# Function cold start: fresh interpreter vs zygote", "```\ncontinuum bench coldstart --runs 3\n```", "3 runs per row",
		"| handler | variant | cold p50 | cold p90 | cold max | warm p50 | goal (cold p50) |",
		"| hello | zygote | 12.9 | 21.6 | 25.4 | 0.53 | ≤ 50 ms |", "| iot-analytics | zygote | 99.9 | 120.0 | 130.0 | 4.69 | ≤ 100 ms |",
		"- hello, fresh interpreter: cold p50 ≤ 50 ms: 54.0 ms (p90 64.4 ms, max 64.6 ms): **not met**",
		"- hello, zygote: cold p50 ≤ 50 ms: 12.9 ms (p90 21.6 ms, max 25.4 ms): **met**",
		"- iot-analytics, zygote: cold p50 ≤ 100 ms: 99.9 ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
