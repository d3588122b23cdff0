package results

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Fabric is a run's "fabric" in summary.json: what the emulated network carried and what it
// cost, measured by the platform that emulates it (the testbed's fabric) over the run's sampling
// period, and whether the emulation distorted the run (Distortion). Absent for runs on a
// platform whose network is real (Kubernetes): not measured there.
type Fabric struct {
	// PacketsPerS and MbitS are what the nodes sent through it (FabricLoad).
	PacketsPerS float64 `json:"packets_per_s"`
	MbitS       float64 `json:"mbit_s"`
	// CPUCoresMean is the emulator's CPU time over the period in cores; CPUCoresMax the
	// busiest sampling interval's.
	CPUCoresMean float64 `json:"cpu_cores_mean"`
	CPUCoresMax  float64 `json:"cpu_cores_max"`
	// Delivered packets reached their node; Late* is how much later than scheduled, over the
	// whole period (one distribution, not a mean of the intervals' percentiles), in µs.
	Delivered uint64  `json:"delivered"`
	LateP50US float64 `json:"late_p50_us"`
	LateP99US float64 `json:"late_p99_us"`
	LateMaxUS float64 `json:"late_max_us"`
	// Drops by reason; UnexplainedDrops (and Unexplained, by reason) those that no configured
	// loss, queue limit, partition or cut link explains.
	Drops            map[string]uint64 `json:"drops"`
	UnexplainedDrops uint64            `json:"unexplained_drops"`
	Unexplained      map[string]uint64 `json:"unexplained_by_reason,omitempty"`
	// HostCPUs is how many CPUs the host had (0: not known); HostBusyMax the most of them the
	// nodes and the emulator used together in one sampling interval, in cores.
	HostCPUs    int     `json:"host_cpus,omitempty"`
	HostBusyMax float64 `json:"host_busy_max,omitempty"`
	// Threads the emulator ran on, RealtimeThreads of them at real-time priority.
	Threads         int `json:"threads"`
	RealtimeThreads int `json:"realtime_threads"`
	// Distorted says the emulation, not the system under test, may have been the limit;
	// Distortion says why, with the figures (Distortion).
	Distorted  bool         `json:"distorted"`
	Distortion []string     `json:"distortion,omitempty"`
	Links      []FabricLink `json:"links,omitempty"`
}

// FabricLink is one link direction's totals in Fabric.
type FabricLink struct {
	From      string            `json:"from"`
	To        string            `json:"to"`
	Packets   uint64            `json:"packets"`
	Bytes     uint64            `json:"bytes"`
	Delivered uint64            `json:"delivered"`
	LateP50US float64           `json:"late_p50_us"`
	LateP99US float64           `json:"late_p99_us"`
	Drops     map[string]uint64 `json:"drops,omitempty"`
}

// The distortion rule's limits (docs/testbed.md, "When the testbed distorts a run").
const (
	// DistortLateP99US: the emulator's added queueing p99 over the run, in µs.
	DistortLateP99US = 1000
	// DistortMinDelivered: below this many delivered packets a p99 is a handful of packets
	// (10 of 1000), so the rule looks at the maximum instead, against DistortLateMaxUS.
	DistortMinDelivered = 1000
	DistortLateMaxUS    = 5000
	// DistortCPUCores: the emulator's CPU in one sampling interval, in cores.
	DistortCPUCores = 0.9
	// DistortHostShare: the share of the host's CPUs the nodes and the emulator used together
	// in a sampling interval; DistortHostIntervals: in how many intervals at least (one busy
	// second, a JVM starting, is not yet a run that measured the host).
	DistortHostShare     = 0.9
	DistortHostIntervals = 3
)

