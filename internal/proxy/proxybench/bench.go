package proxybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/procstat"
)

// Config is `continuum bench proxy`'s configuration.
type Config struct {
	// Rates are the open-loop rates (requests/s) measured, each directly and through the proxy.
	Rates []float64 `json:"rates"`
	// Step is one run's length, Warmup its leading part left out of the statistics.
	Step   time.Duration `json:"step"`
	Warmup time.Duration `json:"warmup"`
	// Repeats: every (rate, direct|proxy) run is repeated this often, the two modes alternating
	// which goes first, and the figures are medians over the repeats.
	Repeats int `json:"repeats"`
	// Timeout per request, from its intended send time.
	Timeout time.Duration `json:"timeout"`
	// MemoryRate is the rate whose runs the memory figure comes from (the goal's 1000 req/s).
	MemoryRate float64 `json:"memory_rate"`
	// ProxyBin is the continuum-proxy binary measured.
	ProxyBin string `json:"proxy_bin"`
	// Variants are other builds of the proxy (e.g. without the Kubernetes source) whose memory
	// and CPU are measured at MemoryRate for one Step each, for the "by build" table.
	Variants []Variant `json:"variants,omitempty"`
	// Command is the command line that regenerates the result, for its header.
	Command string `json:"-"`
	// Dir holds the proxy's configuration and log (default: a temporary directory, removed).
	Dir string `json:"-"`
	// Log receives progress lines (nil: none).
	Log io.Writer `json:"-"`
}

// DefaultConfig: 100, 1000 and 5000 req/s, 6 s runs (1 s warm-up), 5 repeats: about 4 minutes.
// quick is a smoke test of a few seconds.
func DefaultConfig(quick bool) Config {
	c := Config{Rates: []float64{100, 1000, 5000}, Step: 6 * time.Second, Warmup: time.Second, Repeats: 5,
		Timeout: 2 * time.Second, MemoryRate: 1000}
	if quick {
		c.Rates, c.Step, c.Warmup, c.Repeats, c.MemoryRate = []float64{100, 1000}, 1500*time.Millisecond, 500*time.Millisecond, 1, 1000
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case len(c.Rates) == 0 || slices.ContainsFunc(c.Rates, func(r float64) bool { return !(r > 0) }):
		return fmt.Errorf("rates %v: want one or more rates > 0", c.Rates)
	case c.Step <= 0 || c.Warmup < 0 || c.Warmup >= c.Step:
		return fmt.Errorf("step %v, warmup %v: want a step > 0 longer than its warm-up", c.Step, c.Warmup)
	case c.Repeats < 1:
		return fmt.Errorf("repeats %d: want >= 1", c.Repeats)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout %v: want > 0", c.Timeout)
	case c.ProxyBin == "":
		return errors.New("proxy binary: required (build it with `make build`: bin/continuum-proxy)")
	}
	return nil
}

// Variant is a proxy binary measured for memory only.
type Variant struct {
	Name string `json:"name"`
	Bin  string `json:"bin"`
}

// VariantResult is a build's memory and CPU.
type VariantResult struct {
	Name string `json:"name"`
	Bin  string `json:"bin"`
	// Size is the executable's size on disk.
	Size int64           `json:"size_bytes"`
	Idle procstat.Memory `json:"idle"`
	// Loaded is the highest memory sampled during a MemoryRate run; CPU the cores used.
	Loaded procstat.Memory `json:"loaded"`
	CPU    float64         `json:"cpu_cores"`
	P99    float64         `json:"p99_ms"`
	Error  string          `json:"error,omitempty"`
}

// Latency is one run's client-side statistics in milliseconds.
type Latency struct {
	P50           float64          `json:"p50_ms"`
	P90           float64          `json:"p90_ms"`
	P99           float64          `json:"p99_ms"`
	P999          float64          `json:"p999_ms"`
	Max           float64          `json:"max_ms"`
	ThroughputRPS float64          `json:"throughput_rps"`
	Errors        int64            `json:"errors"`
	ErrorsByType  map[string]int64 `json:"errors_by_type,omitempty"`
}

