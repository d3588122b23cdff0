package netbench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// The goals' thresholds: the data path at line rate (docs/benchmarks/testbed.md states them).
const (
	goalThroughFabric = 200000 // packets/s through the fabric, both directions counted
	goalAddedP99Us    = 1000   // µs the fabric may add to the probe's p99 over the loopback baseline
	goalLoss          = 0.001  // loss below which a rate counts as carried
	goalCPUPerPacket  = 3.0    // µs of fabric CPU per wire packet
	goalTCPGbps       = 5.0    // bulk TCP between two nodes
	goalBandwidthTol  = 0.05   // goodput within ±5% of the configured bandwidth
	minShare          = 0.95   // a rate is carried only if the probe achieved 95% of it (benchkit's sustain rule)
)

// spread is a figure's median and spread over a case's runs; f reports false for a run without it.
func (c CaseResult) spread(f func(Repeat) (float64, bool)) benchkit.Spread {
	return benchkit.Summarize(benchkit.Values(c.Runs, f))
}

// probe reads a probe figure of every run.
func (c CaseResult) probe(f func(ProbeResult) float64) benchkit.Spread {
	return c.spread(func(r Repeat) (float64, bool) {
		if r.Probe == nil {
			return 0, false
		}
		return f(*r.Probe), true
	})
}

// tcp reads an iperf3 figure of every run.
func (c CaseResult) tcp(f func(IperfResult) float64) benchkit.Spread {
	return c.spread(func(r Repeat) (float64, bool) {
		if r.TCP == nil {
			return 0, false
		}
		return f(*r.TCP), true
	})
}

// fabric reads a fabric figure of every run.
func (c CaseResult) fabric(f func(FabricWindow) float64) benchkit.Spread {
	return c.spread(func(r Repeat) (float64, bool) { return f(r.Fabric), true })
}

// baselineOf is the baseline case measured for c (nil when there is none).
func baselineOf(results []CaseResult, c Case) *CaseResult {
	for i, b := range results {
		if b.Group == GroupBaseline && b.For == c.Group && b.Rate == c.Rate && b.Size == c.Size && b.Streams == c.Streams && len(b.Runs) > 0 {
			return &results[i]
		}
	}
	return nil
}

// added is what the emulated path adds to the probe's RTT quantile q (a ProbeResult field)
// beyond the configured round trip and beyond what the same probe saw over loopback, per repeat:
// repeat i is compared with the baseline's repeat i, run next to it (or the baseline's median
// when it has fewer repeats). ok is false when no baseline was measured.
func added(results []CaseResult, c CaseResult, q func(ProbeResult) float64) (s benchkit.Spread, ok bool) {
	b := baselineOf(results, c.Case)
	if b == nil {
		return benchkit.Spread{}, false
	}
	ideal := 2 * float64(c.Delay.Microseconds())
	bmed := b.probe(q).Median
	var v []float64
	for i, r := range c.Runs {
		if r.Probe == nil {
			continue
		}
		base := bmed
		if i < len(b.Runs) && b.Runs[i].Probe != nil {
			base = q(*b.Runs[i].Probe)
		}
		v = append(v, q(*r.Probe)-ideal-base)
	}
	return benchkit.Summarize(v), len(v) > 0
}

func p50(p ProbeResult) float64 { return p.P50us }
func p99(p ProbeResult) float64 { return p.P99us }

// carriage is whether the fabric carried a packets case's rate.
type carriage int

const (
	carried      carriage = iota
	notCarried            // the fabric lost, fell behind or added too much
	undetermined          // the loopback baseline itself could not resolve the goal at this rate
)

