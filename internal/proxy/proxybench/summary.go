package proxybench

import (
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/procstat"
)

// summarize takes each rate's medians over the repeats (the paired direct and proxied runs).
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
		s.ProxyMem = medMemory(at, func(p Pair) procstat.Memory { return p.ProxyMem })
		s.DirectRPS = round3(med(func(p Pair) float64 { return p.Direct.ThroughputRPS }))
		s.ProxiedRPS = round3(med(func(p Pair) float64 { return p.Proxied.ThroughputRPS }))
		var short []string
		if s.DirectRPS < 0.95*rate {
			short = append(short, fmt.Sprintf("direct %.0f req/s", s.DirectRPS))
		} else if s.DirectP99 > SaturatedDirectP99Ms {
			short = append(short, fmt.Sprintf("direct p99 %.1f ms (the load generator and upstream fell behind their schedule: latencies at this rate are theirs, not the proxies')", s.DirectP99))
		}
		if s.ProxiedRPS < 0.95*rate {
			short = append(short, fmt.Sprintf("through the proxy %.0f req/s", s.ProxiedRPS))
		}
		var withHAP []Pair
		for _, p := range at {
			if p.HAProxy != nil {
				withHAP = append(withHAP, p)
			}
		}
		if len(withHAP) > 0 {
			hmed := func(f func(Pair) float64) float64 {
				return benchkit.Median(benchkit.Values(withHAP, func(p Pair) (float64, bool) { return f(p), true }))
			}
			s.HAProxy = true
			s.HAProxyP50, s.HAProxyP99 = hmed(func(p Pair) float64 { return p.HAProxy.P50 }), hmed(func(p Pair) float64 { return p.HAProxy.P99 })
			s.HAProxyAddedP50 = round3(hmed(func(p Pair) float64 { return p.HAProxy.P50 - p.Direct.P50 }))
			s.HAProxyAddedP99 = round3(hmed(func(p Pair) float64 { return p.HAProxy.P99 - p.Direct.P99 }))
			s.HAProxyCPUPer1000RPS = round3(hmed(func(p Pair) float64 { return p.HAProxyCPU / (rate / 1000) }))
			s.HAProxyMem = medMemory(withHAP, func(p Pair) procstat.Memory { return p.HAProxyMem })
			s.HAProxyRPS = round3(hmed(func(p Pair) float64 { return p.HAProxy.ThroughputRPS }))
			if s.HAProxyRPS < 0.95*rate {
				short = append(short, fmt.Sprintf("through HAProxy %.0f req/s", s.HAProxyRPS))
			}
			// CPU per request is compared on the repeats where both proxies sustained the rate:
			// a run that collapsed (the load generator fell behind) says nothing about it.
			var both []Pair
			for _, p := range withHAP {
				if p.Proxied.ThroughputRPS >= 0.95*rate && p.HAProxy.ThroughputRPS >= 0.95*rate {
					both = append(both, p)
				}
			}
			if len(both) > 0 && len(both) < len(withHAP) {
				bmed := func(f func(Pair) float64) float64 {
					return benchkit.Median(benchkit.Values(both, func(p Pair) (float64, bool) { return f(p), true }))
				}
				s.CPUPer1000RPS = round3(bmed(func(p Pair) float64 { return p.ProxyCPU / (rate / 1000) }))
				s.HAProxyCPUPer1000RPS = round3(bmed(func(p Pair) float64 { return p.HAProxyCPU / (rate / 1000) }))
				s.CPUFrom = fmt.Sprintf("%d of %d repeats (those where both sustained the rate)", len(both), len(withHAP))
				withHAP = both
			}
			// Per request, from the unrounded medians: the CPU per achieved request.
			ours := hmed(func(p Pair) float64 { return p.ProxyCPU / max(p.Proxied.ThroughputRPS, 1) })
			theirs := hmed(func(p Pair) float64 { return p.HAProxyCPU / max(p.HAProxy.ThroughputRPS, 1) })
			s.CPURatio = round3(ratio(ours, theirs))
		}
		s.Short = strings.Join(short, ", ")
		out = append(out, s)
	}
	return out
}

func medMemory(ps []Pair, f func(Pair) procstat.Memory) procstat.Memory {
	m := func(g func(procstat.Memory) int64) int64 {
		return int64(benchkit.Median(benchkit.Values(ps, func(p Pair) (float64, bool) { return float64(g(f(p))), true })))
	}
	return procstat.Memory{VmRSS: m(func(x procstat.Memory) int64 { return x.VmRSS }),
		RssAnon: m(func(x procstat.Memory) int64 { return x.RssAnon }),
		RssFile: m(func(x procstat.Memory) int64 { return x.RssFile })}
}

// summarizeOneCore takes each mode's medians over the repeats.
func summarizeOneCore(runs []OneCore) []OneCoreSummary {
	var out []OneCoreSummary
	for _, mode := range []string{modeDirect, modeProxy, modeHAProxy} {
		var at []OneCore
		for _, r := range runs {
			if r.Mode == mode {
				at = append(at, r)
			}
		}
		if len(at) == 0 {
			continue
		}
		med := func(f func(OneCore) float64) float64 {
			return benchkit.Median(benchkit.Values(at, func(r OneCore) (float64, bool) { return f(r), true }))
		}
		s := OneCoreSummary{Mode: mode, RPS: round3(med(func(r OneCore) float64 { return r.Lat.ThroughputRPS })),
			CPU: round3(med(func(r OneCore) float64 { return r.CPU })), P99: med(func(r OneCore) float64 { return r.Lat.P99 })}
		for _, r := range at {
			s.Errors += r.Lat.Errors
		}
		if mode != modeDirect {
			s.RPSPerCore = round3(med(func(r OneCore) float64 { return ratio(r.Lat.ThroughputRPS, r.CPU) }))
			s.Saturated = s.CPU >= 0.9
		}
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
