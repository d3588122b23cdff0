package proxybench

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Goals of issue 5 §3.
const (
	GoalAddedP99Ms = 0.5      // p99 added latency at 1000 req/s
	GoalRSSBytes   = 10 << 20 // resident memory at 1000 req/s (10 MiB)
	GoalRate       = 1000
)

// Markdown renders the benchmark for docs/benchmarks/proxy.md: command, machine, commit,
// method, tables, the verdict against the goals and the raw JSON.
func Markdown(res *Result, command, machine, commit string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cfg := res.Config
	p("# continuum proxy: overhead\n\n")
	p("Regenerate with:\n\n```\n%s\n```\n\n", command)
	p("- Machine: %s\n", machine)
	p("- Date: %s (%.0f s); host load average %.2f at the start, %.2f at the end\n",
		res.Started.Format(time.RFC3339), res.Finished.Sub(res.Started).Seconds(), res.LoadAvg[0], res.LoadAvg[1])
	if commit != "" {
		p("- Commit: %s (working tree, which may hold uncommitted changes)\n", commit)
	}
	p("- Proxy: `%s` (%s), a child process; strategy qos (p95 <= 80 ms), one instance, discovery from a file\n", cfg.ProxyBin, res.Version)
	p("- Upstream: internal/httpecho (no delay, short body) on loopback, in the benchmark's process; the load generator (internal/loadgen, open loop, latency from the intended send time, HdrHistogram) runs there too, so all three share the machine's CPUs\n")
	p("- Each rate runs directly against the upstream and through the proxy, %v per run (first %v left out), %d repeat(s) (a fresh proxy process each) with the order of the two alternating; figures are medians over the repeats, *added* is the median of the per-repeat differences proxied - direct, *ratio* is proxied / direct of the medians. A rate the machine cannot sustain shows as errors (timeouts after 2 s) and seconds of latency, directly as well as through the proxy\n",
		cfg.Step, cfg.Warmup, cfg.Repeats)
	p("- Memory: VmRSS from /proc/PID/status, split into RssAnon (the process's own memory) and RssFile (pages of the mapped executable, shared page cache), highest sample of each run (every 200 ms); CPU: utime+stime from /proc/PID/stat over the run\n\n")

	p("## Added latency\n\n")
	p("*added* is the median of the per-repeat differences; *diff* the difference of the medians. Both estimate the same thing; when they disagree, the machine's noise is larger than the proxy's cost.\n\n")
	p("| rate (req/s) | direct p50 | proxied p50 | added p50 | diff p50 | ratio p50 | direct p99 | proxied p99 | added p99 | diff p99 | ratio p99 | errors |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range res.Summary {
		p("| %.0f | %.3f ms | %.3f ms | %+.3f ms | %+.3f ms | %.2f | %.3f ms | %.3f ms | %+.3f ms | %+.3f ms | %.2f | %d |\n",
			s.Rate, s.DirectP50, s.ProxiedP50, s.AddedP50, s.MedianDiffP50, s.RatioP50, s.DirectP99, s.ProxiedP99, s.AddedP99, s.MedianDiffP99, s.RatioP99, s.Errors)
	}
	p("\n## Proxy process: CPU and memory\n\n")
	p("Idle (after start-up and one request): VmRSS %s (anon %s, file %s).\n\n", mib(res.IdleMem.VmRSS), mib(res.IdleMem.RssAnon), mib(res.IdleMem.RssFile))
	p("A fresh proxy process serves each repeat, its rates in ascending order, so a run's memory includes what the slower runs before it left (the Go runtime returns memory to the system gradually); the goal is judged on the fresh-process figures of the next section.\n\n")
	p("| rate (req/s) | CPU (cores) per 1000 req/s | peak VmRSS | RssAnon | RssFile |\n|---:|---:|---:|---:|---:|\n")
	for _, s := range res.Summary {
		p("| %.0f | %.3f | %s | %s | %s |\n", s.Rate, s.CPUPer1000RPS, mib(s.ProxyMem.VmRSS), mib(s.ProxyMem.RssAnon), mib(s.ProxyMem.RssFile))
	}

	if len(res.Builds) > 0 {
		p("\n## Memory by build (at %.0f req/s)\n\n", cfg.MemoryRate)
		p("Each build is started afresh, gets one request, and runs %v at %.0f req/s; the figures are the highest samples. Which discovery sources a binary links decides most of its resident memory: the mapped pages of the executable (RssFile) grow with the code linked in.\n\n", cfg.Step, cfg.MemoryRate)
		p("| build | binary size | idle VmRSS (anon) | VmRSS at %.0f req/s | RssAnon | RssFile | CPU (cores) | proxied p99 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", cfg.MemoryRate)
		for _, v := range res.Builds {
			if v.Error != "" {
				p("| %s (`%s`) | %s | not measured: %s | | | | | |\n", v.Name, v.Bin, mib(v.Size), oneLine(v.Error))
				continue
			}
			p("| %s (`%s`) | %s | %s (%s) | %s | %s | %s | %.3f | %.3f ms |\n", v.Name, v.Bin, mib(v.Size), mib(v.Idle.VmRSS), mib(v.Idle.RssAnon),
				mib(v.Loaded.VmRSS), mib(v.Loaded.RssAnon), mib(v.Loaded.RssFile), v.CPU, v.P99)
		}
	}

	p("\n## Against the goals\n\n")
	p("| goal | measured | verdict |\n|---|---|---|\n")
	if s, ok := summaryAt(res, GoalRate); ok {
		worst := max(s.AddedP99, s.MedianDiffP99)
		p("| p99 added <= %.1f ms at %d req/s | %+.3f ms (median of %d per-repeat differences), %+.3f ms (difference of the medians) | %s |\n",
			GoalAddedP99Ms, GoalRate, s.AddedP99, cfg.Repeats, s.MedianDiffP99, verdict(worst <= GoalAddedP99Ms))
	} else {
		p("| p99 added <= %.1f ms at %d req/s | rate not measured | not measured |\n", GoalAddedP99Ms, GoalRate)
	}
	for _, v := range res.Builds {
		if v.Error != "" {
			continue
		}
		p("| VmRSS <= %s at %.0f req/s (%s) | %s (anon %s, file %s) | %s |\n", mib(GoalRSSBytes), cfg.MemoryRate, v.Name,
			mib(v.Loaded.VmRSS), mib(v.Loaded.RssAnon), mib(v.Loaded.RssFile), verdict(v.Loaded.VmRSS <= GoalRSSBytes))
	}

	p("\n## Every run\n\n| repeat | rate | direct p50 / p99 / p99.9 ms | proxied p50 / p99 / p99.9 ms | proxy CPU (cores) | VmRSS | anon |\n|---:|---:|---|---|---:|---:|---:|\n")
	for _, x := range res.Pairs {
		p("| %d | %.0f | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.3f | %s | %s |\n", x.Repeat, x.Rate,
			x.Direct.P50, x.Direct.P99, x.Direct.P999, x.Proxied.P50, x.Proxied.P99, x.Proxied.P999, x.ProxyCPU, mib(x.ProxyMem.VmRSS), mib(x.ProxyMem.RssAnon))
	}
	raw, _ := json.MarshalIndent(res, "", "  ")
	p("\n<details><summary>raw results (JSON)</summary>\n\n```json\n%s\n```\n</details>\n", raw)
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func summaryAt(res *Result, rate float64) (Summary, bool) {
	for _, s := range res.Summary {
		if s.Rate == rate {
			return s, true
		}
	}
	return Summary{}, false
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}