// packetsCarried judges a packets case on medians over its repeats: carried when the probe
// achieved 95% of the rate, lost under 0.1% and the fabric added at most 1 ms to p99 over the
// loopback baseline. The baseline decides whether that judgement can be made: when the baseline
// itself lost packets or fell short of the rate, a failure is undetermined (the probe, the
// reflector or the machine's load may be what failed, not the fabric); and when the baseline's
// p99 varied between repeats by more than the added p99's distance from the 1 ms limit, either
// verdict is within the noise and undetermined.
func packetsCarried(results []CaseResult, c CaseResult) (carriage, string) {
	b := baselineOf(results, c.Case)
	if b == nil {
		return undetermined, "no loopback baseline"
	}
	a99, _ := added(results, c, p99)
	ok := c.probe(func(p ProbeResult) float64 { return p.RateAchv }).Median >= minShare*float64(c.Rate) &&
		c.probe(func(p ProbeResult) float64 { return p.Loss }).Median < goalLoss && a99.Median <= goalAddedP99Us
	loss := b.probe(func(p ProbeResult) float64 { return p.Loss }).Median
	achieved := b.probe(func(p ProbeResult) float64 { return p.RateAchv }).Median
	switch b99 := b.probe(p99); {
	case !ok && loss >= goalLoss:
		return undetermined, fmt.Sprintf("the loopback baseline itself lost %.2f%%", loss*100)
	case !ok && achieved < minShare*float64(b.Rate):
		return undetermined, fmt.Sprintf("the loopback baseline itself sent only %.0f packets/s", achieved)
	case b99.Max-b99.Min >= math.Abs(a99.Median-goalAddedP99Us):
		return undetermined, fmt.Sprintf("the loopback baseline's p99 varied %s–%s ms between repeats, more than the added p99's distance from the 1 ms limit",
			msf(b99.Min), msf(b99.Max))
	case ok:
		return carried, ""
	}
	return notCarried, ""
}

// accuracyOK judges an accuracy case on its medians: RTT p50 within ±5% (+0.2 ms) of twice the
// one-way delay, p99 within 1 ms of p50.
func accuracyOK(c CaseResult) (medianOK, tailOK bool) {
	want := 2 * float64(c.Delay.Microseconds())
	medianOK = math.Abs(c.probe(p50).Median-want) <= 0.05*want+200
	tailOK = c.probe(func(p ProbeResult) float64 { return p.P99us - p.P50us }).Median <= 1000
	return
}

// jitterExpected is the RTT's p10–p90 width when each direction adds an independent uniform
// draw from [-J, +J]: their sum is triangular on [-2J, 2J], whose 90th percentile is
// 2J - sqrt(0.8)·J, so the p10–p90 width is 2·(2 - sqrt(0.8))·J ≈ 2.21·J.
func jitterExpected(j time.Duration) float64 {
	return 2 * (2 - math.Sqrt(0.8)) * float64(j.Microseconds())
}

// jitterVerdict judges a jitter case: no packet faster than the floor 2·(delay - jitter) (a
// hard bound; 0.2% allows for the histogram's resolution), median within ±5% (+0.2 ms) of
// 2·delay, p99 at most 1 ms above the ceiling 2·(delay + jitter), and the p10–p90 width within
// ±25% of the triangular distribution's.
func jitterVerdict(c CaseResult) (floorOK, medianOK, ceilOK, widthOK bool, width float64) {
	d, j := float64(c.Delay.Microseconds()), float64(c.Jitter.Microseconds())
	floor := 2 * (d - j)
	floorOK = c.probe(func(p ProbeResult) float64 { return p.MinUs }).Min >= floor*0.998
	medianOK = math.Abs(c.probe(p50).Median-2*d) <= 0.05*2*d+200
	ceilOK = c.probe(p99).Median <= 2*(d+j)+1000
	width = c.probe(func(p ProbeResult) float64 { return p.P90us - p.P10us }).Median
	want := jitterExpected(c.Jitter)
	widthOK = width >= 0.75*want && width <= 1.25*want
	return
}

// idealGoodputShare is the share of a link's IP bytes that is TCP payload when every segment is
// full: mss payload bytes in mss + 52 (IPv4 20, TCP 20, timestamps option 12); 1448 in 1500.
func idealGoodputShare(mss int) float64 {
	if mss <= 0 {
		mss = 1448
	}
	return float64(mss) / float64(mss+52)
}

