// Package faasbench is `continuum bench faas`: what the function platform adds to a request and
// what one instance sustains, measured side by side in one run on loopback.
//
//   - Overhead: the same Python upstream (the hello handler in Continuum's server) called
//     directly, through its watchdog (http mode) and through the gateway and the watchdog, open
//     loop at each rate, the three paths alternating, several repeats; the added latency is the
//     median over repeats of (path p50/p99 - direct p50/p99).
//   - Throughput: closed loop with several clients against one instance of the handler in
//     Continuum's server and in Flask + Waitress (one thread, OpenFaaS' python3-http template),
//     directly and through the watchdog.
//   - Scale step: how soon the concurrency autoscaler asks for, and gets, a second instance
//     after load arrives at once.
//
// It also holds `continuum bench coldstart` (coldstart.go): a function's first request at zero
// instances, with a fresh interpreter and with a zygote. Both render through internal/benchkit.
package faasbench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/httptarget"
)

// Config is one benchmark.
type Config struct {
	Python  faas.Python
	Handler string // function folder (absolute)
	Rates   []float64
	Step    time.Duration // per path, rate and repeat
	Warmup  time.Duration
	Repeats int
	// Clients and ThroughputStep drive the closed-loop throughput runs.
	Clients        int
	ThroughputStep time.Duration
	// Binary, if set, is the continuum binary: the gateway's own throughput is measured with
	// it running as a separate process on one core (GOMAXPROCS=1) in front of a trivial Go
	// upstream, GatewayClients closed-loop clients.
	Binary         string
	GatewayClients int
	// Command is the command line that regenerates the result, for its header.
	Command string
}

// DefaultConfig is 100 and 1000 requests/s, 10 s steps, 3 repeats, 8 clients.
func DefaultConfig() Config {
	return Config{Rates: []float64{100, 1000}, Step: 10 * time.Second, Warmup: 2 * time.Second, Repeats: 3,
		Clients: 8, ThroughputStep: 10 * time.Second, GatewayClients: 64}
}

// Latency is one measured step.
type Latency struct {
	P50, P99, Max float64 // ms
	RPS           float64
	Errors        int64
}

// Overhead is the summary of one rate.
type Overhead struct {
	Rate                   float64
	Direct, Watchdog, Gate Latency // medians over repeats
	// Added latency over direct, medians over repeats of the per-repeat differences.
	WatchdogAddedP50, WatchdogAddedP99 float64
	GatewayAddedP50, GatewayAddedP99   float64
	// GatewayAddedP99Spread is the spread of the per-repeat differences the goal is judged on.
	GatewayAddedP99Spread benchkit.Spread
	Errors                int64
}

// Throughput is one closed-loop run: requests/s one instance sustained.
type Throughput struct {
	Server, Path string // continuum or flask; direct or watchdog
	RPS          float64
	P50, P99     float64
	Errors       int64
}

// ScaleStep is how fast the concurrency autoscaler (Knative KPA defaults: 60 s stable, 6 s
// panic window) reacts to a load step from idle to Clients requests always under way: the
// time until it asks for more instances, and until the first new one answers, per repeat.
type ScaleStep struct {
	DecisionS, ReadyS []float64
	Errors            int64
}

// GatewayCore is the gateway process's throughput on one core to a trivial upstream, per
// repeat, and the CPU it used (cores).
type GatewayCore struct {
	// PinnedCPU is the CPU the gateway ran on (the load generator and upstream on another);
	// -1 when not pinned (one CPU, or no taskset).
	PinnedCPU  int
	RPS, Cores []float64
	P50, P99   []float64
	Errors     int64
}

// Result is the whole benchmark.
type Result struct {
	benchkit.Header
	Config     Config
	Overhead   []Overhead
	Throughput []Throughput
	Scale      ScaleStep
	Gateway    *GatewayCore
	Goals      []benchkit.Goal
}