// Distortion applies the distortion rule to a run's fabric figures and its network.csv rows and
// returns the reasons, each with its figures; none means the run was not distorted. The run is
// distorted when
//
//   - the emulator's added queueing p99 over the run exceeds 1 ms: the network the system saw
//     was slower than the one configured. With fewer than 1000 packets delivered the p99 rests
//     on a few packets and one late wake-up of a busy host would decide it, so such a run is
//     judged by its maximum against 5 ms instead: only a stall that long counts;
//   - its CPU exceeded 0.9 cores in any sampling interval: it was at (or near) the end of what
//     it can forward, and its queues, not the configured links, shaped the traffic;
//   - it dropped packets that no configuration explains (its sockets overflowed, a node's
//     kernel refused a write): losses the scenario did not ask for;
//   - the nodes and the emulator together kept more than 90% of the host's CPUs busy in at
//     least 3 sampling intervals: the nodes, which stand for separate machines, waited for
//     each other's CPU, so the run measured the host as much as the system.
//
// It depends only on its arguments, so the same results always give the same verdict.
func Distortion(f Fabric, intervals []NetworkRow) []string {
	var out []string
	switch {
	case f.Delivered >= DistortMinDelivered && f.LateP99US > DistortLateP99US:
		out = append(out, fmt.Sprintf("the fabric delivered packets up to %s late (p99 over the run %s > %s)",
			msText(f.LateMaxUS), msText(f.LateP99US), limitText(DistortLateP99US)))
	case f.Delivered > 0 && f.Delivered < DistortMinDelivered && f.LateMaxUS > DistortLateMaxUS:
		out = append(out, fmt.Sprintf("the fabric delivered a packet %s late (> %s; with %d packets delivered, too few for a p99, the maximum decides)",
			msText(f.LateMaxUS), limitText(DistortLateMaxUS), f.Delivered))
	}
	if r := cpuReason(intervals); r != "" {
		out = append(out, r)
	}
	if r := hostReason(f.HostCPUs, intervals); r != "" {
		out = append(out, r)
	}
	if f.UnexplainedDrops > 0 {
		reasons := make([]string, 0, len(f.Unexplained))
		for r := range f.Unexplained {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			a, b := f.Unexplained[reasons[i]], f.Unexplained[reasons[j]]
			return a > b || a == b && reasons[i] < reasons[j]
		})
		parts := make([]string, len(reasons))
		for i, r := range reasons {
			parts[i] = fmt.Sprintf("%s %d", r, f.Unexplained[r])
		}
		text := fmt.Sprintf("%d packets dropped that no configured loss explains", f.UnexplainedDrops)
		if len(parts) > 0 {
			text += " (" + strings.Join(parts, ", ") + ")"
		}
		out = append(out, text)
	}
	return out
}

// cpuReason names the intervals in which the emulator used more than DistortCPUCores: the
// peak, and when (from the first such interval's start to the last one's end).
func cpuReason(intervals []NetworkRow) string {
	over, peak, when := busyIntervals(intervals, DistortCPUCores, func(r NetworkRow) float64 { return r.CPUCores })
	if over == 0 {
		return ""
	}
	upTo := ""
	if over > 1 {
		upTo = "up to "
	}
	return fmt.Sprintf("the fabric used %s%s cores (> %s) %s", upTo, strconv.FormatFloat(peak, 'f', 2, 64),
		strconv.FormatFloat(DistortCPUCores, 'f', -1, 64), when)
}

// hostBusy is what the nodes and the emulator used together in an interval, in cores (the
// emulator alone in a file without the nodes' column).
func hostBusy(r NetworkRow) float64 {
	if math.IsNaN(r.NodesCPUCores) {
		return r.CPUCores
	}
	return r.NodesCPUCores + r.CPUCores
}

// HostBusyMax is the most the nodes and the emulator used together in one interval.
func HostBusyMax(intervals []NetworkRow) float64 {
	peak := 0.0
	for _, r := range intervals {
		peak = math.Max(peak, hostBusy(r))
	}
	return peak
}

// hostReason names the intervals in which the nodes and the emulator kept more than
// DistortHostShare of the host's cpus CPUs busy, when there were DistortHostIntervals of them.
func hostReason(cpus int, intervals []NetworkRow) string {
	if cpus <= 0 {
		return ""
	}
	limit := DistortHostShare * float64(cpus)
	over, peak, when := busyIntervals(intervals, limit, hostBusy)
	if over < DistortHostIntervals {
		return ""
	}
	return fmt.Sprintf("the nodes and the fabric used up to %s of the host's %d CPUs (> %s%%) %s: the nodes, which stand for separate machines, waited for each other's CPU (give them cpus limits that fit the host, or less load)",
		strconv.FormatFloat(peak, 'f', 2, 64), cpus, strconv.FormatFloat(100*DistortHostShare, 'f', -1, 64), when)
}

// busyIntervals counts the intervals in which value exceeds limit and returns the peak and
// when they were (from the first such interval's start to the last one's end, "in N of the M
// intervals" when others lie between).
func busyIntervals(intervals []NetworkRow, limit float64, value func(NetworkRow) float64) (int, float64, string) {
	first, last, over, peak := -1, -1, 0, 0.0
	for i, r := range intervals {
		if v := value(r); v > limit {
			if first < 0 {
				first = i
			}
			last, over, peak = i, over+1, math.Max(peak, v)
		}
	}
	if first < 0 {
		return 0, 0, ""
	}
	from, to := intervals[first].T-intervals[first].IntervalS, intervals[last].T
	when := fmt.Sprintf("from %s s to %s s", secText(from), secText(to))
	if span := last - first + 1; over < span {
		when = fmt.Sprintf("in %d of the %d intervals %s", over, span, when)
	}
	return over, peak, when
}

// msText prints µs as milliseconds with about three significant digits.
func msText(us float64) string {
	ms := us / 1000
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// limitText prints a limit in µs as whole milliseconds ("1 ms").
func limitText(us float64) string { return strconv.FormatFloat(us/1000, 'f', -1, 64) + " ms" }

// secText prints seconds with at most one decimal.
func secText(s float64) string {
	return strconv.FormatFloat(math.Round(math.Max(s, 0)*10)/10, 'f', -1, 64)
}