// Pair is one repeat at one rate: the direct run and the proxied run, back to back.
type Pair struct {
	Rate    float64 `json:"rate"`
	Repeat  int     `json:"repeat"`
	Direct  Latency `json:"direct"`
	Proxied Latency `json:"proxied"`
	// ProxyCPU is the proxy process's CPU use during the proxied run, in cores.
	ProxyCPU float64 `json:"proxy_cpu_cores"`
	// ProxyMem is the highest resident memory sampled during the proxied run.
	ProxyMem procstat.Memory `json:"proxy_memory"`
}

// Summary is one rate's medians over the repeats.
type Summary struct {
	Rate       float64 `json:"rate"`
	DirectP50  float64 `json:"direct_p50_ms"`
	DirectP99  float64 `json:"direct_p99_ms"`
	ProxiedP50 float64 `json:"proxied_p50_ms"`
	ProxiedP99 float64 `json:"proxied_p99_ms"`
	AddedP50   float64 `json:"added_p50_ms"` // median over repeats of proxied - direct
	AddedP99   float64 `json:"added_p99_ms"`
	// AddedP50Spread and AddedP99Spread are the per-repeat differences' spread.
	AddedP50Spread benchkit.Spread `json:"added_p50_spread_ms"`
	AddedP99Spread benchkit.Spread `json:"added_p99_spread_ms"`
	// MedianDiffP50/P99 are the differences of the medians (proxied - direct): with few
	// repeats on a busy machine the two estimates of the added latency can disagree, and the
	// goal is judged on the larger.
	MedianDiffP50 float64         `json:"median_diff_p50_ms"`
	MedianDiffP99 float64         `json:"median_diff_p99_ms"`
	RatioP50      float64         `json:"ratio_p50"` // median proxied / median direct
	RatioP99      float64         `json:"ratio_p99"`
	CPUPer1000RPS float64         `json:"proxy_cpu_cores_per_1000_rps"`
	ProxyMem      procstat.Memory `json:"proxy_memory_median"`
	Errors        int64           `json:"errors"`
}

// Result is a whole benchmark.
type Result struct {
	// Header says what produced the result, where and when, and how busy the host was.
	benchkit.Header
	Config  Config `json:"config"`
	Version string `json:"proxy_version"`
	// IdleMem is the proxy's memory after start-up and one request, before any load.
	IdleMem procstat.Memory `json:"proxy_idle_memory"`
	Pairs   []Pair          `json:"pairs"`
	Summary []Summary       `json:"summary"`
	// Builds holds ProxyBin's figures at MemoryRate (first) and each variant's, each measured
	// on a fresh process.
	Builds []VariantResult `json:"builds"`
	// Goals are the verdicts against the proxy's goals (docs/proxy.md).
	Goals []benchkit.Goal `json:"goals"`
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Run starts an echo upstream in this process and the proxy binary as a child process, then
// measures every rate directly and through the proxy.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "continuum-bench-proxy-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	upstream, stopUpstream, err := startUpstream(ctx)
	if err != nil {
		return nil, err
	}
	defer stopUpstream()
	direct := newTarget("http://"+upstream+"/", "", cfg)
	defer direct.client.CloseIdleConnections()
	if err := direct.Do(ctx); err != nil {
		return nil, fmt.Errorf("first request to the upstream: %w", err)
	}
	for rep := range cfg.Repeats {
		// A fresh proxy per repeat: a run the machine could not sustain leaves a process with
		// more memory and a bigger heap to scan, which would weigh on the next repeat.
		pairs, err := runRepeat(ctx, cfg, res, rep, upstream, direct)
		res.Pairs = append(res.Pairs, pairs...)
		if err != nil {
			return res, err
		}
	}
	res.Summary = summarize(cfg, res.Pairs)

	// Memory is measured on fresh processes: after a run the proxy keeps some of the memory its
	// busiest moment needed (the runtime returns it gradually), which would charge the lower
	// rates' figures with the highest rate's peak.
	builds := append([]Variant{{Name: "this build", Bin: cfg.ProxyBin}}, cfg.Variants...)
	for _, v := range builds {
		vr := measureVariant(ctx, cfg, v, upstream)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		cfg.logf("build %s: idle VmRSS %s (anon %s); at %.0f req/s VmRSS %s (anon %s), CPU %.3f cores %s",
			v.Name, benchkit.MiB(vr.Idle.VmRSS), benchkit.MiB(vr.Idle.RssAnon), cfg.MemoryRate, benchkit.MiB(vr.Loaded.VmRSS), benchkit.MiB(vr.Loaded.RssAnon), vr.CPU, vr.Error)
		res.Builds = append(res.Builds, vr)
	}
	res.Finish()
	res.Goals = Goals(res)
	return res, nil
}

