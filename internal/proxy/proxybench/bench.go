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
	// HAProxyBin is HAProxy, the baseline measured beside the proxy ("": not measured).
	HAProxyBin string `json:"haproxy_bin,omitempty"`
	// HAProxyMissing says why HAProxy is not measured when HAProxyBin is empty.
	HAProxyMissing string `json:"haproxy_missing,omitempty"`
	// ProxyGOMAXPROCS is GOMAXPROCS for the proxy's process (0: the Go runtime's default, one
	// per CPU); 1 makes the comparison with single-threaded HAProxy one thread against one.
	ProxyGOMAXPROCS int `json:"proxy_gomaxprocs"`
	// Pin runs the proxy under test (and HAProxy) on the last CPU and this process (load
	// generator, upstream) on the others, when there are at least two.
	Pin bool `json:"pin"`
	// OneCoreClients is the number of closed-loop clients of the "throughput on one core"
	// runs (0: none).
	OneCoreClients int `json:"one_core_clients"`
	// Command is the command line that regenerates the result, for its header.
	Command string `json:"-"`
	// Dir holds the proxy's configuration and log (default: a temporary directory, removed).
	Dir string `json:"-"`
	// Log receives progress lines (nil: none).
	Log io.Writer `json:"-"`
}

// DefaultConfig: 100, 1000, 5000 and 10000 req/s, 6 s runs (1 s warm-up), 5 repeats, each
// directly, through the proxy and through HAProxy, plus the one-core throughput runs: about
// 10 minutes. quick is a smoke test of a few seconds.
func DefaultConfig(quick bool) Config {
	c := Config{Rates: []float64{100, 1000, 5000, 10000}, Step: 6 * time.Second, Warmup: time.Second, Repeats: 5,
		Timeout: 2 * time.Second, MemoryRate: 1000, ProxyGOMAXPROCS: 1, Pin: true, OneCoreClients: 32}
	if quick {
		c.Rates, c.Step, c.Warmup, c.Repeats, c.MemoryRate = []float64{100, 1000}, 1500*time.Millisecond, 500*time.Millisecond, 1, 1000
	}
	return c
}

// SaturatedDirectP99Ms: a direct run (no proxy) with a p99 above this is taken as the load
// generator and upstream having fallen behind (the echo upstream answers in well under 1 ms).
const SaturatedDirectP99Ms = 20

// DefaultHAProxy is where Debian's haproxy package (scripts/setup.sh) puts the binary.
const DefaultHAProxy = "/usr/sbin/haproxy"

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
	case c.ProxyGOMAXPROCS < 0:
		return fmt.Errorf("proxy GOMAXPROCS %d: want >= 1, or 0 for the Go runtime's default", c.ProxyGOMAXPROCS)
	case c.OneCoreClients < 0 || c.OneCoreClients > 4096:
		return fmt.Errorf("one-core clients %d: want 0 (no one-core runs) to 4096", c.OneCoreClients)
	}
	return nil
}

// Run starts an echo upstream in this process and the proxy binary (and HAProxy) as child
// processes, then measures every rate directly, through the proxy and through HAProxy.
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
	pn, err := pin(cfg.Pin)
	if err != nil {
		return nil, err
	}
	defer pn.undo()
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg, ProxyCPU: pn.proxyCPU, BenchCPUs: pn.benchCPUs}
	if pn.proxyCPU >= 0 {
		benchkit.Logf(cfg.Log, "proxy under test on CPU %d, load generator and upstream on CPU(s) %v", pn.proxyCPU, pn.benchCPUs)
	}
	if cfg.HAProxyBin == "" {
		benchkit.Logf(cfg.Log, "HAProxy not measured: %s", cfg.HAProxyMissing)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	upstream, stopUpstream, err := startUpstream(ctx)
	if err != nil {
		return nil, err
	}
	defer stopUpstream()
	direct := newTarget("http://"+upstream+"/", "", cfg)
	defer direct.close()
	if err := direct.Do(ctx); err != nil {
		return nil, fmt.Errorf("first request to the upstream: %w", err)
	}
	for rep := range cfg.Repeats {
		// A fresh proxy per repeat: a run the machine could not sustain leaves a process with
		// more memory and a bigger heap to scan, which would weigh on the next repeat.
		err := runRepeat(ctx, cfg, pn, res, rep, upstream, direct)
		if err != nil {
			return res, err
		}
	}
	res.Summary = summarize(cfg, res.Pairs)
	res.OneCoreSummary = summarizeOneCore(res.OneCore)

	// Memory is measured on fresh processes: after a run the proxy keeps some of the memory its
	// busiest moment needed (the runtime returns it gradually), which would charge the lower
	// rates' figures with the highest rate's peak.
	builds := append([]Variant{{Name: "this build", Bin: cfg.ProxyBin}}, cfg.Variants...)
	for _, v := range builds {
		vr := measureVariant(ctx, cfg, pn, v, upstream)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		benchkit.Logf(cfg.Log, "build %s: idle VmRSS %s (anon %s); at %.0f req/s VmRSS %s (anon %s), CPU %.3f cores %s",
			v.Name, benchkit.MiB(vr.Idle.VmRSS), benchkit.MiB(vr.Idle.RssAnon), cfg.MemoryRate, benchkit.MiB(vr.Loaded.VmRSS), benchkit.MiB(vr.Loaded.RssAnon), vr.CPU, vr.Error)
		res.Builds = append(res.Builds, vr)
	}
	res.Finish()
	res.Goals = Goals(res)
	return res, nil
}

