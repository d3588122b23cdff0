package proxybench

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// The proxy's goals (docs/proxy.md).
const (
	GoalAddedP99Ms = 0.5      // p99 added latency at 1000 req/s
	GoalRSSBytes   = 10 << 20 // resident memory at 1000 req/s (10 MiB)
	GoalRate       = 1000
)

// Goals judges the result against the proxy's goals: the p99 the proxy adds at GoalRate (on the
// larger of the two estimates), and each build's resident memory at MemoryRate.
func Goals(res *Result) []benchkit.Goal {
	cfg := res.Config
	what := fmt.Sprintf("p99 added <= %.1f ms at %d req/s", GoalAddedP99Ms, GoalRate)
	var goals []benchkit.Goal
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
		goals = append(goals, benchkit.Check(fmt.Sprintf("VmRSS <= %s at %.0f req/s (%s)", benchkit.MiB(int64(GoalRSSBytes)), cfg.MemoryRate, v.Name),
			v.Loaded.VmRSS <= GoalRSSBytes,
			fmt.Sprintf("%s (anon %s, file %s)", benchkit.MiB(v.Loaded.VmRSS), benchkit.MiB(v.Loaded.RssAnon), benchkit.MiB(v.Loaded.RssFile))))
	}
	return goals
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
	d.List(
		fmt.Sprintf("Proxy: `%s` (%s), a child process; strategy qos (p95 <= 80 ms), one instance, discovery from a file", cfg.ProxyBin, res.Version),
		"Upstream: internal/httpecho (no delay, short body) on loopback, in the benchmark's process; the load generator (internal/loadgen, open loop, latency from the intended send time, HdrHistogram) runs there too, so all three share the machine's CPUs",
		fmt.Sprintf("Each rate runs directly against the upstream and through the proxy, %v per run (first %v left out), %d repeat(s) (a fresh proxy process each) with the order of the two alternating; figures are medians over the repeats, *added* is the median of the per-repeat differences proxied - direct (their range in parentheses), *ratio* is proxied / direct of the medians. A rate the machine cannot sustain shows as errors (timeouts after 2 s) and seconds of latency, directly as well as through the proxy",
			cfg.Step, cfg.Warmup, cfg.Repeats),
		"Memory: VmRSS from /proc/PID/status, split into RssAnon (the process's own memory) and RssFile (pages of the mapped executable, shared page cache), highest sample of each run (every 200 ms); CPU: utime+stime from /proc/PID/stat over the run",
	)

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
	t = benchkit.NewTable("rrllrrr", "repeat", "rate", "direct p50 / p99 / p99.9 ms", "proxied p50 / p99 / p99.9 ms", "proxy CPU (cores)", "VmRSS", "anon")
	for _, x := range res.Pairs {
		t.Row(fmt.Sprintf("%d", x.Repeat), fmt.Sprintf("%.0f", x.Rate),
			fmt.Sprintf("%.3f / %.3f / %.3f", x.Direct.P50, x.Direct.P99, x.Direct.P999),
			fmt.Sprintf("%.3f / %.3f / %.3f", x.Proxied.P50, x.Proxied.P99, x.Proxied.P999),
			fmt.Sprintf("%.3f", x.ProxyCPU), benchkit.MiB(x.ProxyMem.VmRSS), benchkit.MiB(x.ProxyMem.RssAnon))
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
