package proxybench

import (
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// The proxy's goals (docs/proxy.md, issue 28).
const (
	GoalAddedP99Ms = 0.5      // p99 added latency at 1000 req/s
	GoalRSSBytes   = 10 << 20 // RssAnon at 1000 req/s (10 MiB)
	GoalRate       = 1000
	// GoalCPURate2 is the second rate (after GoalRate) at which the proxy's CPU per request must
	// not exceed HAProxy's.
	GoalCPURate2 = 10000
)

// Goals judges the result against the proxy's goals: CPU per request against HAProxy's at
// 1000 and 10000 req/s, throughput on one core against HAProxy's, the p99 the proxy adds at
// GoalRate (on the larger of the two estimates), and each build's RssAnon at MemoryRate.
func Goals(res *Result) []benchkit.Goal {
	cfg := res.Config
	var goals []benchkit.Goal
	for _, rate := range []float64{GoalRate, GoalCPURate2} {
		what := fmt.Sprintf("CPU per request <= HAProxy's at %.0f req/s (one thread each)", rate)
		s, ok := summaryAt(res, rate)
		switch {
		case !ok:
			goals = append(goals, benchkit.Skip(what, "rate not measured"))
		case !s.HAProxy:
			goals = append(goals, benchkit.Skip(what, "HAProxy not measured: "+cfg.HAProxyMissing))
		default:
			g := benchkit.Check(what, s.CPURatio <= 1,
				fmt.Sprintf("%.3f vs %.3f cores per 1000 req/s, ratio %.2f", s.CPUPer1000RPS, s.HAProxyCPUPer1000RPS, s.CPURatio))
			switch {
			case s.CPUFrom != "":
				g.Note = "CPU from " + s.CPUFrom
			case s.Short != "":
				g.Note = "achieved less than the rate: " + s.Short + "; CPU is per request achieved"
			}
			goals = append(goals, g)
		}
	}
	goals = append(goals, oneCoreGoal(res))
	what := fmt.Sprintf("p99 added <= %.1f ms at %d req/s", GoalAddedP99Ms, GoalRate)
	if s, ok := summaryAt(res, GoalRate); ok {
		worst := max(s.AddedP99, s.MedianDiffP99)
		goals = append(goals, benchkit.Check(what, worst <= GoalAddedP99Ms,
			fmt.Sprintf("%+.3f ms (median of %d per-repeat differences%s), %+.3f ms (difference of the medians)",
				s.AddedP99, cfg.Repeats, spreadNote(s.AddedP99Spread), s.MedianDiffP99)))
	} else {
		goals = append(goals, benchkit.Skip(what, "rate not measured"))
	}
	for _, v := range res.Builds {
		if v.Error != "" {
			continue
		}
		goals = append(goals, benchkit.Check(fmt.Sprintf("RssAnon <= %s at %.0f req/s (%s)", benchkit.MiB(int64(GoalRSSBytes)), cfg.MemoryRate, v.Name),
			v.Loaded.RssAnon <= GoalRSSBytes,
			fmt.Sprintf("%s (VmRSS %s, of which file %s)", benchkit.MiB(v.Loaded.RssAnon), benchkit.MiB(v.Loaded.VmRSS), benchkit.MiB(v.Loaded.RssFile))))
	}
	return goals
}

// oneCoreGoal judges the throughput on one core. It is decided only when a proxy used (nearly)
// all of its core: otherwise the load generator was the limit and both got what it sent.
func oneCoreGoal(res *Result) benchkit.Goal {
	what := "throughput on one core >= HAProxy's"
	var ours, theirs *OneCoreSummary
	for i := range res.OneCoreSummary {
		switch res.OneCoreSummary[i].Mode {
		case modeProxy:
			ours = &res.OneCoreSummary[i]
		case modeHAProxy:
			theirs = &res.OneCoreSummary[i]
		}
	}
	switch {
	case ours == nil:
		return benchkit.Skip(what, "no one-core runs (--one-core-clients 0)")
	case theirs == nil:
		return benchkit.Skip(what, "HAProxy not measured: "+res.Config.HAProxyMissing)
	}
	// A proxy's capacity on one core is its rate when it saturated the core; otherwise the load
	// generator was the limit and its req/s per core is the estimate.
	capacity := func(o *OneCoreSummary) float64 {
		if o.Saturated {
			return o.RPS
		}
		return o.RPSPerCore
	}
	measured := fmt.Sprintf("%.0f vs %.0f req/s (%.2f vs %.2f cores; %.0f vs %.0f req/s per core)",
		ours.RPS, theirs.RPS, ours.CPU, theirs.CPU, ours.RPSPerCore, theirs.RPSPerCore)
	g := benchkit.Check(what, capacity(ours) >= 0.98*capacity(theirs), measured)
	switch {
	case !ours.Saturated && !theirs.Saturated:
		g.Verdict, g.Note = benchkit.Undetermined, "neither used 90% of its core: the load generator was the limit; req/s per core compares them"
	case !theirs.Saturated:
		g.Note = "HAProxy did not saturate its core (the load generator was the limit): its capacity is taken as its req/s per core"
	case !ours.Saturated:
		g.Note = "the proxy did not saturate its core (the load generator was the limit): its capacity is taken as its req/s per core"
	}
	return g
}

func spreadNote(s benchkit.Spread) string {
	if s.N < 2 {
		return ""
	}
	return fmt.Sprintf(", from %+.3f to %+.3f", s.Min, s.Max)
}

// Markdown renders the benchmark for docs/benchmarks/proxy.md: the kit's header, the method,
// tables, the verdict against the goals and the raw JSON.
func Markdown(res *Result) string {
	cfg := res.Config
	d := benchkit.NewDoc("continuum proxy: overhead", res.Header)
	gmp := "the Go runtime's default GOMAXPROCS (one per CPU)"
	if cfg.ProxyGOMAXPROCS > 0 {
		gmp = fmt.Sprintf("GOMAXPROCS=%d", cfg.ProxyGOMAXPROCS)
	}
	hap := "HAProxy: not measured (" + cfg.HAProxyMissing + ")"
	if cfg.HAProxyBin != "" {
		hap = fmt.Sprintf("HAProxy: `%s` (%s), a child process in the foreground (-db), `nbthread 1`, `maxconn %d`, `option http-keep-alive`, `http-reuse always`, `option forwardfor`, one server: the same upstream; its configuration is written by the benchmark (`haproxyConfig` in internal/proxy/proxybench/process.go)", cfg.HAProxyBin, res.HAProxyVersion, benchMaxConcurrent)
	}
	where := "not pinned: the proxy under test, the load generator and the upstream share the machine's CPUs"
	if res.ProxyCPU >= 0 {
		where = fmt.Sprintf("pinned: the proxy under test (continuum-proxy or HAProxy, one at a time under load) alone on CPU %d (taskset), the load generator and the upstream on CPU(s) %v", res.ProxyCPU, res.BenchCPUs)
	}
	d.List(
		fmt.Sprintf("Proxy: `%s` (%s), a child process with %s; strategy qos (p95 <= 80 ms), one instance, discovery from a file, `max_inflight: %d` (HAProxy's `maxconn`)", cfg.ProxyBin, res.Version, gmp, benchMaxConcurrent),
		hap,
		"Upstream: internal/httpecho (no delay, short body) on loopback, in the benchmark's process; the load generator (internal/loadgen, open loop, latency from the intended send time, HdrHistogram, keep-alive connections) runs there too",
		"CPUs: "+where,
		fmt.Sprintf("Each rate runs directly against the upstream, through the proxy and through HAProxy, %v per run (first %v left out), %d repeat(s) (fresh proxy processes each) with the order rotating; figures are medians over the repeats, *added* is the median of the per-repeat differences proxied - direct (their range in parentheses), *ratio* is proxied / direct of the medians. A rate the machine cannot sustain shows as an achieved rate below it, errors (timeouts after 2 s) and seconds of latency; it is never reported as reached",
			cfg.Step, cfg.Warmup, cfg.Repeats),
		"Memory: VmRSS from /proc/PID/status, split into RssAnon (the process's own memory) and RssFile (pages of the mapped executable, shared page cache), highest sample of each run (every 200 ms); CPU: the time on CPU of the process's threads over the run (/proc/PID/task/*/schedstat, nanoseconds), the same for both proxies",
	)
	var short []string
	for _, s := range res.Summary {
		if s.Short != "" {
			short = append(short, fmt.Sprintf("at %.0f req/s: %s", s.Rate, s.Short))
		}
	}
	if len(short) > 0 {
		d.Para("**The load generator could not drive every rate on this machine**: %s. Those rows are what was achieved, and CPU per request is per request achieved.", strings.Join(short, "; "))
	}

	if len(res.Summary) > 0 && res.Summary[0].HAProxy {
		d.Section("Against HAProxy: CPU per request, added latency, memory")
		d.Para("Both measured the same way in the same repeats. *ratio* is the proxy's CPU per request over HAProxy's (<= 1 meets the goal); when some repeats collapsed (the load generator fell behind, see *achieved*), the CPU figures come from the repeats where both proxies sustained the rate.")
		t := benchkit.NewTable("rrrrrrrrrr", "rate (req/s)", "achieved direct / proxy / HAProxy", "proxy cores per 1000 req/s", "HAProxy cores per 1000 req/s", "ratio",
			"proxy added p50 / p99", "HAProxy added p50 / p99", "proxy RssAnon", "HAProxy RssAnon", "errors")
		for _, s := range res.Summary {
			t.Row(fmt.Sprintf("%.0f", s.Rate), fmt.Sprintf("%.0f / %.0f / %.0f", s.DirectRPS, s.ProxiedRPS, s.HAProxyRPS),
				fmt.Sprintf("%.3f", s.CPUPer1000RPS), fmt.Sprintf("%.3f", s.HAProxyCPUPer1000RPS), fmt.Sprintf("%.2f", s.CPURatio),
				fmt.Sprintf("%+.3f / %+.3f ms", s.AddedP50, s.AddedP99), fmt.Sprintf("%+.3f / %+.3f ms", s.HAProxyAddedP50, s.HAProxyAddedP99),
				benchkit.MiB(s.ProxyMem.RssAnon), benchkit.MiB(s.HAProxyMem.RssAnon), fmt.Sprintf("%d", s.Errors))
		}
		d.Table(t)
	}
	if len(res.OneCoreSummary) > 0 {
		d.Section("Throughput on one core")
		d.Para("A closed loop of %d clients (keep-alive) for %v (first %v left out), as fast as answers come, each proxy alone on its CPU; medians over the repeats. A proxy that used less than 90%% of its core was not the limit (the load generator on the other CPU was): then *req/s per core* (req/s over the cores used) is the figure that compares them.",
			cfg.OneCoreClients, cfg.Step, cfg.Warmup)
		t := benchkit.NewTable("lrrrrrl", "path", "req/s", "proxy CPU (cores)", "req/s per core", "p99", "errors", "limit")
		for _, s := range res.OneCoreSummary {
			limit := "load generator"
			if s.Saturated {
				limit = "the proxy's core"
			}
			cpu, per := "", ""
			if s.Mode != modeDirect {
				cpu, per = fmt.Sprintf("%.2f", s.CPU), fmt.Sprintf("%.0f", s.RPSPerCore)
			} else {
				limit = "load generator and upstream"
			}
			t.Row(s.Mode, fmt.Sprintf("%.0f", s.RPS), cpu, per, fmt.Sprintf("%.3f ms", s.P99), fmt.Sprintf("%d", s.Errors), limit)
		}
		d.Table(t)
	}

	d.Section("Added latency")
	d.Para("*added* is the median of the per-repeat differences; *diff* the difference of the medians. Both estimate the same thing; when they disagree, the machine's noise is larger than the proxy's cost.")
	t := benchkit.NewTable("rrrrrrrrrrrr", "rate (req/s)", "direct p50", "proxied p50", "added p50", "diff p50", "ratio p50",
		"direct p99", "proxied p99", "added p99", "diff p99", "ratio p99", "errors")
	for _, s := range res.Summary {
		t.Row(fmt.Sprintf("%.0f", s.Rate), fmt.Sprintf("%.3f ms", s.DirectP50), fmt.Sprintf("%.3f ms", s.ProxiedP50),
			fmt.Sprintf("%+.3f ms", s.AddedP50)+s.AddedP50Spread.Range("%+.3f"), fmt.Sprintf("%+.3f ms", s.MedianDiffP50), fmt.Sprintf("%.2f", s.RatioP50),
			fmt.Sprintf("%.3f ms", s.DirectP99), fmt.Sprintf("%.3f ms", s.ProxiedP99),
			fmt.Sprintf("%+.3f ms", s.AddedP99)+s.AddedP99Spread.Range("%+.3f"), fmt.Sprintf("%+.3f ms", s.MedianDiffP99), fmt.Sprintf("%.2f", s.RatioP99),
			fmt.Sprintf("%d", s.Errors))
	}
	d.Table(t)

	d.Section("Proxy process: CPU and memory")
	d.Para("Idle (after start-up and one request): VmRSS %s (anon %s, file %s).", benchkit.MiB(res.IdleMem.VmRSS), benchkit.MiB(res.IdleMem.RssAnon), benchkit.MiB(res.IdleMem.RssFile))
	d.Para("A fresh proxy process serves each repeat, its rates in ascending order, so a run's memory includes what the slower runs before it left (the Go runtime returns memory to the system gradually); the goal is judged on the fresh-process figures of the next section.")
	t = benchkit.NewTable("rrrrr", "rate (req/s)", "CPU (cores) per 1000 req/s", "peak VmRSS", "RssAnon", "RssFile")
	for _, s := range res.Summary {
		t.Row(fmt.Sprintf("%.0f", s.Rate), fmt.Sprintf("%.3f", s.CPUPer1000RPS), benchkit.MiB(s.ProxyMem.VmRSS), benchkit.MiB(s.ProxyMem.RssAnon), benchkit.MiB(s.ProxyMem.RssFile))
	}
	d.Table(t)

	if len(res.Builds) > 0 {
		d.Section(fmt.Sprintf("Memory by build (at %.0f req/s)", cfg.MemoryRate))
		d.Para("Each build is started afresh, gets one request, and runs %v at %.0f req/s; the figures are the highest samples. Which discovery sources a binary links decides most of its resident memory: the mapped pages of the executable (RssFile) grow with the code linked in.", cfg.Step, cfg.MemoryRate)
		t = benchkit.NewTable("lrrrrrrr", "build", "binary size", "idle VmRSS (anon)", fmt.Sprintf("VmRSS at %.0f req/s", cfg.MemoryRate), "RssAnon", "RssFile", "CPU (cores)", "proxied p99")
		for _, v := range res.Builds {
			name := fmt.Sprintf("%s (`%s`)", v.Name, v.Bin)
			if v.Error != "" {
				t.Row(name, benchkit.MiB(v.Size), "not measured: "+benchkit.OneLine(v.Error, 200))
				continue
			}
			t.Row(name, benchkit.MiB(v.Size), fmt.Sprintf("%s (%s)", benchkit.MiB(v.Idle.VmRSS), benchkit.MiB(v.Idle.RssAnon)),
				benchkit.MiB(v.Loaded.VmRSS), benchkit.MiB(v.Loaded.RssAnon), benchkit.MiB(v.Loaded.RssFile), fmt.Sprintf("%.3f", v.CPU), fmt.Sprintf("%.3f ms", v.P99))
		}
		d.Table(t)
	}

	d.Goals("Against the goals", Goals(res))

	d.Section("Every run")
	t = benchkit.NewTable("rrlllrrrr", "repeat", "rate", "direct p50 / p99 / p99.9 ms", "proxied p50 / p99 / p99.9 ms", "HAProxy p50 / p99 / p99.9 ms", "proxy CPU (cores)", "HAProxy CPU", "proxy VmRSS", "anon")
	for _, x := range res.Pairs {
		hp, hcpu := "", ""
		if x.HAProxy != nil {
			hp, hcpu = fmt.Sprintf("%.3f / %.3f / %.3f", x.HAProxy.P50, x.HAProxy.P99, x.HAProxy.P999), fmt.Sprintf("%.3f", x.HAProxyCPU)
		}
		t.Row(fmt.Sprintf("%d", x.Repeat), fmt.Sprintf("%.0f", x.Rate),
			fmt.Sprintf("%.3f / %.3f / %.3f", x.Direct.P50, x.Direct.P99, x.Direct.P999),
			fmt.Sprintf("%.3f / %.3f / %.3f", x.Proxied.P50, x.Proxied.P99, x.Proxied.P999), hp,
			fmt.Sprintf("%.3f", x.ProxyCPU), hcpu, benchkit.MiB(x.ProxyMem.VmRSS), benchkit.MiB(x.ProxyMem.RssAnon))
	}
	d.Table(t)
	d.RawJSON(res)
	return d.String()
}

func summaryAt(res *Result, rate float64) (Summary, bool) {
	for _, s := range res.Summary {
		if s.Rate == rate {
			return s, true
		}
	}
	return Summary{}, false
}
