package kvbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
	"github.com/continuum-project/continuum/internal/testenv"
)

func needBinaries(t *testing.T) {
	t.Helper()
	for _, find := range []func(string) (string, error){baselines.EtcdBinary, baselines.RedisBinary} {
		if _, err := find(""); err != nil {
			if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
	}
}

// TestQuickBenchEtcdRedis runs the --quick benchmark against real etcd and Redis, plus a kv
// whose binary does not exist, which must be reported as not measured without stopping the
// others.
func TestQuickBenchEtcdRedis(t *testing.T) {
	needBinaries(t)
	cfg := DefaultConfig(true)
	cfg.Stores = []string{kvtarget.KindKV, kvtarget.KindEtcd, kvtarget.KindRedis}
	cfg.ContinuumBin = "/nonexistent/continuum"
	cfg.RecordCount, cfg.Rates, cfg.SweepAtLeast = 500, []float64{500, 1000}, 1000
	cfg.StepDuration, cfg.Warmup, cfg.ClosedDuration = time.Second, 200*time.Millisecond, time.Second
	cfg.FootprintRecords = 1500
	cfg.Repeats = 2
	cfg.Dir = t.TempDir()
	cfg.Command = "continuum bench kv --quick"
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Repeats interleave the stores, each from scratch.
	if len(res.Stores) != 6 || res.Stores[0].Error == "" || res.Stores[3].Error == "" {
		t.Fatalf("%d results; kv with a missing binary: %+v", len(res.Stores), res.Stores[0])
	}
	for i, sr := range res.Stores {
		if want := cfg.Stores[i%3]; sr.Store != want || sr.Repeat != 1+i/3 {
			t.Errorf("result %d is %s repeat %d, want %s repeat %d", i, sr.Store, sr.Repeat, want, 1+i/3)
		}
	}
	for _, sr := range res.Stores {
		if sr.Store == kvtarget.KindKV {
			continue
		}
		if sr.Error != "" {
			t.Fatalf("%s: %s", sr.Store, sr.Error)
		}
		if len(sr.Sweep) != 2 || sr.Closed == nil || sr.Closed.ThroughputRPS <= 0 {
			t.Errorf("%s: sweep %d steps, closed %+v", sr.Store, len(sr.Sweep), sr.Closed)
		}
		// Whether a store sustains a rate is what the benchmark measures, not what this test
		// checks: on a busy machine etcd at 1000 ops/s had requests over the timeout (p99
		// 1.9 s). So a timeout is a measurement, which must then fail the step's verdict;
		// any other error is the harness's or the client's, and fails the test. A request
		// over its timeout is "timeout" (loadgen) or, when etcd's client saw its deadline
		// pass first, grpc_DeadlineExceeded (kvtarget types etcd errors by gRPC code), or
		// "canceled": a step that ends gives requests in flight their timeout and 100 ms
		// more, then cancels them (loadgen's Stopping), and every request was due by then.
		for _, s := range sr.Sweep {
			var timeouts int64
			for _, op := range []string{ycsb.OpRead, ycsb.OpUpdate} {
				st := s.Ops[op]
				for typ, n := range st.ErrorsByType {
					if typ == loadgen.ErrTimeout || typ == "grpc_DeadlineExceeded" || typ == loadgen.ErrCanceled {
						timeouts += n
					} else if n != 0 {
						t.Errorf("%s at %.0f: %d %s errors of type %q: %+v", sr.Store, s.Rate, n, op, typ, s)
					}
				}
				if st.OK == 0 {
					t.Errorf("%s at %.0f: no %s answered: %+v", sr.Store, s.Rate, op, s)
				}
			}
			if s.Errors != timeouts {
				t.Errorf("%s at %.0f: %d errors, %d of them timeouts by type: %+v", sr.Store, s.Rate, s.Errors, timeouts, s)
			}
			if timeouts > 0 && s.Sustained {
				t.Errorf("%s at %.0f: sustained with %d timeouts: %+v", sr.Store, s.Rate, timeouts, s)
			}
			if timeouts > 0 {
				t.Logf("%s at %.0f: %d requests over the timeout (a busy machine), not sustained", sr.Store, s.Rate, timeouts)
			}
		}
		if sr.RSSLoaded <= 0 || sr.DiskLoaded <= 0 || sr.LoadInsertsPS <= 0 {
			t.Errorf("%s: rss %d disk %d load %v", sr.Store, sr.RSSLoaded, sr.DiskLoaded, sr.LoadInsertsPS)
		}
		if sr.FootprintRecords != 1500 || sr.RSSFootprint <= 0 || sr.DiskFootprint <= 0 {
			t.Errorf("%s: footprint at %d keys: rss %d disk %d", sr.Store, sr.FootprintRecords, sr.RSSFootprint, sr.DiskFootprint)
		}
	}
	md := Markdown(res)
	for _, want := range []string{"Regenerate with:\n\n```\ncontinuum bench kv --quick\n```", "- Machine: ", "| etcd | 1 | 500 |", "| redis | 2 | 1000 |", "## Across repeats",
		"**kv not measured**", "kv >= 3x etcd's highest rate with p99 <= 10 ms: **not evaluated**", "raw results (JSON)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// The verdicts follow from the numbers, including the sweep's stop rule.
func TestKVGoalsVerdicts(t *testing.T) {
	step := func(rate, p50 float64, ok bool) Step {
		return Step{Rate: rate, Sustained: ok, Ops: map[string]OpStats{"read": {P50: p50}, "update": {P50: p50}}}
	}
	res := &Result{Config: DefaultConfig(false), Stores: []StoreResult{
		{Store: "kv", MaxSustained: 35000, Sweep: []Step{step(2000, 0.5, true), step(5000, 0.6, true)}, RSSPerMillion: 100, DiskPerMillion: 50},
		{Store: "etcd", MaxSustained: 10000, Sweep: []Step{step(2000, 0.8, true), step(5000, 0.9, true)}, RSSPerMillion: 200, DiskPerMillion: 100},
		{Store: "redis", MaxSustained: 50000},
	}}
	g := goalLines(res)
	for _, want := range []string{"ratio 3.50x: **met**", "kv p50 at 5k/s <= etcd's: read kv 0.60 ms vs etcd 0.90 ms; update kv 0.60 ms vs etcd 0.90 ms: **met**",
		"kv 35000 ops/s, Redis 50000 ops/s: **met**", "(0.50x)"} {
		if !strings.Contains(g, want) {
			t.Errorf("goals lack %q:\n%s", want, g)
		}
	}
	res.Stores[0].MaxSustained = 20000
	if g := goalLines(res); !strings.Contains(g, "ratio 2.00x: **not met**") || !strings.Contains(g, "Redis 50000 ops/s: **not met**") {
		t.Errorf("lower kv rate:\n%s", g)
	}
}

// With repeats, rates compare repeat by repeat (every one must reach 3x), the tail goal takes the
// worst p99 up to each repeat's highest sustained rate, and other figures use medians.
func TestKVGoalsOverRepeats(t *testing.T) {
	step := func(rate, p99 float64, ok bool) Step {
		return Step{Rate: rate, Sustained: ok, MaxP99: p99, Ops: map[string]OpStats{"read": {P50: 0.5, P99: p99}}}
	}
	kv := func(rep int, rate, closed, firstP99 float64) StoreResult {
		return StoreResult{Store: "kv", Repeat: rep, MaxSustained: rate, Closed: &Step{ThroughputRPS: closed},
			Sweep: []Step{step(2000, firstP99, true), step(5000, 3, true), step(rate, 4, true), step(rate*2, 30, false)}}
	}
	etcd := func(rep int, closed float64) StoreResult {
		return StoreResult{Store: "etcd", Repeat: rep, MaxSustained: 10000, Closed: &Step{ThroughputRPS: closed},
			Sweep: []Step{step(2000, 2, true), step(5000, 4, true)}}
	}
	cfg := DefaultConfig(false)
	cfg.Stores = []string{"kv", "etcd"}
	res := &Result{Config: cfg, Stores: []StoreResult{
		kv(1, 35000, 30000, 2), etcd(1, 10000), kv(2, 32000, 26000, 7.5), etcd(2, 12000), kv(3, 25000, 20000, 2), etcd(3, 8000)}}
	g := goalLines(res)
	for _, want := range []string{
		"in every repeat: kv 35000 ops/s, 32000 ops/s, 25000 ops/s, etcd 10000 ops/s, 10000 ops/s, 10000 ops/s; ratio per repeat 3.50x, 3.20x, 2.50x: **not met**",
		"worst p99 7.50 ms (at 2000 ops/s, repeat 2); the first step already exceeded 5 ms in some repeat: **not met**",
		"closed-loop peak kv >= 2.5x etcd's (medians of 3 repeats): kv 26000 ops/s, etcd 10000 ops/s, ratio 2.60x: **met**",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("goals lack %q:\n%s", want, g)
		}
	}
	res.Stores[4] = kv(3, 31000, 20000, 2)
	res.Stores[2] = kv(2, 32000, 26000, 2)
	g = goalLines(res)
	if !strings.Contains(g, "3.50x, 3.20x, 3.10x: **met**") || !strings.Contains(g, "worst p99 4.00 ms") {
		t.Errorf("every repeat at 3x and within 5 ms:\n%s", g)
	}
	md := Markdown(res)
	if !strings.Contains(md, "| kv | 35000 ops/s, 32000 ops/s, 31000 ops/s | 32000 ops/s | 30000, 26000, 20000 | 26000 (20000–30000) |") {
		t.Errorf("the across-repeats table is wrong:\n%s", md)
	}
}

// A kv that sustains the top of the sweep has an unknown highest rate: a ratio below 3x then
// says nothing, and the verdict says to widen the sweep.
func TestKVGoalsWholeSweepSustained(t *testing.T) {
	cfg := DefaultConfig(true) // rates 2000, 5000
	res := &Result{Config: cfg, Stores: []StoreResult{{Store: "kv", Repeat: 1, MaxSustained: 5000}, {Store: "etcd", Repeat: 1, MaxSustained: 5000}}}
	if g := goals(res)[0].Line(); !strings.Contains(g, "kv sustained the whole sweep") || !strings.Contains(g, "**undetermined** (widen --rates") {
		t.Errorf("rate goal: %s", g)
	}
}

func TestKVBenchConfigValidate(t *testing.T) {
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Stores = nil }, "stores"},
		{func(c *Config) { c.Stores = []string{"mongo"} }, "mongo"},
		{func(c *Config) { c.Rates = []float64{5000, 2000} }, "ascending"},
		{func(c *Config) { c.Workload = "z" }, "workload"},
		{func(c *Config) { c.Warmup = c.StepDuration }, "warm-up"},
		{func(c *Config) { c.RedisFsync = "no" }, "appendfsync"},
		{func(c *Config) { c.FootprintRecords = -1 }, "footprint records"},
		{func(c *Config) { c.Repeats = 0 }, "repeats"},
	} {
		cfg := DefaultConfig(false)
		c.change(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error about %s, got %v", c.want, err)
		}
	}
}