// The modes of a run: straight to the upstream, through the proxy, through HAProxy.
const (
	modeDirect  = "direct"
	modeProxy   = "continuum-proxy"
	modeHAProxy = "haproxy"
)

// runRepeat starts the proxy (and HAProxy) and runs every rate directly and through each.
func runRepeat(ctx context.Context, cfg Config, pn *pinning, res *Result, rep int, upstream string, direct *target) error {
	px, err := startProxy(ctx, cfg, pn, cfg.ProxyBin, upstream)
	if err != nil {
		return err
	}
	defer px.stop()
	res.Version = px.version
	proxied := newTarget(px.url, "echo", cfg)
	defer proxied.close()
	// The proxy's first request for a service probes its instances.
	if err := proxied.Do(ctx); err != nil {
		return fmt.Errorf("first request through the proxy: %w (proxy log: %s)", err, px.logTail())
	}
	if rep == 0 {
		if res.IdleMem, err = procstat.ReadMemory(px.pid()); err != nil {
			return err
		}
		benchkit.Logf(cfg.Log, "proxy %s pid %d idle: VmRSS %s, anon %s", px.version, px.pid(), benchkit.MiB(res.IdleMem.VmRSS), benchkit.MiB(res.IdleMem.RssAnon))
	}
	modes := []string{modeDirect, modeProxy}
	var hap *target
	var hpid int
	if cfg.HAProxyBin != "" {
		hp, err := startHAProxy(ctx, cfg, pn, upstream)
		if err != nil {
			return err
		}
		defer hp.stop()
		res.HAProxyVersion, hpid = hp.version, hp.pid()
		hap = newTarget(hp.url, "echo", cfg)
		defer hap.close()
		if err := hap.Do(ctx); err != nil {
			return fmt.Errorf("first request through HAProxy: %w (log: %s)", err, hp.logTail())
		}
		modes = append(modes, modeHAProxy)
	}
	for _, rate := range cfg.Rates {
		p := Pair{Rate: rate, Repeat: rep + 1}
		for _, i := range benchkit.Order(rep, len(modes)) {
			switch modes[i] {
			case modeProxy:
				lat, cpu, mem, err := measureProxied(ctx, cfg, loadAt(cfg, rate), proxied, px.pid())
				if err != nil {
					return err
				}
				p.Proxied, p.ProxyCPU, p.ProxyMem = lat, cpu, mem
			case modeHAProxy:
				lat, cpu, mem, err := measureProxied(ctx, cfg, loadAt(cfg, rate), hap, hpid)
				if err != nil {
					return err
				}
				p.HAProxy, p.HAProxyCPU, p.HAProxyMem = &lat, cpu, mem
			default:
				lat, err := runLoad(ctx, loadAt(cfg, rate), direct)
				if err != nil {
					return err
				}
				p.Direct = lat
			}
		}
		line := fmt.Sprintf("repeat %d, %5.0f req/s: direct p50 %.3f p99 %.3f ms (%.0f req/s) | proxy p50 %.3f p99 %.3f ms (%.0f req/s), CPU %.3f cores, VmRSS %s (anon %s)",
			p.Repeat, rate, p.Direct.P50, p.Direct.P99, p.Direct.ThroughputRPS, p.Proxied.P50, p.Proxied.P99, p.Proxied.ThroughputRPS, p.ProxyCPU,
			benchkit.MiB(p.ProxyMem.VmRSS), benchkit.MiB(p.ProxyMem.RssAnon))
		if p.HAProxy != nil {
			line += fmt.Sprintf(" | haproxy p50 %.3f p99 %.3f ms (%.0f req/s), CPU %.3f cores, anon %s",
				p.HAProxy.P50, p.HAProxy.P99, p.HAProxy.ThroughputRPS, p.HAProxyCPU, benchkit.MiB(p.HAProxyMem.RssAnon))
		}
		benchkit.Logf(cfg.Log, "%s", line)
		res.Pairs = append(res.Pairs, p)
	}
	if cfg.OneCoreClients == 0 {
		return nil
	}
	// Throughput on one core: closed loop, as fast as the clients go.
	lc := loadgen.DefaultConfig()
	lc.Rate, lc.Clients, lc.Duration, lc.Warmup, lc.Timeout = 0, cfg.OneCoreClients, cfg.Step, cfg.Warmup, cfg.Timeout
	for _, i := range benchkit.Order(rep, len(modes)) {
		oc := OneCore{Repeat: rep + 1, Mode: modes[i]}
		var err error
		switch modes[i] {
		case modeProxy:
			oc.Lat, oc.CPU, _, err = measureProxied(ctx, cfg, lc, proxied, px.pid())
		case modeHAProxy:
			oc.Lat, oc.CPU, _, err = measureProxied(ctx, cfg, lc, hap, hpid)
		default:
			oc.Lat, err = runLoad(ctx, lc, direct)
		}
		if err != nil {
			return err
		}
		benchkit.Logf(cfg.Log, "repeat %d, one core, %d clients, %s: %.0f req/s, p99 %.3f ms, CPU %.3f cores, errors %d",
			oc.Repeat, cfg.OneCoreClients, oc.Mode, oc.Lat.ThroughputRPS, oc.Lat.P99, oc.CPU, oc.Lat.Errors)
		res.OneCore = append(res.OneCore, oc)
	}
	return nil
}

