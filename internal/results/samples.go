package results

import "math"

// Sample is a row of samples.csv: a node's totals (Component empty) or one instance's, at T
// seconds from the run's start. Counters (CPUSeconds, RxBytes, TxBytes, EnergyJ, IdleEnergyJ)
// are cumulative; the rest are the value at T.
type Sample struct {
	T           float64
	Node        string
	Component   string
	CPUSeconds  float64
	CPUUtil     float64
	RSSBytes    float64
	DiskBytes   float64
	RxBytes     float64
	TxBytes     float64
	PowerW      float64
	EnergyJ     float64
	IdleEnergyJ float64
	// RxPackets and TxPackets are a node row's packets through the testbed's fabric (absent
	// from results written before they were added: 0).
	RxPackets, TxPackets float64
}

// ReadSamples reads a samples.csv (ReadCSV: columns by name, an empty cell is NaN). rx_packets
// and tx_packets came later: results written before them read as 0 packets.
func ReadSamples(path string) ([]Sample, error) {
	var out []Sample
	err := ReadCSV(path, []string{"t_s", "node"}, func(r CSVRow) error {
		v, err := r.Floats("t_s", "cpu_seconds", "cpu_util", "rss_bytes", "disk_bytes", "rx_bytes", "tx_bytes",
			"power_w", "energy_j", "idle_energy_j")
		if err != nil {
			return err
		}
		s := Sample{T: v[0], Node: r.Str("node"), Component: r.Str("component"),
			CPUSeconds: v[1], CPUUtil: v[2], RSSBytes: v[3], DiskBytes: v[4], RxBytes: v[5], TxBytes: v[6],
			PowerW: v[7], EnergyJ: v[8], IdleEnergyJ: v[9]}
		if r.Str("rx_packets") != "" || r.Str("tx_packets") != "" {
			p, err := r.Floats("rx_packets", "tx_packets")
			if err != nil {
				return err
			}
			s.RxPackets, s.TxPackets = p[0], p[1]
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// Usage is one instance's resources over a run, from its samples.
type Usage struct {
	Node string
	// CPUPct is its mean utilisation of one core, in percent; CPUSeconds what it used in all.
	CPUPct, CPUSeconds float64
	// RSSMiB and DiskMiB are the largest seen.
	RSSMiB, DiskMiB float64
	// EnergyJPer30s is its modelled energy per 30 s (seeds/000's window).
	EnergyJPer30s float64
	// NodeNetMbps is its node's traffic, received plus sent, in Mbit/s (every instance there).
	NodeNetMbps float64
}

// Fields is the usage as summary.json's metric fields.
func (u Usage) Fields() map[string]float64 {
	return map[string]float64{"cpu_pct": u.CPUPct, "cpu_seconds": u.CPUSeconds, "rss_mib_max": u.RSSMiB,
		"disk_mib_max": u.DiskMiB, "energy_j_per_30s": u.EnergyJPer30s, "node_net_mbit_s": u.NodeNetMbps}
}

// Usages computes every instance's usage from a run's samples, leaving out those in skip.
func Usages(samples []Sample, skip map[string]bool) map[string]Usage {
	type acc struct {
		u           Usage
		utilSum     float64
		n           int
		first, last Sample
	}
	by := map[string]*acc{}
	nodeFirst, nodeLast := map[string]Sample{}, map[string]Sample{}
	for _, s := range samples {
		if s.Component == "" {
			if _, ok := nodeFirst[s.Node]; !ok {
				nodeFirst[s.Node] = s
			}
			nodeLast[s.Node] = s
			continue
		}
		if skip[s.Component] {
			continue
		}
		a := by[s.Component]
		if a == nil {
			a = &acc{u: Usage{Node: s.Node}, first: s}
			by[s.Component] = a
		}
		a.utilSum += s.CPUUtil
		a.n++
		a.u.RSSMiB, a.u.DiskMiB = math.Max(a.u.RSSMiB, s.RSSBytes/mib), math.Max(a.u.DiskMiB, s.DiskBytes/mib)
		a.last = s
	}
	out := map[string]Usage{}
	for name, a := range by {
		u := a.u
		u.CPUPct = a.utilSum / float64(a.n) * 100
		u.CPUSeconds = a.last.CPUSeconds - a.first.CPUSeconds
		if dt := a.last.T - a.first.T; dt > 0 {
			u.EnergyJPer30s = (a.last.EnergyJ - a.first.EnergyJ) / dt * 30
		}
		if f, l := nodeFirst[u.Node], nodeLast[u.Node]; l.T > f.T {
			u.NodeNetMbps = (l.RxBytes + l.TxBytes - f.RxBytes - f.TxBytes) * 8 / (l.T - f.T) / 1e6
		}
		out[name] = u
	}
	return out
}

const mib = 1 << 20

// FabricLoad is what the testbed's fabric forwarded over a run: packets and bits per second,
// summed over the nodes (each packet is counted once, when its node sends it). ok is false
// without node rows that count packets. docs/testbed.md says up to which packet rate the
// fabric's own delay stays within a millisecond.
func FabricLoad(samples []Sample) (pps, mbps float64, ok bool) {
	first, last := map[string]Sample{}, map[string]Sample{}
	for _, s := range samples {
		if s.Component != "" {
			continue
		}
		if _, ok := first[s.Node]; !ok {
			first[s.Node] = s
		}
		last[s.Node] = s
	}
	var packets, bytes, dt float64
	for node, l := range last {
		f := first[node]
		packets += l.TxPackets - f.TxPackets
		bytes += l.TxBytes - f.TxBytes
		dt = max(dt, l.T-f.T)
	}
	if dt <= 0 || packets <= 0 {
		return 0, 0, false
	}
	return packets / dt, bytes * 8 / dt / 1e6, true
}

// ComponentsOnlyTraffic is the traffic the components exchanged among themselves, in Mbit/s,
// when every workload (named in workloads) runs on a node without a component: each byte
// between two component nodes is counted twice (sent and received), each byte between a
// component node and a workload node once on each side, so (component nodes' rx+tx - other
// nodes' rx+tx) / 2 is what the components sent each other (a store's replication: seeds/000
// Figs. 12, 17, 24). ok is false when a workload shares a component's node, or without samples.
func ComponentsOnlyTraffic(samples []Sample, workloads map[string]bool) (mbps float64, ok bool) {
	compNode, workNode := map[string]bool{}, map[string]bool{}
	first, last := map[string]Sample{}, map[string]Sample{}
	for _, s := range samples {
		switch {
		case s.Component == "":
			if _, ok := first[s.Node]; !ok {
				first[s.Node] = s
			}
			last[s.Node] = s
		case workloads[s.Component]:
			workNode[s.Node] = true
		default:
			compNode[s.Node] = true
		}
	}
	if len(compNode) == 0 {
		return 0, false
	}
	var comp, other, dt float64
	for node, l := range last {
		f := first[node]
		if compNode[node] && workNode[node] {
			return 0, false
		}
		bytes := l.RxBytes + l.TxBytes - f.RxBytes - f.TxBytes
		if compNode[node] {
			comp += bytes
		} else {
			other += bytes
		}
		dt = max(dt, l.T-f.T)
	}
	if dt <= 0 {
		return 0, false
	}
	return max(0, (comp-other)/2) * 8 / dt / 1e6, true
}
