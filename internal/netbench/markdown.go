package netbench

import (
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// Markdown renders the result as docs/benchmarks/testbed.md: the kit's header, the verdicts, a
// table per goal and the raw JSON. Figures are medians over the repeats with their range
// (min–max) in brackets.
func Markdown(res *Result) string {
	results := res.Cases
	d := benchkit.NewDoc("Testbed link emulation benchmark", res.Header)
	d.Para("Each case runs %d time(s), each time on a fresh 2-node testbed (nodes a and b, one link); figures are medians over the repeats, "+
		"with the range (min–max) in brackets. Repeats run the case list in turn, every other one in reverse order. "+
		"UDP cases: a probe in node a sends paced packets to a reflector in node b (both batch with sendmmsg/recvmmsg) and times each round trip; "+
		"it sends what is due at each wake-up (every few hundred µs to ~1 ms: Go's timer granularity), so at high rates packets leave in bursts, and each carries its own send time. "+
		"TCP cases: Debian's iperf3 (`iperf3 -s` in b, `iperf3 -c b -t T -P N -J` in a); goodput is the receiver's. "+
		"Baselines run the same programs inside node a over loopback, without the fabric. "+
		"Fabric figures come from the fabric's own counters over the measurement window (from the probe's or iperf3's start to its exit): "+
		"CPU of its threads, wire packets carried (a round trip counts twice; a segmentation-offload super-packet counts its segments), "+
		"and how late it delivered packets beyond their scheduled time (lateness); rates and cores are per second of the probe's sending time or iperf3's test time. "+
		"\"process cores\" is the CPU of the whole process hosting the fabric; the measuring programs' own CPU (probe and reflector, or iperf3 by its own account) is shown beside it.", max(res.Repeats, 1))
	if res.Congestion != "" {
		d.Para("TCP congestion control: the host's default, `%s` (/proc/sys/net/ipv4/tcp_congestion_control)%s.", res.Congestion, iperfCongestion(results))
	}
	gs := res.Goals
	if gs == nil {
		gs = Goals(results)
	}
	d.Goals("Result against the goals", gs)

	if t := accuracyTable(results); t.Len() > 0 {
		d.Section("Delay accuracy")
		d.Para("Goal: RTT median within ±5%% (+0.2 ms) of 2x the one-way delay; p99 within +1 ms of the median.")
		d.Table(t)
	}
	if t := jitterTable(results); t.Len() > 0 {
		d.Section("Jitter")
		d.Para("Each direction adds a uniform draw from [-jitter, +jitter] to the delay; at 100 packets/s (10 ms apart) the link's FIFO order never " +
			"holds a packet back, so the RTT is 2x delay plus the sum of two such draws: triangular on ±2x jitter, its p10–p90 width 2·(2-√0.8)·jitter ≈ 2.21x jitter. " +
			"Goal: no RTT below 2x(delay - jitter), median within ±5%% (+0.2 ms) of 2x delay, p99 within 1 ms above 2x(delay + jitter), width within ±25%% of the model's.")
		d.Table(t)
	}
	if t := packetsTable(results); t.Len() > 0 {
		d.Section("Small packets through a 1 ms link")
		d.Para("Goal: ≥ 200 000 packets/s through the fabric (100 000 each way: every request and reply crosses it) with ≤ 1 ms added p99 and < 0.1%% loss; "+
			"fabric CPU ≤ 3 µs per packet. Added = measured RTT - 2 ms - the loopback baseline's at the same rate, per repeat (a baseline runs next to its case). "+
			"A rate is carried when the probe achieved %.0f%% of it, lost < 0.1%% and the added p99 was ≤ 1 ms; the verdict takes the highest rate carried with every lower rate carried too. "+
			"A rate is undetermined when the baseline cannot decide it: the baseline itself lost packets or fell short of the rate while the fabric's run failed "+
			"(the probe, reflector or machine may be what failed), or the baseline's p99 varied between repeats by more than the added p99's distance from the 1 ms limit.", minShare*100)
		d.Table(t)
	}
	if t := tcpTable(results); t.Len() > 0 {
		d.Section("Bulk TCP")
		d.Para("Goal: ≥ 5 Gbit/s between two nodes through a 1 ms link without a bandwidth limit, with one and with four streams. " +
			"The baseline is the same iperf3 test inside node a over loopback.")
		d.Table(t)
	}
	if t := bandwidthTable(results); t.Len() > 0 {
		d.Section("Bandwidth accuracy")
		d.Para("Goal: TCP goodput (one stream, 1 ms link) within ±5%% of the configured bandwidth. The limit applies to IP bytes, and TCP/IP headers " +
			"(20 + 20 + 12 bytes of timestamps) take ~3.5%% of a 1500-byte packet (1448 bytes of payload), so the ideal goodput is ~96.5%% of the rate; " +
			"the verdict compares with the configured rate as the goal states it, and the ratio to the ideal is shown too.")
		d.Table(t)
	}
	if t := lossTable(results); t.Len() > 0 {
		d.Section("Loss accuracy")
		d.Para("Goal: 10%% configured -> 10±2%% measured. Loss applies per direction, so a round trip " +
			"survives with probability 0.9² = 81%%; the one-way figure is derived as 1-sqrt(1-round-trip loss) and also read from the fabric's drop counter.")
		d.Table(t)
	}
	d.RawJSON(res)
	return d.String()
}

// iperfCongestion is ", iperf3 reported X" when the nodes' iperf3 named its congestion control.
func iperfCongestion(results []CaseResult) string {
	var seen []string
	for _, c := range results {
		for _, r := range c.Runs {
			if r.TCP != nil && r.TCP.Congestion != "" && !strings.Contains(strings.Join(seen, ","), r.TCP.Congestion) {
				seen = append(seen, r.TCP.Congestion)
			}
		}
	}
	if len(seen) == 0 {
		return ""
	}
	return "; iperf3 in the nodes reported " + strings.Join(seen, ", ")
}

// ms renders a spread of µs as ms.
func ms(s benchkit.Spread) string {
	return benchkit.Spread{N: s.N, Median: s.Median / 1000, Min: s.Min / 1000, Max: s.Max / 1000}.Format("%.3f")
}

func pct(s benchkit.Spread) string {
	return benchkit.Spread{N: s.N, Median: s.Median * 100, Min: s.Min * 100, Max: s.Max * 100}.Format("%.2f%%")
}

func accuracyTable(results []CaseResult) *benchkit.Table {
	t := benchkit.NewTable("lrrrrrrrll", "one-way delay", "rate (pps)", "expected RTT (ms)", "p50 (ms)", "p99 (ms)", "p99.9 (ms)", "max (ms)", "loss", "median ok", "p99-p50 ok")
	for _, r := range results {
		if r.Group != GroupAccuracy || len(r.Runs) == 0 {
			continue
		}
		mok, tok := accuracyOK(r)
		t.Rowf("%v | %d | %.2f | %s | %s | %s | %s | %s | %s | %s", r.Delay, r.Rate, 2*float64(r.Delay.Microseconds())/1000,
			ms(r.probe(p50)), ms(r.probe(p99)), ms(r.probe(func(p ProbeResult) float64 { return p.P999us })),
			ms(r.probe(func(p ProbeResult) float64 { return p.MaxUs })), pct(r.probe(func(p ProbeResult) float64 { return p.Loss })),
			benchkit.YesNo(mok), benchkit.YesNo(tok))
	}
	return t
}

func jitterTable(results []CaseResult) *benchkit.Table {
	t := benchkit.NewTable("lrrrrrrrrrl", "delay ± jitter", "rate (pps)", "RTT bounds (ms)", "min (ms)", "p10 (ms)", "p50 (ms)", "p90 (ms)", "p99 (ms)",
		"p10–p90 (ms)", "model p10–p90 (ms)", "floor / median / p99 / width ok")
	for _, r := range results {
		if r.Group != GroupJitter || len(r.Runs) == 0 {
			continue
		}
		f, m, c, w, _ := jitterVerdict(r)
		lo, hi := 2*(r.Delay-r.Jitter), 2*(r.Delay+r.Jitter)
		t.Rowf("%v ± %v | %d | %.1f–%.1f | %s | %s | %s | %s | %s | %s | %.3f | %s / %s / %s / %s", r.Delay, r.Jitter, r.Rate,
			float64(lo.Microseconds())/1000, float64(hi.Microseconds())/1000,
			ms(r.probe(func(p ProbeResult) float64 { return p.MinUs })), ms(r.probe(func(p ProbeResult) float64 { return p.P10us })),
			ms(r.probe(p50)), ms(r.probe(func(p ProbeResult) float64 { return p.P90us })), ms(r.probe(p99)),
			ms(r.probe(func(p ProbeResult) float64 { return p.P90us - p.P10us })), jitterExpected(r.Jitter)/1000,
			benchkit.YesNo(f), benchkit.YesNo(m), benchkit.YesNo(c), benchkit.YesNo(w))
	}
	return t
}

func packetsTable(results []CaseResult) *benchkit.Table {
	t := benchkit.NewTable("rrrrrrrrrrrrrrl", "offered each way (pps)", "achieved each way (pps)", "fabric carried (packets/s)", "loss",
		"p50 (ms)", "p99 (ms)", "baseline p50 / p99 (ms)", "added p50 (ms)", "added p99 (ms)", "fabric CPU (µs/packet)", "fabric cores",
		"process cores", "probe + reflector cores", "fabric lateness p50 / p99 (ms)", "carried")
	for _, r := range results {
		if r.Group != GroupPackets || len(r.Runs) == 0 {
			continue
		}
		base := "–"
		a50, a99 := "–", "–"
		if b := baselineOf(results, r.Case); b != nil {
			base = fmt.Sprintf("%.3f / %.3f", b.probe(p50).Median/1000, b.probe(p99).Median/1000)
			s50, _ := added(results, r, p50)
			s99, _ := added(results, r, p99)
			a50, a99 = plusMs(s50), plusMs(s99)
		}
		t.Rowf("%d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f / %.3f | %s", r.Rate,
			r.probe(func(p ProbeResult) float64 { return p.RateAchv }).Format("%.0f"),
			r.fabric(FabricWindow.PacketsPerSec).Format("%.0f"),
			pct(r.probe(func(p ProbeResult) float64 { return p.Loss })), ms(r.probe(p50)), ms(r.probe(p99)), base, a50, a99,
			r.fabric(func(w FabricWindow) float64 { return w.CPUPerPacketUs }).Format("%.2f"),
			r.fabric(func(w FabricWindow) float64 { return w.Cores }).Format("%.2f"),
			r.spread(func(x Repeat) (float64, bool) { return x.ProcessCores, true }).Format("%.2f"),
			r.spread(func(x Repeat) (float64, bool) { return x.ToolCores, true }).Format("%.2f"),
			r.fabric(func(w FabricWindow) float64 { return w.LateP50us }).Median/1000,
			r.fabric(func(w FabricWindow) float64 { return w.LateP99us }).Median/1000,
			carriedCell(results, r))
	}
	return t
}

// carriedCell is the packets table's verdict: yes, **no**, or undetermined and why.
func carriedCell(results []CaseResult, c CaseResult) string {
	switch st, why := packetsCarried(results, c); st {
	case carried:
		return "yes"
	case notCarried:
		return "**no**"
	default:
		return "undetermined: " + why
	}
}

func plusMs(s benchkit.Spread) string {
	return benchkit.Spread{N: s.N, Median: s.Median / 1000, Min: s.Min / 1000, Max: s.Max / 1000}.Format("%+.3f")
}

func tcpTable(results []CaseResult) *benchkit.Table {
	t := benchkit.NewTable("rlrrrrrrrrl", "streams", "path", "goodput (Gbit/s)", "retransmits", "fabric carried (packets/s)", "fabric CPU (µs/packet)",
		"fabric cores", "fabric lateness p50 / p99 (ms)", "process cores", "iperf3 cores", "≥ 5 Gbit/s")
	for _, r := range results {
		if len(r.Runs) == 0 || !(r.Group == GroupTCP || (r.Group == GroupBaseline && r.For == GroupTCP)) {
			continue
		}
		g := r.tcp(func(x IperfResult) float64 { return x.Gbps() })
		path, verdict := "fabric, 1 ms link", benchkit.YesNo(g.Median >= goalTCPGbps)
		fab := []string{r.fabric(FabricWindow.PacketsPerSec).Format("%.0f"), r.fabric(func(w FabricWindow) float64 { return w.CPUPerPacketUs }).Format("%.2f"),
			r.fabric(func(w FabricWindow) float64 { return w.Cores }).Format("%.2f"),
			fmt.Sprintf("%.3f / %.3f", r.fabric(func(w FabricWindow) float64 { return w.LateP50us }).Median/1000,
				r.fabric(func(w FabricWindow) float64 { return w.LateP99us }).Median/1000)}
		if r.Group == GroupBaseline {
			path, verdict = "loopback in node a (baseline)", ""
			fab = []string{"–", "–", "–", "–"}
		}
		t.Row(fmt.Sprint(r.Streams), path, g.Format("%.2f"), r.tcp(func(x IperfResult) float64 { return float64(x.Retransmits) }).Format("%.0f"),
			fab[0], fab[1], fab[2], fab[3], r.spread(func(x Repeat) (float64, bool) { return x.ProcessCores, true }).Format("%.2f"),
			r.spread(func(x Repeat) (float64, bool) { return x.ToolCores, true }).Format("%.2f"), verdict)
	}
	return t
}

func bandwidthTable(results []CaseResult) *benchkit.Table {
	t := benchkit.NewTable("rrrrrrrl", "configured", "goodput (Mbit/s)", "goodput / configured", "goodput / ideal", "retransmits",
		"fabric lateness p99 (ms)", "fabric drops (queue)", "within ±5%")
	for _, r := range results {
		if r.Group != GroupBandwidth || len(r.Runs) == 0 {
			continue
		}
		ratio := bandwidthRatio(r)
		ideal := r.tcp(func(x IperfResult) float64 { return x.GoodputBps / (float64(r.Bandwidth) * idealGoodputShare(x.MSS)) })
		t.Rowf("%s | %s | %s | %s | %s | %s | %s | %s", mbit(float64(r.Bandwidth)),
			r.tcp(func(x IperfResult) float64 { return x.GoodputBps / 1e6 }).Format("%.3f"), ratio.Format("%.3f"), ideal.Format("%.3f"),
			r.tcp(func(x IperfResult) float64 { return float64(x.Retransmits) }).Format("%.0f"),
			ms(r.fabric(func(w FabricWindow) float64 { return w.LateP99us })),
			r.spread(func(x Repeat) (float64, bool) { return float64(x.Drops[fabric.DropQueue]), true }).Format("%.0f"),
			benchkit.YesNo(ratio.Median >= 1-goalBandwidthTol && ratio.Median <= 1+goalBandwidthTol))
	}
	return t
}

func lossTable(results []CaseResult) *benchkit.Table {
	t := benchkit.NewTable("rrrrrl", "configured (one way)", "packets sent", "round-trip loss", "one-way loss (derived)", "fabric loss drops", "within 10±2%")
	for _, r := range results {
		if r.Group != GroupLoss || len(r.Runs) == 0 {
			continue
		}
		oneWay := r.probe(oneWayLoss)
		t.Rowf("%.0f%% | %s | %s | %s | %s | %s", r.Loss*100, r.probe(func(p ProbeResult) float64 { return float64(p.Sent) }).Format("%.0f"),
			pct(r.probe(func(p ProbeResult) float64 { return p.Loss })), pct(oneWay),
			r.spread(func(x Repeat) (float64, bool) { return float64(x.Drops[fabric.DropLoss]), true }).Format("%.0f"),
			benchkit.YesNo(oneWay.Median >= r.Loss-0.02 && oneWay.Median <= r.Loss+0.02))
	}
	return t
}