// runRepeat starts the proxy and runs every rate directly and through it.
func runRepeat(ctx context.Context, cfg Config, res *Result, rep int, upstream string, direct *target) ([]Pair, error) {
	px, err := startProxy(ctx, cfg, cfg.ProxyBin, upstream)
	if err != nil {
		return nil, err
	}
	defer px.stop()
	res.Version = px.version
	proxied := newTarget(px.url, "echo", cfg)
	defer proxied.client.CloseIdleConnections()
	// The proxy's first request for a service probes its instances.
	if err := proxied.Do(ctx); err != nil {
		return nil, fmt.Errorf("first request through the proxy: %w (proxy log: %s)", err, px.logTail())
	}
	if rep == 0 {
		if res.IdleMem, err = procstat.ReadMemory(px.pid()); err != nil {
			return nil, err
		}
		cfg.logf("proxy %s pid %d idle: VmRSS %s, anon %s", px.version, px.pid(), benchkit.MiB(res.IdleMem.VmRSS), benchkit.MiB(res.IdleMem.RssAnon))
	}
	var pairs []Pair
	for _, rate := range cfg.Rates {
		p := Pair{Rate: rate, Repeat: rep + 1}
		order := benchkit.Order(rep, 2) // 0 direct, 1 through the proxy
		for _, i := range order {
			viaProxy := i == 1
			if viaProxy {
				lat, cpu, mem, err := measureProxied(ctx, cfg, rate, proxied, px.pid())
				if err != nil {
					return pairs, err
				}
				p.Proxied, p.ProxyCPU, p.ProxyMem = lat, cpu, mem
			} else {
				lat, err := runLoad(ctx, cfg, rate, direct)
				if err != nil {
					return pairs, err
				}
				p.Direct = lat
			}
		}
		cfg.logf("repeat %d, %5.0f req/s: direct p50 %.3f p99 %.3f ms | proxy p50 %.3f p99 %.3f ms | proxy CPU %.3f cores, VmRSS %s (anon %s) | errors %d/%d",
			p.Repeat, rate, p.Direct.P50, p.Direct.P99, p.Proxied.P50, p.Proxied.P99, p.ProxyCPU,
			benchkit.MiB(p.ProxyMem.VmRSS), benchkit.MiB(p.ProxyMem.RssAnon), p.Direct.Errors, p.Proxied.Errors)
		pairs = append(pairs, p)
	}
	return pairs, nil
}

// measureVariant starts another build of the proxy and measures it at MemoryRate.
func measureVariant(ctx context.Context, cfg Config, v Variant, upstream string) VariantResult {
	vr := VariantResult{Name: v.Name, Bin: v.Bin, Size: fileSize(v.Bin)}
	px, err := startProxy(ctx, cfg, v.Bin, upstream)
	if err != nil {
		vr.Error = err.Error()
		return vr
	}
	defer px.stop()
	t := newTarget(px.url, "echo", cfg)
	defer t.client.CloseIdleConnections()
	if err := t.Do(ctx); err != nil {
		vr.Error = err.Error()
		return vr
	}
	if vr.Idle, err = procstat.ReadMemory(px.pid()); err != nil {
		vr.Error = err.Error()
		return vr
	}
	lat, cpu, mem, err := measureProxied(ctx, cfg, cfg.MemoryRate, t, px.pid())
	if err != nil {
		vr.Error = err.Error()
		return vr
	}
	vr.Loaded, vr.CPU, vr.P99 = mem, cpu, lat.P99
	return vr
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// measureProxied runs the load through the proxy while sampling its CPU time and memory.
func measureProxied(ctx context.Context, cfg Config, rate float64, t *target, pid int) (Latency, float64, procstat.Memory, error) {
	cpu0, err := procstat.CPUSeconds(pid, false)
	if err != nil {
		return Latency{}, 0, procstat.Memory{}, fmt.Errorf("proxy process: %w", err)
	}
	t0 := time.Now()
	stop := make(chan struct{})
	memc := make(chan procstat.Memory, 1)
	go func() {
		var peak procstat.Memory
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := procstat.ReadMemory(pid); err == nil && m.VmRSS > peak.VmRSS {
				peak = m
			}
			select {
			case <-stop:
				memc <- peak
				return
			case <-tick.C:
			}
		}
	}()
	lat, err := runLoad(ctx, cfg, rate, t)
	close(stop)
	mem := <-memc
	if err != nil {
		return lat, 0, mem, err
	}
	cpu1, err := procstat.CPUSeconds(pid, false)
	if err != nil {
		return lat, 0, mem, fmt.Errorf("proxy process: %w", err)
	}
	return lat, (cpu1 - cpu0) / time.Since(t0).Seconds(), mem, nil
}

