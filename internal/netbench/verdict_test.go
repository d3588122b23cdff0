package netbench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// runs builds a case's repeats from probe results.
func runs(ps ...ProbeResult) []Repeat {
	out := make([]Repeat, len(ps))
	for i := range ps {
		out[i] = Repeat{Probe: &ps[i]}
	}
	return out
}

func goalLines(results []CaseResult) string {
	var lines []string
	for _, g := range Goals(results) {
		lines = append(lines, g.Line())
	}
	return strings.Join(lines, "\n")
}

// pk is a packets case at rate with one repeat per added p99 (µs over the 2 ms ideal and the
// baseline's 200 µs p99), and its baseline.
func pk(rate int, loss float64, cpuUs float64, addedP99 ...float64) []CaseResult {
	c := CaseResult{Case: Case{Group: GroupPackets, Delay: time.Millisecond, Rate: rate, Size: 64}}
	b := CaseResult{Case: Case{Group: GroupBaseline, For: GroupPackets, Rate: rate, Size: 64}}
	for _, a := range addedP99 {
		c.Runs = append(c.Runs, Repeat{Probe: &ProbeResult{RateAchv: float64(rate), Loss: loss, P50us: 2150, P99us: 2000 + 200 + a},
			Fabric: FabricWindow{CPUPerPacketUs: cpuUs, Cores: cpuUs * 2 * float64(rate) / 1e6, Packets: uint64(10 * rate), ActiveSeconds: 5}})
		b.Runs = append(b.Runs, Repeat{Probe: &ProbeResult{RateAchv: float64(rate), P50us: 50, P99us: 200}})
	}
	return []CaseResult{c, b}
}

func lossyBaseline(rs []CaseResult) []CaseResult {
	for _, r := range rs[1].Runs {
		r.Probe.Loss = 0.005
	}
	return rs
}

func noisyBaseline(rs []CaseResult) []CaseResult {
	rs[1].Runs[1].Probe.P99us = 1700
	return rs
}

func TestPacketGoals(t *testing.T) {
	cat := func(parts ...[]CaseResult) []CaseResult { return slices.Concat(parts...) }
	for _, c := range []struct {
		name    string
		results []CaseResult
		want    []string
	}{
		{"met at 100k each way", cat(pk(10000, 0, 9, 100, 200, 150), pk(100000, 0, 2.5, 900, 1200, 800)),
			[]string{"highest rate carried 100000 packets/s each way offered (100000 achieved; 200000 through the fabric counting replies), added p99 +0.900 ms: **met**",
				"Fabric CPU ≤ 3 µs per packet (at the highest rate measured): 2.50 (2.50–2.50) µs at 100000 packets/s each way (0.50 cores, 200000 packets/s carried): **met**"}},
		{"the median repeat decides", cat(pk(10000, 0, 9, 100), pk(100000, 0, 2.5, 1100, 1200, 800)),
			[]string{"highest rate carried 10000 packets/s each way offered (10000 achieved; 20000 through the fabric counting replies), added p99 +0.100 ms; at 100000 packets/s each way: added p99 +1.100 ms, loss 0.00%: **not met**",
				"2.50 (2.50–2.50) µs at 100000 packets/s each way (0.50 cores, 200000 packets/s carried); 9.00 µs at 10000, the highest rate carried: **met**"}},
		{"a rate that recovers does not count", cat(pk(10000, 0, 9, 100), pk(50000, 0, 4, 3000), pk(100000, 0, 2.5, 500)),
			[]string{"highest rate carried 10000 packets/s each way offered"}},
		{"loss of 0.1% is not carried", cat(pk(10000, 0.001, 9, 100)),
			[]string{"no rate carried (at 10000 packets/s each way: added p99 +0.100 ms, loss 0.10%): **not met**",
				"9.00 µs at 10000 packets/s each way (0.18 cores, 20000 packets/s carried): **not met**"}},
		{"no baseline", pk(10000, 0, 9, 100)[:1], []string{"no rate carried (at 10000 packets/s each way: added p99 +0.000 ms, loss 0.00%): **undetermined** (at 10000 packets/s each way no loopback baseline"}},
		{"a baseline that lost packets cannot judge", cat(pk(10000, 0, 9, 100), lossyBaseline(pk(100000, 0, 2.5, 3000))),
			[]string{"highest rate carried 10000 packets/s each way offered (10000 achieved; 20000 through the fabric counting replies), added p99 +0.100 ms; at 100000 packets/s each way: added p99 +3.000 ms, loss 0.00%: **undetermined** (at 100000 packets/s each way the loopback baseline itself lost 0.50%: the measuring tools or the machine's load, not the fabric, set the figures; rerun on a quiet machine)"}},
		{"a baseline whose p99 varies by more than 1 ms cannot judge", cat(pk(10000, 0, 9, 100), noisyBaseline(pk(50000, 0, 4, 100, 100, 100))),
			[]string{"**undetermined** (at 50000 packets/s each way the loopback baseline's p99 varied 0.200–1.700 ms between repeats, more than the added p99's distance from the 1 ms limit"}},
		{"a goal met stays met past an undetermined rate", cat(pk(100000, 0, 2.5, 100), lossyBaseline(pk(150000, 0, 2, 3000))),
			[]string{"highest rate carried 100000 packets/s each way offered (100000 achieved; 200000 through the fabric counting replies), added p99 +0.100 ms; at 150000 packets/s each way: added p99 +3.000 ms, loss 0.00%: **met**"}},
		{"a clean fabric run counts even when its baseline lost packets", cat(pk(100000, 0, 2.5, 100), lossyBaseline(pk(150000, 0, 2, 100))),
			[]string{"highest rate carried 150000 packets/s each way offered"}},
		{"a baseline varying less than the distance from the limit does not matter", cat(pk(10000, 0, 9, 100), noisyBaseline(pk(50000, 0, 4, 3000, 3000, 3000))),
			[]string{"at 50000 packets/s each way: added p99 +3.000 ms, loss 0.00%: **not met**"}},
	} {
		got := goalLines(c.results)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: goals lack %q:\n%s", c.name, w, got)
			}
		}
	}
}

