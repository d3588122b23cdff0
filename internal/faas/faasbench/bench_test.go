package faasbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	md := Markdown(r, cfg, "# x\n")
	if !strings.Contains(md, "| 50 |") || !strings.Contains(md, "| flask | watchdog |") {
		t.Errorf("markdown:\n%s", md)
	}
}
