package netbench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Groups of cases, each judged against one of the fabric's goals (docs/benchmarks/testbed.md
// states them); the baseline group is what the packets and tcp groups are compared with.
const (
	GroupAccuracy  = "accuracy"  // RTT vs configured delay, 1/10/50 ms at 1k and 20k packets/s
	GroupJitter    = "jitter"    // RTT distribution vs configured delay ± jitter
	GroupPackets   = "packets"   // 64 B UDP at rising rates through a 1 ms link
	GroupTCP       = "tcp"       // iperf3 bulk TCP, 1 and 4 streams, no bandwidth limit
	GroupBandwidth = "bandwidth" // iperf3 goodput vs a configured bandwidth
	GroupLoss      = "loss"      // 10% configured loss
	GroupBaseline  = "baseline"  // the packets and tcp cases inside one node over loopback
)

// Case is one measurement: a 2-node testbed whose link has Delay, Jitter, Loss and Bandwidth,
// measured either with the UDP probe (Rate packets/s of Size-byte payloads each way) or, when
// Streams > 0, with an iperf3 TCP test of that many streams, for Duration.
type Case struct {
	Group string `json:"group"`
	// For is, on a baseline case, the group it is the baseline of.
	For       string        `json:"for,omitempty"`
	Delay     time.Duration `json:"delay"`
	Jitter    time.Duration `json:"jitter,omitempty"`
	Loss      float64       `json:"loss"`
	Bandwidth int64         `json:"bandwidth_bps,omitempty"` // 0 = unlimited
	Rate      int           `json:"rate,omitempty"`          // UDP packets/s each way
	Size      int           `json:"size,omitempty"`          // UDP payload bytes
	Streams   int           `json:"streams,omitempty"`       // iperf3 -P; 0 = a UDP probe case
	Duration  time.Duration `json:"duration"`
}

// TCP says whether the case runs iperf3 rather than the UDP probe.
func (c Case) TCP() bool { return c.Streams > 0 }

// String names the case in progress lines and errors.
func (c Case) String() string {
	s := c.Group
	if c.For != "" {
		s += "(" + c.For + ")"
	}
	s += fmt.Sprintf(" delay %v", c.Delay)
	if c.Jitter > 0 {
		s += fmt.Sprintf("±%v", c.Jitter)
	}
	if c.Loss > 0 {
		s += fmt.Sprintf(" loss %.0f%%", c.Loss*100)
	}
	if c.Bandwidth > 0 {
		s += " bw " + mbit(float64(c.Bandwidth))
	}
	if c.TCP() {
		return s + fmt.Sprintf(" tcp x%d %v", c.Streams, c.Duration)
	}
	return s + fmt.Sprintf(" %d pps %d B %v", c.Rate, c.Size, c.Duration)
}

// mbit renders bits/s as "100 Mbit/s".
func mbit(bps float64) string { return fmt.Sprintf("%g Mbit/s", bps/1e6) }

// PacketRates are the small-packet case's rates, packets/s each way: the goal is 200k
// packets/s through the fabric, i.e. 100k each way with the replies.
var PacketRates = []int{10000, 25000, 50000, 75000, 100000}

// BandwidthsMbit are the configured bandwidths whose TCP goodput is checked.
var BandwidthsMbit = []int64{1, 10, 100, 1000}

// Cases returns the benchmark's cases; quick keeps a few short ones (a smoke test of every group).
func Cases(quick bool) []Case {
	d := func(long, short time.Duration) time.Duration {
		if quick {
			return short
		}
		return long
	}
	var cs []Case
	for _, delay := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
		if quick && delay != time.Millisecond {
			continue
		}
		cs = append(cs, Case{Group: GroupAccuracy, Delay: delay, Rate: 1000, Size: 64, Duration: d(10*time.Second, 2*time.Second)})
		cs = append(cs, Case{Group: GroupAccuracy, Delay: delay, Rate: 20000, Size: 64, Duration: d(5*time.Second, time.Second)})
	}
	// 100 packets/s: 10 ms apart, more than the 4 ms a packet's delay can vary, so the link's FIFO
	// order never holds a packet behind an earlier one and the RTT is the sum of two uniform draws.
	cs = append(cs, Case{Group: GroupJitter, Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Rate: 100, Size: 64,
		Duration: d(10*time.Second, 3*time.Second)})
	for _, rate := range PacketRates {
		if quick && rate != 10000 && rate != 50000 {
			continue
		}
		c := Case{Group: GroupPackets, Delay: time.Millisecond, Rate: rate, Size: 64, Duration: d(5*time.Second, time.Second)}
		cs = append(cs, c, Case{Group: GroupBaseline, For: GroupPackets, Rate: rate, Size: 64, Duration: c.Duration})
	}
	for _, streams := range []int{1, 4} {
		if quick && streams != 1 {
			continue
		}
		c := Case{Group: GroupTCP, Delay: time.Millisecond, Streams: streams, Duration: d(5*time.Second, 2*time.Second)}
		cs = append(cs, c, Case{Group: GroupBaseline, For: GroupTCP, Streams: streams, Duration: c.Duration})
	}
	for _, bw := range BandwidthsMbit {
		if quick && bw != 10 && bw != 100 {
			continue
		}
		cs = append(cs, Case{Group: GroupBandwidth, Delay: time.Millisecond, Bandwidth: bw * 1_000_000, Streams: 1, Duration: d(10*time.Second, 3*time.Second)})
	}
	cs = append(cs, Case{Group: GroupLoss, Delay: time.Millisecond, Loss: 0.10, Rate: 1000, Size: 64, Duration: d(10*time.Second, 3*time.Second)})
	return cs
}

// Select keeps the cases of the named groups (all when groups is empty), with the baselines of
// the groups kept (a figure "added over the baseline" needs its baseline in the same run). A
// group no case has is an error naming the groups there are.
func Select(cases []Case, groups []string) ([]Case, error) {
	if len(groups) == 0 {
		return cases, nil
	}
	var have []string
	for _, c := range cases {
		if !slices.Contains(have, c.Group) {
			have = append(have, c.Group)
		}
	}
	for _, g := range groups {
		if !slices.Contains(have, g) {
			return nil, fmt.Errorf("no case group %q (groups: %s)", g, strings.Join(have, ", "))
		}
	}
	var out []Case
	for _, c := range cases {
		if slices.Contains(groups, c.Group) || (c.Group == GroupBaseline && slices.Contains(groups, c.For)) {
			out = append(out, c)
		}
	}
	return out, nil
}