// A probe that could not keep its rate does not carry it, whatever its latency.
func TestPacketsCarriedNeedsTheRate(t *testing.T) {
	rs := pk(100000, 0, 2, 100)
	rs[0].Runs[0].Probe.RateAchv = 94000
	if st, _ := packetsCarried(rs, rs[0]); st != notCarried {
		t.Error("94% of the offered rate counted as carried")
	}
	rs[0].Runs[0].Probe.RateAchv = 95000
	if st, _ := packetsCarried(rs, rs[0]); st != carried {
		t.Error("95% of the offered rate not carried")
	}
}

func TestOtherGoals(t *testing.T) {
	tcp := func(group string, streams int, bw int64, gbps ...float64) CaseResult {
		c := CaseResult{Case: Case{Group: group, Delay: time.Millisecond, Streams: streams, Bandwidth: bw}}
		if group == GroupBaseline {
			c.Case = Case{Group: group, For: GroupTCP, Streams: streams}
		}
		for _, g := range gbps {
			c.Runs = append(c.Runs, Repeat{TCP: &IperfResult{GoodputBps: g * 1e9, Seconds: 5, MSS: 1448}})
		}
		return c
	}
	results := []CaseResult{
		{Case: Case{Group: GroupAccuracy, Delay: 10 * time.Millisecond, Rate: 1000}, Runs: runs(
			ProbeResult{P50us: 20150, P99us: 20900}, ProbeResult{P50us: 20100, P99us: 21500}, ProbeResult{P50us: 20200, P99us: 20950})},
		{Case: Case{Group: GroupAccuracy, Delay: time.Millisecond, Rate: 20000}, Runs: runs(ProbeResult{P50us: 2600, P99us: 4000})},
		{Case: Case{Group: GroupJitter, Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Rate: 100}, Runs: runs(
			ProbeResult{MinUs: 16100, P10us: 17800, P50us: 20050, P90us: 22300, P99us: 23500})},
		{Case: Case{Group: GroupJitter, Delay: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Rate: 100}, Runs: runs(
			ProbeResult{MinUs: 35800, P10us: 37800, P50us: 40050, P90us: 42300, P99us: 43500})},
		tcp(GroupTCP, 1, 0, 6, 4, 5.5), tcp(GroupBaseline, 1, 0, 20), tcp(GroupTCP, 4, 0, 4.9),
		tcp(GroupBandwidth, 1, 1_000_000, 0.000_96), tcp(GroupBandwidth, 1, 100_000_000, 0.094, 0.0965, 0.0966),
		{Case: Case{Group: GroupLoss, Delay: time.Millisecond, Loss: 0.1, Rate: 1000}, Runs: runs(ProbeResult{Sent: 10000, Loss: 0.19})},
	}
	got := goalLines(results)
	for _, w := range []string{
		"Delay accuracy (RTT median within ±5% +0.2 ms of 2x the delay, p99 within 1 ms of the median): met in 1 of 2 cases (10ms@1000pps): **not met**",
		"Jitter 10ms±2ms: RTT never below 2x(delay-jitter), median at 2x delay, p10–p90 width within ±25% of the uniform model's: min 16.100 ms (floor 16.000), p50 20.050 ms, p99 23.500 ms, p10–p90 4.500 ms (model 4.422): **met**",
		// One packet faster than 2x(delay - jitter) is a packet the fabric sent early.
		"Jitter 20ms±2ms: RTT never below 2x(delay-jitter), median at 2x delay, p10–p90 width within ±25% of the uniform model's: min 35.800 ms (floor 36.000)",
		"Bulk TCP, 1 stream(s), 1 ms link, no bandwidth limit: ≥ 5 Gbit/s: 5.50 (4.00–6.00) Gbit/s (loopback in one node: 20.00): **met**",
		"Bulk TCP, 4 stream(s), 1 ms link, no bandwidth limit: ≥ 5 Gbit/s: 4.90 Gbit/s: **not met**",
		"TCP goodput within ±5% of the configured bandwidth (1 ms link, one stream; ratio goodput/configured): 1 Mbit/s: 0.960, 100 Mbit/s: 0.965 (0.940–0.966): **met**",
		"Loss: 10% configured -> within ±2% one way: 10.00% measured one way: **met**",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("goals lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "packets/s through the fabric") {
		t.Errorf("a packets goal without a packets case:\n%s", got)
	}
	if strings.Contains(got, "floor 36.000), p50 40.050 ms, p99 43.500 ms, p10–p90 4.500 ms (model 4.422): **met**") {
		t.Errorf("a packet below the floor passed:\n%s", got)
	}
	// Bandwidth off by more than 5% (an ideal 96.5% is within it; 94% is not).
	if g := goalLines([]CaseResult{tcp(GroupBandwidth, 1, 10_000_000, 0.0094)}); !strings.Contains(g, "10 Mbit/s: 0.940: **not met**") {
		t.Errorf("10 Mbit/s at 94%%: %s", g)
	}
}

func TestJitterModel(t *testing.T) {
	// The sum of two uniform draws on [-J, J] is at most 2J away from 0 and its p10–p90 width
	// is 2.21 J: at J = 1 ms, 2211 µs.
	if got := jitterExpected(time.Millisecond); got < 2210 || got > 2212 {
		t.Errorf("jitterExpected(1ms) = %v µs, want ~2211", got)
	}
	if got := idealGoodputShare(1448); got < 0.9653 || got > 0.9654 {
		t.Errorf("idealGoodputShare(1448) = %v, want 1448/1500", got)
	}
}

func TestMarkdown(t *testing.T) {
	results := slices.Concat(pk(10000, 0, 9, 100, 200, 150), []CaseResult{
		{Case: Case{Group: GroupAccuracy, Delay: 10 * time.Millisecond, Rate: 1000}, Runs: runs(ProbeResult{P50us: 20150, P99us: 20900})},
		{Case: Case{Group: GroupLoss, Delay: time.Millisecond, Loss: 0.1, Rate: 1000}, Runs: runs(ProbeResult{Sent: 10000, Loss: 0.19})},
		{Case: Case{Group: GroupBandwidth, Delay: time.Millisecond, Bandwidth: 10_000_000, Streams: 1},
			Runs: []Repeat{{TCP: &IperfResult{GoodputBps: 9.65e6, MSS: 1448, Congestion: "bbr"}}}},
	})
	res := &Result{Header: benchkit.Header{Command: "continuum bench testbed", Machine: "test machine"}, Repeats: 3, Congestion: "bbr", Cases: results}
	md := Markdown(res)
	for _, want := range []string{"Regenerate with:\n\n```\ncontinuum bench testbed\n```", "- Machine: test machine", "Each case runs 3 time(s)",
		"TCP congestion control: the host's default, `bbr` (/proc/sys/net/ipv4/tcp_congestion_control); iperf3 in the nodes reported bbr.",
		"## Result against the goals\n\n- Delay accuracy",
		"## Delay accuracy", "| 10ms | 1000 | 20.00 | 20.150 |",
		"## Small packets through a 1 ms link", "| 10000 | 10000 (10000–10000) |", "| 0.050 / 0.200 | +0.100 (+0.100–+0.100) | +0.150 (+0.100–+0.200) |",
		"## Bandwidth accuracy", "| 10 Mbit/s | 9.650 | 0.965 | 1.000 |",
		"## Loss accuracy", "| 10% | 10000 | 19.00% | 10.00% |", "raw results (JSON)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, absent := range []string{"## Jitter", "## Bulk TCP"} {
		if strings.Contains(md, absent) {
			t.Errorf("markdown has %q without a case for it", absent)
		}
	}
}

func TestFabricWindow(t *testing.T) {
	before := fabric.Stats{CPU: time.Second, Threads: 3, Links: []fabric.LinkStats{{Packets: 100, Bytes: 10000}, {Packets: 50, Bytes: 5000}}}
	after := fabric.Stats{CPU: 1500 * time.Millisecond, Threads: 3, Realtime: 3, Links: []fabric.LinkStats{{Packets: 100100, Bytes: 10010000}, {Packets: 100050, Bytes: 10005000}}}
	w := fabricWindow(before, after, 2*time.Second, 1)
	if w.Packets != 200000 || w.Bytes != 20000000 || w.CPUSeconds != 0.5 || w.Cores != 0.5 || w.CPUPerPacketUs != 2.5 ||
		w.PacketsPerSec() != 200000 || w.Seconds != 2 || w.ActiveSeconds != 1 || w.Realtime != 3 {
		t.Errorf("fabricWindow = %+v", w)
	}
	// Without a known active time (or one longer than the window) the window is the active time.
	if w := fabricWindow(before, after, 2*time.Second, 5); w.ActiveSeconds != 2 || w.Cores != 0.25 {
		t.Errorf("active time beyond the window: %+v", w)
	}
	if w := fabricWindow(before, before, time.Second, 0); w.CPUPerPacketUs != 0 || w.PacketsPerSec() != 0 {
		t.Errorf("an idle window: %+v", w)
	}
}