// bandwidthRatio is a bandwidth case's median goodput over the configured bandwidth.
func bandwidthRatio(c CaseResult) benchkit.Spread {
	return c.tcp(func(r IperfResult) float64 { return r.GoodputBps / float64(c.Bandwidth) })
}

// oneWayLoss derives the loss of one direction from the round trip's: a packet survives the
// round trip with probability (1 - one way)².
func oneWayLoss(p ProbeResult) float64 { return 1 - math.Sqrt(1-p.Loss) }

func msf(us float64) string { return fmt.Sprintf("%.3f", us/1000) }

// Goals judges the cases against the goals on medians over the repeats, so a
// regenerated file states its own result. A group that did not run (--only) has no goal line.
func Goals(results []CaseResult) []benchkit.Goal {
	var gs []benchkit.Goal
	by := func(group string) []CaseResult {
		var out []CaseResult
		for _, r := range results {
			if r.Group == group && len(r.Runs) > 0 {
				out = append(out, r)
			}
		}
		return out
	}

	const accuracy = "Delay accuracy (RTT median within ±5% +0.2 ms of 2x the delay, p99 within 1 ms of the median)"
	if acc := by(GroupAccuracy); len(acc) > 0 {
		var okNames []string
		for _, r := range acc {
			if m, t := accuracyOK(r); m && t {
				okNames = append(okNames, fmt.Sprintf("%v@%dpps", r.Delay, r.Rate))
			}
		}
		measured := fmt.Sprintf("met in %d of %d cases", len(okNames), len(acc))
		if len(okNames) > 0 {
			measured += " (" + strings.Join(okNames, ", ") + ")"
		}
		gs = append(gs, benchkit.Check(accuracy, len(okNames) == len(acc), measured))
	}

	for _, r := range by(GroupJitter) {
		f, m, c, w, width := jitterVerdict(r)
		gs = append(gs, benchkit.Check(fmt.Sprintf("Jitter %v±%v: RTT never below 2x(delay-jitter), median at 2x delay, p10–p90 width within ±25%% of the uniform model's", r.Delay, r.Jitter),
			f && m && c && w, fmt.Sprintf("min %s ms (floor %s), p50 %s ms, p99 %s ms, p10–p90 %s ms (model %s)",
				msf(r.probe(func(p ProbeResult) float64 { return p.MinUs }).Min), msf(2*float64((r.Delay-r.Jitter).Microseconds())),
				msf(r.probe(p50).Median), msf(r.probe(p99).Median), msf(width), msf(jitterExpected(r.Jitter)))))
	}

	gs = append(gs, packetGoals(results, by(GroupPackets))...)

	for _, r := range by(GroupTCP) {
		g := r.tcp(func(t IperfResult) float64 { return t.Gbps() })
		measured := fmt.Sprintf("%s Gbit/s", g.Format("%.2f"))
		if b := baselineOf(results, r.Case); b != nil {
			measured += fmt.Sprintf(" (loopback in one node: %.2f)", b.tcp(func(t IperfResult) float64 { return t.Gbps() }).Median)
		}
		gs = append(gs, benchkit.Check(fmt.Sprintf("Bulk TCP, %d stream(s), 1 ms link, no bandwidth limit: ≥ %.0f Gbit/s", r.Streams, float64(goalTCPGbps)),
			g.Median >= goalTCPGbps, measured))
	}

	if bw := by(GroupBandwidth); len(bw) > 0 {
		var parts []string
		all := true
		for _, r := range bw {
			s := bandwidthRatio(r)
			all = all && math.Abs(s.Median-1) <= goalBandwidthTol
			parts = append(parts, fmt.Sprintf("%s: %s", mbit(float64(r.Bandwidth)), s.Format("%.3f")))
		}
		gs = append(gs, benchkit.Check("TCP goodput within ±5% of the configured bandwidth (1 ms link, one stream; ratio goodput/configured)",
			all, strings.Join(parts, ", ")))
	}

	for _, r := range by(GroupLoss) {
		s := r.probe(oneWayLoss)
		gs = append(gs, benchkit.Check(fmt.Sprintf("Loss: %.0f%% configured -> within ±2%% one way", r.Loss*100),
			math.Abs(s.Median-r.Loss) <= 0.02, pct(s)+" measured one way"))
	}
	return gs
}