// Run measures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg}
	// One watchdog (http mode) with its upstream, and a gateway whose one instance it is.
	wc, err := faas.WatchdogFor(cfg.Python, faas.Instance{Mode: faas.ModeHTTP, Handler: cfg.Handler, Server: faas.ServerContinuum})
	if err != nil {
		return nil, err
	}
	wc.Listen = "127.0.0.1:0"
	wdURL, stopWD, err := serveWatchdog(ctx, wc)
	if err != nil {
		return nil, err
	}
	defer stopWD()
	gw, err := gateway.New(ctx, gateway.Config{Provider: static{url: wdURL},
		Functions: []*gateway.Function{{Name: "f", Handler: cfg.Handler, Mode: faas.ModeHTTP, Replicas: 1}}})
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	gwURL, stopGW, err := serve(gw.Handler())
	if err != nil {
		return nil, err
	}
	defer stopGW()
	paths := []string{"http://" + wc.UpstreamAddr + "/", wdURL + "/", gwURL + "/function/f"}
	for _, rate := range cfg.Rates {
		var runs [3][]Latency
		for rep := 0; rep < cfg.Repeats; rep++ {
			for _, i := range benchkit.Order(rep, 3) { // each path goes first in turn
				l, err := openLoop(ctx, paths[i], rate, cfg)
				if err != nil {
					return nil, err
				}
				runs[i] = append(runs[i], l)
			}
		}
		res.Overhead = append(res.Overhead, summarize(rate, runs))
	}
	for rep := 0; rep < cfg.Repeats; rep++ {
		d, r, errs, err := scaleStep(ctx, cfg)
		if err != nil {
			return nil, err
		}
		res.Scale.DecisionS, res.Scale.ReadyS = append(res.Scale.DecisionS, d), append(res.Scale.ReadyS, r)
		res.Scale.Errors += errs
	}
	if cfg.Binary != "" {
		gc, err := gatewayCore(ctx, cfg)
		if err != nil {
			return nil, err
		}
		res.Gateway = gc
	}
	// Throughput of one instance, Continuum's server vs Flask + Waitress, direct and behind the
	// watchdog.
	for _, server := range []string{faas.ServerContinuum, faas.ServerFlask} {
		wc, err := faas.WatchdogFor(cfg.Python, faas.Instance{Mode: faas.ModeHTTP, Handler: cfg.Handler, Server: server})
		if err != nil {
			return nil, err
		}
		wc.Listen = "127.0.0.1:0"
		url, stop, err := serveWatchdog(ctx, wc)
		if err != nil {
			return nil, err
		}
		for _, p := range []struct{ name, url string }{{"direct", "http://" + wc.UpstreamAddr + "/"}, {"watchdog", url + "/"}} {
			l, err := closedLoop(ctx, p.url, cfg)
			if err != nil {
				stop()
				return nil, err
			}
			res.Throughput = append(res.Throughput, Throughput{Server: server, Path: p.name, RPS: l.RPS, P50: l.P50, P99: l.P99, Errors: l.Errors})
		}
		stop()
	}
	res.Finish()
	res.Goals = Goals(res)
	return res, nil
}