func runLoad(ctx context.Context, cfg Config, rate float64, t *target) (Latency, error) {
	lc := loadgen.DefaultConfig()
	lc.Rate, lc.Duration, lc.Warmup, lc.Timeout = rate, cfg.Step, cfg.Warmup, cfg.Timeout
	s, err := loadgen.RunOne(ctx, lc, t)
	if err != nil {
		return Latency{}, err
	}
	return Latency{P50: s.Latency.P50, P90: s.Latency.P90, P99: s.Latency.P99, P999: s.Latency.P999, Max: s.Latency.Max,
		ThroughputRPS: s.ThroughputRPS, Errors: s.Errors, ErrorsByType: s.ErrorsByType}, nil
}

func summarize(cfg Config, pairs []Pair) []Summary {
	var out []Summary
	for _, rate := range cfg.Rates {
		var at []Pair
		for _, p := range pairs {
			if p.Rate == rate {
				at = append(at, p)
			}
		}
		med := func(f func(Pair) float64) float64 {
			return benchkit.Median(benchkit.Values(at, func(p Pair) (float64, bool) { return f(p), true }))
		}
		added50 := benchkit.Summarize(benchkit.Values(at, func(p Pair) (float64, bool) { return p.Proxied.P50 - p.Direct.P50, true }))
		added99 := benchkit.Summarize(benchkit.Values(at, func(p Pair) (float64, bool) { return p.Proxied.P99 - p.Direct.P99, true }))
		s := Summary{Rate: rate, AddedP50Spread: added50, AddedP99Spread: added99}
		for _, p := range at {
			s.Errors += p.Direct.Errors + p.Proxied.Errors
		}
		s.DirectP50, s.DirectP99 = med(func(p Pair) float64 { return p.Direct.P50 }), med(func(p Pair) float64 { return p.Direct.P99 })
		s.ProxiedP50, s.ProxiedP99 = med(func(p Pair) float64 { return p.Proxied.P50 }), med(func(p Pair) float64 { return p.Proxied.P99 })
		s.AddedP50, s.AddedP99 = round3(added50.Median), round3(added99.Median)
		s.MedianDiffP50, s.MedianDiffP99 = round3(s.ProxiedP50-s.DirectP50), round3(s.ProxiedP99-s.DirectP99)
		s.RatioP50, s.RatioP99 = round3(ratio(s.ProxiedP50, s.DirectP50)), round3(ratio(s.ProxiedP99, s.DirectP99))
		s.CPUPer1000RPS = round3(med(func(p Pair) float64 { return p.ProxyCPU / (rate / 1000) }))
		s.ProxyMem = procstat.Memory{VmRSS: int64(med(func(p Pair) float64 { return float64(p.ProxyMem.VmRSS) })),
			RssAnon: int64(med(func(p Pair) float64 { return float64(p.ProxyMem.RssAnon) })),
			RssFile: int64(med(func(p Pair) float64 { return float64(p.ProxyMem.RssFile) }))}
		out = append(out, s)
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func round3(v float64) float64 { return benchkit.Round(v, 3) }