// packetGoals judges the small-packet cases: the highest rate carried with every lower rate
// carried too (as benchkit.Sweep counts a sustained rate), and the fabric's CPU per packet there.
func packetGoals(results, packets []CaseResult) []benchkit.Goal {
	const rateGoal = "≥ 200 000 packets/s through the fabric (64 B UDP, 1 ms link, both directions counted) with ≤ 1 ms added p99 and < 0.1% loss"
	const cpuGoal = "Fabric CPU ≤ 3 µs per packet (at the highest rate measured)"
	if len(packets) == 0 {
		return nil
	}
	packets = slices.Clone(packets)
	slices.SortStableFunc(packets, func(a, b CaseResult) int { return a.Rate - b.Rate })
	var best, stop *CaseResult
	var why string
	for i := range packets {
		st, w := packetsCarried(results, packets[i])
		if st != carried {
			stop, why = &packets[i], w
			break
		}
		best = &packets[i]
	}
	var measured string
	if best != nil {
		a99, _ := added(results, *best, p99)
		achieved := best.probe(func(p ProbeResult) float64 { return p.RateAchv }).Median
		measured = fmt.Sprintf("highest rate carried %d packets/s each way offered (%.0f achieved; %.0f through the fabric counting replies), added p99 %+.3f ms",
			best.Rate, achieved, 2*achieved, a99.Median/1000)
	} else {
		measured = "no rate carried"
	}
	if stop != nil {
		a99, _ := added(results, *stop, p99)
		sep := "; at"
		if best == nil {
			sep = " (at"
		}
		measured += fmt.Sprintf("%s %d packets/s each way: added p99 %+.3f ms, loss %.2f%%", sep, stop.Rate, a99.Median/1000,
			stop.probe(func(p ProbeResult) float64 { return p.Loss }).Median*100)
		if best == nil {
			measured += ")"
		}
	}
	rate := benchkit.Check(rateGoal, best != nil && 2*best.Rate >= goalThroughFabric, measured)
	if rate.Verdict == benchkit.NotMet && why != "" {
		rate.Verdict = benchkit.Undetermined
		rate.Note = fmt.Sprintf("at %d packets/s each way %s: the measuring tools or the machine's load, not the fabric, set the figures; rerun on a quiet machine", stop.Rate, why)
	}
	// CPU per packet is judged at the highest rate measured, the load the goal is about: at
	// low rates the fabric's fixed costs (waking up for each batch) dominate the per-packet figure.
	top := packets[len(packets)-1]
	cpuOf := func(c CaseResult) benchkit.Spread {
		return c.fabric(func(w FabricWindow) float64 { return w.CPUPerPacketUs })
	}
	cpu := cpuOf(top)
	cpuMeasured := fmt.Sprintf("%s µs at %d packets/s each way (%.2f cores, %.0f packets/s carried)", cpu.Format("%.2f"), top.Rate,
		top.fabric(func(w FabricWindow) float64 { return w.Cores }).Median, top.fabric(FabricWindow.PacketsPerSec).Median)
	if best != nil && best.Rate != top.Rate {
		cpuMeasured += fmt.Sprintf("; %.2f µs at %d, the highest rate carried", cpuOf(*best).Median, best.Rate)
	}
	return []benchkit.Goal{rate, benchkit.Check(cpuGoal, cpu.Median <= goalCPUPerPacket, cpuMeasured)}
}
