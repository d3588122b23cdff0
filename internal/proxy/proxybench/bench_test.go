package proxybench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/procstat"
)

func TestProxyBenchSummary(t *testing.T) {
	pairs := []Pair{
		{Rate: 1000, Repeat: 1, Direct: Latency{P50: 1, P99: 2}, Proxied: Latency{P50: 1.2, P99: 2.4}, ProxyCPU: 0.2, ProxyMem: procstat.Memory{VmRSS: 3}},
		{Rate: 1000, Repeat: 2, Direct: Latency{P50: 1, P99: 2}, Proxied: Latency{P50: 1.4, P99: 3}, ProxyCPU: 0.3, ProxyMem: procstat.Memory{VmRSS: 5}},
		{Rate: 1000, Repeat: 3, Direct: Latency{P50: 2, P99: 4}, Proxied: Latency{P50: 2.1, P99: 4.2}, ProxyCPU: 0.1, ProxyMem: procstat.Memory{VmRSS: 4}},
	}
	s := summarize(Config{Rates: []float64{1000}}, pairs)
	if len(s) != 1 {
		t.Fatalf("%d summaries", len(s))
	}
	got := s[0]
	if got.DirectP50 != 1 || got.ProxiedP50 != 1.4 || got.AddedP50 != 0.2 || got.AddedP99 != 0.4 || got.MedianDiffP99 != 1 || got.CPUPer1000RPS != 0.2 || got.ProxyMem.VmRSS != 4 || got.RatioP50 != 1.4 {
		t.Fatalf("summary: %+v", got)
	}
	res := &Result{Header: benchkit.Header{Command: "continuum bench proxy", Machine: "test machine", Commit: "abc123"}, Config: Config{Rates: []float64{1000}, Repeats: 3, MemoryRate: 1000, ProxyBin: "bin/continuum-proxy", HAProxyMissing: "none here"}, Pairs: pairs, Summary: s,
		Builds: []VariantResult{{Name: "this build", Bin: "bin/continuum-proxy", Loaded: procstat.Memory{VmRSS: 12 << 20}}, {Name: "broken", Bin: "x", Error: "exit 1"}}}
	md := Markdown(res)
	for _, want := range []string{"Regenerate with:\n\n```\ncontinuum bench proxy\n```", "- Machine: test machine", "- Commit: abc123",
		"## Added latency", "| 1000 | 1.000 ms | 1.400 ms | +0.200 ms (+0.100–+0.400) | +0.400 ms | 1.40 |", "+0.400 ms (+0.200–+1.000) |",
		"## Proxy process: CPU and memory", "## Memory by build (at 1000 req/s)", "## Every run",
		"- p99 added <= 0.5 ms at 1000 req/s: +0.400 ms (median of 3 per-repeat differences, from +0.200 to +1.000), +1.000 ms (difference of the medians): **not met**",
		"- RssAnon <= 10.0 MiB at 1000 req/s (this build): 0.0 MiB (VmRSS 12.0 MiB, of which file 0.0 MiB): **met**",
		"## Against the goals\n\n- CPU per request <= HAProxy's at 1000 req/s (one thread each): **not evaluated** (HAProxy not measured: none here)", "| broken (`x`) | 0.0 MiB | not measured: exit 1 |", "raw results"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// TestProxyBenchRun builds the slim proxy (without the heavy sources) and runs a tiny benchmark.
func TestProxyBenchRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the proxy binary")
	}
	bin := filepath.Join(t.TempDir(), "continuum-proxy")
	build := exec.Command("go", "build", "-tags", "nokubernetes,nokv", "-o", bin, "github.com/continuum-project/continuum/cmd/continuum-proxy")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := Config{Rates: []float64{200}, Step: 700 * time.Millisecond, Warmup: 200 * time.Millisecond, Repeats: 1,
		Timeout: 2 * time.Second, MemoryRate: 200, ProxyBin: bin, Variants: []Variant{{Name: "again", Bin: bin}, {Name: "missing", Bin: "/nonexistent"}},
		ProxyGOMAXPROCS: 1, Pin: true, OneCoreClients: 4}
	// HAProxy is the baseline when installed (scripts/setup.sh); without it its columns are left out.
	if _, err := os.Stat(DefaultHAProxy); err == nil {
		cfg.HAProxyBin = DefaultHAProxy
	} else {
		cfg.HAProxyMissing = "not installed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 1 || res.Pairs[0].Proxied.Errors != 0 || res.Pairs[0].Proxied.P50 <= 0 || res.IdleMem.VmRSS <= 0 || res.Pairs[0].ProxyMem.RssAnon <= 0 {
		t.Fatalf("result: %+v", res)
	}
	if cfg.HAProxyBin != "" {
		if h := res.Pairs[0].HAProxy; h == nil || h.Errors != 0 || h.P50 <= 0 || res.Pairs[0].HAProxyCPU <= 0 || res.HAProxyVersion == "" || !res.Summary[0].HAProxy {
			t.Fatalf("haproxy: %+v %+v", res.Pairs[0].HAProxy, res.Summary[0])
		}
		if len(res.OneCoreSummary) != 3 || res.OneCoreSummary[2].Mode != modeHAProxy || res.OneCoreSummary[2].RPS <= 0 {
			t.Fatalf("one core: %+v", res.OneCoreSummary)
		}
		if strings.Contains(Markdown(res), "haproxy.org") {
			t.Fatal("the version line names a web site")
		}
	}
	if len(res.Builds) != 3 || res.Builds[1].Error != "" || res.Builds[1].Loaded.VmRSS <= 0 || res.Builds[2].Error == "" {
		t.Fatalf("builds: %+v", res.Builds)
	}
}
