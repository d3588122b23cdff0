package platform

import "time"

// NetworkReporter is implemented by a platform that emulates the network itself and can say
// how well it did: the testbed, whose userspace fabric carries every packet between nodes and
// can become the limit of what a run measures. The runner asks for the report after Sample has
// returned and writes it into the run's results (network.csv, links.csv, summary.json's
// "fabric"); the report warns when the emulation distorted the run. A platform whose network
// is real (Kubernetes: the cluster's own network, Chaos Mesh's netem) does not implement it,
// and its runs say "not measured on this platform".
type NetworkReporter interface {
	// Network is what the emulated network did while Sample ran: a row per sampling interval
	// and totals over the whole sampling period. It is the zero NetworkReport when Sample never
	// ran. Safe to call from any goroutine; meant for after Sample returned.
	Network() NetworkReport
}

// LinkDescriber is implemented by a platform that can say how it emulates a scenario's links
// (run.json's "links"): on the testbed's fabric, through Chaos Mesh, or not at all.
type LinkDescriber interface {
	Links() string
}

// NetworkReport is the emulated network's own health over a run's sampling period (from the
// sampler's first round to its last), as NetworkReporter gives it.
type NetworkReport struct {
	// Intervals are one row per sampling interval, in time order.
	Intervals []NetworkSample
	// Links are per link direction, totals over the period.
	Links []NetworkLink
	// Late is how late the emulator delivered packets over the whole period, all links: from
	// the merged distribution, not from the intervals' percentiles.
	Late Lateness
	// Drops are the packets the emulator dropped over the period, by reason; Unexplained is
	// the part of them that no configuration (loss, queue limit, partition, cut link)
	// explains, by reason: the emulator (or the kernel under it) failed to carry them.
	Drops       map[string]uint64
	Unexplained map[string]uint64
	// CPU is the emulator's own CPU time over the period; Threads how many threads it ran on,
	// Realtime how many of them at real-time priority.
	CPU      time.Duration
	Threads  int
	Realtime int
}

// NetworkSample is one sampling interval of the emulated network: what it carried, what that
// cost it, how late it delivered. T is the interval's end, on the clock of Sample's rows.
type NetworkSample struct {
	T        time.Duration // end of the interval, since the sampler started (as Sample.T)
	Interval time.Duration // its length
	// Packets and Bytes are cumulative since the sampler started: wire packets (and their IP
	// bytes) carried over links, a packet counted once per link it crossed.
	Packets, Bytes uint64
	// CPUCores is the emulator's own CPU over the interval, in cores.
	CPUCores float64
	// Late is how much later than scheduled the packets delivered in the interval reached
	// their node: the queueing the emulator added beyond the configured delay, jitter and
	// bandwidth.
	Late Lateness
	// ReadLagP99 is the interval's p99 of how long sent packets waited before the emulator
	// read them (already part of Late; it says where lateness came from).
	ReadLagP99 time.Duration
	// Drops (by reason) and Unexplained (their sum over the reasons no configuration
	// explains) are cumulative since the sampler started.
	Drops       map[string]uint64
	Unexplained uint64
	// NodesCPUCores is what every process in the emulated nodes used over the interval, in
	// cores, when the platform measured it itself (NodesCPUKnown): on a Kubernetes cluster
	// whose nodes are a testbed's, the nodes' cgroups hold the cluster's daemons (kubelet,
	// containerd, the API server and its store) besides the run's pods, which the platform's
	// samples do not cover. Without it the runner sums samples.csv's node rows.
	NodesCPUCores float64
	NodesCPUKnown bool
}

// NetworkLink is one link direction's totals over the sampling period.
type NetworkLink struct {
	From, To       string // node names: the direction
	Packets, Bytes uint64
	Drops          map[string]uint64 // by reason
	// Late is the lateness of the packets whose last hop was this direction.
	Late Lateness
}

// Lateness summarises how much later than scheduled an emulator delivered packets.
type Lateness struct {
	Count         uint64 // packets delivered (each one measured)
	P50, P99, Max time.Duration
}