// scaleStep starts a gateway (one instance, concurrency scaler at its defaults), puts
// cfg.Clients closed-loop clients on it at once and times the scale-out.
func scaleStep(ctx context.Context, cfg Config) (decision, ready float64, errs int64, err error) {
	g, err := gateway.New(ctx, gateway.Config{Provider: &gateway.LocalProvider{Python: cfg.Python},
		Functions: []*gateway.Function{{Name: "f", Handler: cfg.Handler, Mode: faas.ModeHTTP, Server: faas.ServerContinuum,
			Scaler: gateway.ScalerConcurrency, MinReplicas: 1, MaxReplicas: 4}}})
	if err != nil {
		return 0, 0, 0, err
	}
	defer g.Close()
	url, stop, err := serve(g.Handler())
	if err != nil {
		return 0, 0, 0, err
	}
	defer stop()
	t, err := target(url + "/function/f")
	if err != nil {
		return 0, 0, 0, err
	}
	lctx, cancel := context.WithCancel(ctx)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				if err := t.Do(lctx); err != nil && lctx.Err() == nil {
					failed.Add(1)
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait(); errs = failed.Load() }()
	deadline := start.Add(time.Minute)
	for time.Now().Before(deadline) {
		s := g.Status()[0]
		if decision == 0 && s.Replicas > 1 {
			decision = time.Since(start).Seconds()
		}
		if s.AvailableReplicas > 1 {
			return decision, time.Since(start).Seconds(), 0, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, 0, 0, fmt.Errorf("no scale-out within a minute of the load step")
}

// static is a gateway provider whose one instance already runs at url.
type static struct{ url string }

func (s static) Start(context.Context, *gateway.Function, string) (gateway.Instance, error) {
	return gateway.Instance{ID: "static", URL: s.url}, nil
}
func (static) Stop(context.Context, gateway.Instance) error { return nil }

func serveWatchdog(ctx context.Context, cfg watchdog.Config) (string, func(), error) {
	w, err := watchdog.New(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	url, stop, err := serve(w.Handler())
	if err != nil {
		w.Close()
		return "", nil, err
	}
	return url, func() { stop(); w.Close() }, nil
}

func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

func target(url string) (*httptarget.Target, error) {
	return httptarget.NewTarget(http.MethodPost, url, []byte("bench"), 5*time.Second, 64)
}

func openLoop(ctx context.Context, url string, rate float64, cfg Config) (Latency, error) {
	t, err := target(url)
	if err != nil {
		return Latency{}, err
	}
	lc := loadgen.DefaultConfig()
	lc.Rate, lc.Duration, lc.Warmup, lc.Timeout = rate, cfg.Step, cfg.Warmup, 5*time.Second
	return measure(ctx, lc, t)
}

func closedLoop(ctx context.Context, url string, cfg Config) (Latency, error) {
	t, err := target(url)
	if err != nil {
		return Latency{}, err
	}
	lc := loadgen.DefaultConfig()
	lc.Rate, lc.Clients, lc.Duration, lc.Warmup, lc.Timeout = 0, cfg.Clients, cfg.ThroughputStep, cfg.Warmup, 5*time.Second
	return measure(ctx, lc, t)
}

func measure(ctx context.Context, lc loadgen.Config, t loadgen.Target) (Latency, error) {
	s, err := loadgen.RunOne(ctx, lc, t)
	if err != nil {
		return Latency{}, err
	}
	return Latency{P50: s.Latency.P50, P99: s.Latency.P99, Max: s.Latency.Max, RPS: s.ThroughputRPS, Errors: s.Errors}, nil
}

func summarize(rate float64, runs [3][]Latency) Overhead {
	o := Overhead{Rate: rate}
	pick := func(ls []Latency, f func(Latency) float64) float64 {
		var v []float64
		for _, l := range ls {
			v = append(v, f(l))
		}
		return benchkit.Median(v)
	}
	med := func(ls []Latency) Latency {
		return Latency{P50: pick(ls, func(l Latency) float64 { return l.P50 }), P99: pick(ls, func(l Latency) float64 { return l.P99 }),
			Max: pick(ls, func(l Latency) float64 { return l.Max }), RPS: pick(ls, func(l Latency) float64 { return l.RPS })}
	}
	o.Direct, o.Watchdog, o.Gate = med(runs[0]), med(runs[1]), med(runs[2])
	var w50, w99, g50, g99 []float64
	for i := range runs[0] {
		w50, w99 = append(w50, runs[1][i].P50-runs[0][i].P50), append(w99, runs[1][i].P99-runs[0][i].P99)
		g50, g99 = append(g50, runs[2][i].P50-runs[0][i].P50), append(g99, runs[2][i].P99-runs[0][i].P99)
		o.Errors += runs[0][i].Errors + runs[1][i].Errors + runs[2][i].Errors
	}
	o.WatchdogAddedP50, o.WatchdogAddedP99 = benchkit.Median(w50), benchkit.Median(w99)
	o.GatewayAddedP50, o.GatewayAddedP99 = benchkit.Median(g50), benchkit.Median(g99)
	o.GatewayAddedP99Spread = benchkit.Summarize(g99)
	return o
}

func joinS(v []float64) string { return joinF(v, "%.2f") }

func joinF(v []float64, format string) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf(format, x))
	}
	return strings.Join(parts, ", ")
}

// The goals.
const (
	goalAddedP99Ms    = 1.0   // added p99 through gateway + watchdog at goalRate
	goalRate          = 1000  // req/s
	goalDecisionS     = 2.0   // scale-out decision after a load step
	goalGatewayOneCPU = 20000 // req/s through the gateway on one core
)

// Goals judges the result against the goals: the p99 gateway + watchdog add at 1000
// req/s, the scale-out decision's delay, the gateway's throughput on one core.
func Goals(r *Result) []benchkit.Goal {
	var gs []benchkit.Goal
	added := fmt.Sprintf("p99 added by gateway + watchdog <= %.0f ms at %d req/s", goalAddedP99Ms, goalRate)
	var at *Overhead
	for i := range r.Overhead {
		if r.Overhead[i].Rate == goalRate {
			at = &r.Overhead[i]
		}
	}
	if at == nil {
		gs = append(gs, benchkit.Skip(added, fmt.Sprintf("%d req/s not measured", goalRate)))
	} else {
		gs = append(gs, benchkit.Check(added, at.GatewayAddedP99 <= goalAddedP99Ms,
			fmt.Sprintf("%+.3f ms (median of %d per-repeat differences%s)", at.GatewayAddedP99, at.GatewayAddedP99Spread.N, at.GatewayAddedP99Spread.Range("%+.3f"))))
	}
	decision := fmt.Sprintf("scale-out decision within %.0f s of a load step", goalDecisionS)
	if d := benchkit.Summarize(r.Scale.DecisionS); d.N == 0 {
		gs = append(gs, benchkit.Skip(decision, "no scale step measured"))
	} else {
		gs = append(gs, benchkit.Check(decision, d.Median <= goalDecisionS, d.Format("%.2f")+" s (median of the repeats)"))
	}
	core := fmt.Sprintf("gateway >= %d req/s on one core", goalGatewayOneCPU)
	if r.Gateway == nil || len(r.Gateway.RPS) == 0 {
		gs = append(gs, benchkit.Skip(core, "not measured (no continuum binary)"))
	} else {
		rps := benchkit.Summarize(r.Gateway.RPS)
		gs = append(gs, benchkit.Check(core, rps.Median >= goalGatewayOneCPU, rps.Format("%.0f")+" req/s (median of the repeats)"))
	}
	return gs
}