// loadAt is the open-loop load of one run at rate.
func loadAt(cfg Config, rate float64) loadgen.Config {
	lc := loadgen.DefaultConfig()
	lc.Rate, lc.Duration, lc.Warmup, lc.Timeout = rate, cfg.Step, cfg.Warmup, cfg.Timeout
	// As many outstanding requests as each proxy admits (more are counted as errors).
	lc.MaxInflight = benchMaxConcurrent
	return lc
}

// measureVariant starts another build of the proxy and measures it at MemoryRate.
func measureVariant(ctx context.Context, cfg Config, pn *pinning, v Variant, upstream string) VariantResult {
	vr := VariantResult{Name: v.Name, Bin: v.Bin, Size: fileSize(v.Bin)}
	px, err := startProxy(ctx, cfg, pn, v.Bin, upstream)
	if err != nil {
		vr.Error = err.Error()
		return vr
	}
	defer px.stop()
	t := newTarget(px.url, "echo", cfg)
	defer t.close()
	if err := t.Do(ctx); err != nil {
		vr.Error = err.Error()
		return vr
	}
	if vr.Idle, err = procstat.ReadMemory(px.pid()); err != nil {
		vr.Error = err.Error()
		return vr
	}
	lat, cpu, mem, err := measureProxied(ctx, cfg, loadAt(cfg, cfg.MemoryRate), t, px.pid())
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
func measureProxied(ctx context.Context, cfg Config, lc loadgen.Config, t *target, pid int) (Latency, float64, procstat.Memory, error) {
	cpu0, err := procstat.ThreadCPUSeconds(pid) // ns resolution: short steps of a few ms of CPU read 0 ticks
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
	lat, err := runLoad(ctx, lc, t)
	close(stop)
	mem := <-memc
	if err != nil {
		return lat, 0, mem, err
	}
	cpu1, err := procstat.ThreadCPUSeconds(pid)
	if err != nil {
		return lat, 0, mem, fmt.Errorf("proxy process: %w", err)
	}
	return lat, (cpu1 - cpu0) / time.Since(t0).Seconds(), mem, nil
}

func runLoad(ctx context.Context, lc loadgen.Config, t *target) (Latency, error) {
	s, err := loadgen.RunOne(ctx, lc, t)
	if err != nil {
		return Latency{}, err
	}
	return Latency{P50: s.Latency.P50, P90: s.Latency.P90, P99: s.Latency.P99, P999: s.Latency.P999, Max: s.Latency.Max,
		ThroughputRPS: s.ThroughputRPS, Errors: s.Errors, ErrorsByType: s.ErrorsByType}, nil
}