// TestQuickBenchServerCost runs kv and etcd and checks that the closed loop's server cost and
// kv's storage writes are measured from the real processes and reach the report, and that
// --maintenance compacts and defragments both stores during the sweep step.
func TestQuickBenchServerCost(t *testing.T) {
	needBinaries(t)
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	cfg := DefaultConfig(true)
	cfg.Stores = []string{kvtarget.KindKV, kvtarget.KindEtcd}
	cfg.ContinuumBin = bin
	cfg.RecordCount, cfg.Rates, cfg.SweepAtLeast = 300, []float64{300}, 300
	cfg.StepDuration, cfg.Warmup, cfg.ClosedDuration = time.Second, 200*time.Millisecond, time.Second
	cfg.FootprintRecords, cfg.Repeats, cfg.Maintenance = 0, 1, true
	cfg.Dir = t.TempDir()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, sr := range res.Stores {
		if sr.Error != "" {
			t.Fatalf("%s: %s", sr.Store, sr.Error)
		}
		// The records were loaded (revisions past 300) before the step's compaction.
		if m := sr.Sweep[0].Maintenance; m == nil || m.Error != "" || m.Revision <= 300 || m.CompactMs <= 0 || m.DefragMs <= 0 {
			t.Errorf("%s: maintenance %+v", sr.Store, m)
		}
		// Every request costs the server some CPU and, in Go, some allocations.
		if c := sr.Cost; c == nil || c.CPUMicros <= 0 || c.Allocs <= 0 || c.AllocBytes <= 0 {
			t.Errorf("%s: cost %+v", sr.Store, sr.Cost)
		}
		if sr.Store == kvtarget.KindEtcd && sr.Storage != nil {
			t.Errorf("etcd has kv's storage counters: %+v", sr.Storage)
		}
	}
	kv := res.Stores[0].Storage
	// The load alone logged 300 records of a 32-byte field each (the sweep and the closed loop
	// add more, as many as a busy machine lets them run: no floor for those).
	if kv == nil || kv.WALBytes < 300*32 || kv.WriteAmp < 1 {
		t.Fatalf("kv storage: %+v", kv)
	}
	md := Markdown(res)
	for _, want := range []string{"## Server cost per request (closed loop)", "kv server CPU per request <= 40 µs (closed loop): kv ",
		"compact / defrag ms |", "with a compaction and a defragmentation in every step"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// With 100 kB records the large-value goal is stated: p50 at most half of etcd's and p99 at most
// etcd's, for each operation at each rate both stores ran.
func TestKVLargeValueGoal(t *testing.T) {
	step := func(rate, p50, p99 float64) Step {
		o := OpStats{OK: 100, P50: p50, P99: p99}
		return Step{Rate: rate, Sustained: true, Ops: map[string]OpStats{"read": o, "update": o}}
	}
	cfg := DefaultConfig(false)
	cfg.FieldLength, cfg.Rates = 102400, []float64{100, 200}
	res := &Result{Config: cfg, Stores: []StoreResult{
		{Store: "kv", Repeat: 1, Sweep: []Step{step(100, 1, 4), step(200, 1.5, 5)}},
		{Store: "etcd", Repeat: 1, Sweep: []Step{step(100, 3, 6), step(200, 3, 9)}},
	}}
	g := goalLines(res)
	if want := "large values (102 kB records): kv p50 <= half of etcd's and p99 <= etcd's at every rate both ran (kv vs etcd): 100/s read p50 1.00 vs 3.00 ms, p99 4.00 vs 6.00 ms;"; !strings.Contains(g, want) || !strings.Contains(g, "**met**") {
		t.Fatalf("goals lack %q:\n%s", want, g)
	}
	res.Stores[0].Sweep[1] = step(200, 1.6, 5) // 1.6 > 3/2
	if g := goalLines(res); !strings.Contains(g, "200/s update p50 1.60 vs 3.00 ms, p99 5.00 vs 9.00 ms: **not met**") {
		t.Fatalf("p50 above half of etcd's:\n%s", g)
	}
	res.Config.FieldLength = 32
	if g := goalLines(res); strings.Contains(g, "large values") {
		t.Fatalf("small records state the large-value goal:\n%s", g)
	}
}

// goalLines is the goals as the Markdown lists them.
func goalLines(res *Result) string {
	var lines []string
	for _, g := range goals(res) {
		lines = append(lines, g.Line())
	}
	return strings.Join(lines, "\n")
}

// The results in docs/benchmarks/ were written before the kit: `--from-json` still reads them
// (the header's fields kept their names) and renders every section.
func TestReadResultWrittenBeforeTheKit(t *testing.T) {
	for _, name := range []string{"kv-single-node.json", "kv-maintenance.json", "kv-large-values.json"} {
		res, err := ReadResult(filepath.Join("..", "..", "..", "docs", "benchmarks", name))
		if err != nil {
			t.Fatal(err)
		}
		if res.Command == "" || res.Machine == "" || res.Started.IsZero() || len(res.Stores) == 0 {
			t.Errorf("%s: header %+v, %d stores", name, res.Header, len(res.Stores))
		}
		md := Markdown(res)
		for _, want := range []string{"Regenerate with:\n\n```\n" + res.Command + "\n```", "- Machine: " + res.Machine,
			"## Rate sweep (open loop)", "## Summary per store", "## Against the goals (issues 3 and 13)", "- kv >= 3x etcd's highest rate", "raw results (JSON)"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s: markdown lacks %q", name, want)
			}
		}
	}
}