// Markdown renders the result for docs/benchmarks/faas-overhead.md.
func Markdown(r *Result) string {
	cfg := r.Config
	d := benchkit.NewDoc("Function platform overhead", r.Header)
	d.List("Handler: " + filepath.Base(cfg.Handler) + " (a function folder of python/functions)")
	d.Section(fmt.Sprintf("Latency added (open loop, %v per step, %d repeats, paths alternating)", cfg.Step, cfg.Repeats))
	t := benchkit.NewTable("rlllllr", "rate (req/s)", "direct p50 / p99", "watchdog p50 / p99", "gateway + watchdog p50 / p99",
		"added by the watchdog p50 / p99", "added by gateway + watchdog p50 / p99", "errors")
	for _, o := range r.Overhead {
		t.Rowf("%g | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %+.3f / %+.3f | %+.3f / %+.3f | %d", o.Rate,
			o.Direct.P50, o.Direct.P99, o.Watchdog.P50, o.Watchdog.P99, o.Gate.P50, o.Gate.P99,
			o.WatchdogAddedP50, o.WatchdogAddedP99, o.GatewayAddedP50, o.GatewayAddedP99, o.Errors)
	}
	d.Table(t)
	d.Section(fmt.Sprintf("Scale-out after a load step (concurrency autoscaler, Knative defaults: 60 s stable, 6 s panic window; %d repeats)", cfg.Repeats))
	d.Para("From idle to %d clients always waiting on one instance of the handler: the time until the gateway asks for more instances (the decision; the issue's goal: within 2 s) and until the first new instance answers. Median (all runs): decision %.2f s (%s), first new instance ready %.2f s (%s); %d failed requests.",
		cfg.Clients, benchkit.Median(r.Scale.DecisionS), joinS(r.Scale.DecisionS), benchkit.Median(r.Scale.ReadyS), joinS(r.Scale.ReadyS), r.Scale.Errors)
	if g := r.Gateway; g != nil {
		d.Section(fmt.Sprintf("The gateway on one core (GOMAXPROCS=1), to a trivial Go upstream (closed loop, %d clients, %v, %d repeats)", cfg.GatewayClients, cfg.ThroughputStep, cfg.Repeats))
		if g.PinnedCPU >= 0 {
			d.Para("The gateway pinned to CPU %d, the load generator and the upstream to another.", g.PinnedCPU)
		} else {
			d.Para("Not pinned (fewer than two CPUs, or no taskset): the gateway shared the CPUs with the load generator and the upstream.")
		}
		d.Para("Median %.0f req/s (%s) using %.2f cores (%s); p50 %.3f ms, p99 %.3f ms; %d errors. The issue's goal: >= 20 000 req/s on one core.",
			benchkit.Median(g.RPS), joinF(g.RPS, "%.0f"), benchkit.Median(g.Cores), joinF(g.Cores, "%.2f"), benchkit.Median(g.P50), benchkit.Median(g.P99), g.Errors)
	}
	d.Section(fmt.Sprintf("One instance's throughput (closed loop, %d clients, %v)", cfg.Clients, cfg.ThroughputStep))
	t = benchkit.NewTable("llrrrr", "upstream server", "path", "req/s", "p50 (ms)", "p99 (ms)", "errors")
	for _, tp := range r.Throughput {
		t.Rowf("%s | %s | %.0f | %.3f | %.3f | %d", tp.Server, tp.Path, tp.RPS, tp.P50, tp.P99, tp.Errors)
	}
	d.Table(t)
	gs := r.Goals
	if gs == nil {
		gs = Goals(r)
	}
	d.Goals("Against the goals", gs)
	return d.String()
}
