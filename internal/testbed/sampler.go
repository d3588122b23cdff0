package testbed

import (
	"context"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// Sampler measures every node and supervised process at a fixed interval and integrates the
// energy model (see docs/testbed.md):
//
//	node power      P = idle_w + (max_w - idle_w) * u,   u = CPU cores used / cores available
//	component power = P_dynamic * (component CPU time / node CPU time) over the interval
//
// "Cores available" is the node's CPU quota, or the host's CPU count when unlimited, so a node
// limited to 1 core running flat out is at full power. Idle power is reported separately and is
// never attributed to components (Kepler's convention).
type Sampler struct {
	tb       *Testbed
	interval time.Duration
	start    time.Time
	last     time.Time
	cpu0     map[string]time.Duration // cumulative CPU at start, by row key
	prevCPU  map[string]time.Duration
	energy   map[string]float64
	idle     map[string]float64
	net      NetworkLog
}

// NewSampler creates a sampler; the first Take establishes the baseline.
func (tb *Testbed) NewSampler(interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = time.Second
	}
	return &Sampler{tb: tb, interval: interval, cpu0: map[string]time.Duration{}, prevCPU: map[string]time.Duration{},
		energy: map[string]float64{}, idle: map[string]float64{}}
}

// Run takes a sample every interval until ctx ends, passing each round to emit.
func (s *Sampler) Run(ctx context.Context, emit func([]Sample)) {
	emit(s.Take())
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// A last interval much shorter than the CFS period would show a CPU-limited node
			// far above its quota (the quota is enforced per 100 ms); keep only a real interval.
			if time.Since(s.last) >= s.interval/2 {
				emit(s.Take())
			}
			return
		case <-t.C:
			emit(s.Take())
		}
	}
}

// Network is what the fabric did between the sampler's first and last rounds
// (platform.NetworkReporter); zero before the second round.
func (s *Sampler) Network() platform.NetworkReport { return s.net.Report() }

// Take measures once.
func (s *Sampler) Take() []Sample {
	now := time.Now()
	if s.start.IsZero() {
		s.start, s.last = now, now
	}
	dt := now.Sub(s.last).Seconds()
	s.last = now
	tb := s.tb
	fst := tb.FabricStats() // at the round's time, not after the cgroup reads below
	fAt := fst.At           // when its CPU was read (Stats may then wait for the fabric's lock)
	procs := tb.Procs()
	var out []Sample
	for _, n := range tb.nodes {
		tb.mu.Lock()
		cpus, power := n.cpus, n.power
		tb.mu.Unlock()
		if cpus <= 0 {
			cpus = float64(runtime.NumCPU())
		}
		row := Sample{T: now.Sub(s.start), Node: n.name}
		nodeCPU, nodeDelta := s.cpu(n.name, n.cgroup)
		row.CPUSeconds = nodeCPU.Seconds()
		if dt > 0 {
			row.CPUUtil = nodeDelta.Seconds() / dt
		}
		row.RSS, _ = tb.cg.rss(n.cgroup)
		c := tb.fab.NodeCounters(n.idx)
		row.RxBytes, row.TxBytes, row.RxPackets, row.TxPackets = c.RxBytes, c.TxBytes, c.RxPackets, c.TxPackets
		u := min(row.CPUUtil/cpus, 1)
		dynamic := (power.MaxW - power.IdleW) * u
		row.PowerW = power.IdleW + dynamic
		s.energy[n.name] += row.PowerW * dt
		s.idle[n.name] += power.IdleW * dt
		row.EnergyJ, row.IdleJ = s.energy[n.name], s.idle[n.name]
		out = append(out, row)
		for _, p := range procs {
			if p.Node != n.name {
				continue
			}
			proc, err := tb.Proc(p.Name)
			if err != nil {
				continue
			}
			key := n.name + "/" + p.Name
			pr := Sample{T: row.T, Node: n.name, Component: p.Name}
			pcpu, pdelta := s.cpu(key, proc.cgroupPath())
			pr.CPUSeconds = pcpu.Seconds()
			if dt > 0 {
				pr.CPUUtil = pdelta.Seconds() / dt
			}
			if nodeDelta > 0 {
				pr.PowerW = dynamic * min(float64(pdelta)/float64(nodeDelta), 1)
			}
			s.energy[key] += pr.PowerW * dt
			pr.EnergyJ = s.energy[key]
			pr.RSS, _ = tb.cg.rss(proc.cgroupPath())
			for _, d := range proc.spec.DataDirs {
				pr.Disk += dirBytes(d)
			}
			out = append(out, pr)
		}
	}
	tb.publishLoad(now, out)
	s.net.Take(now.Sub(s.start), fAt, fst)
	return out
}

// cpu returns the cumulative CPU time of a cgroup since the first sample and the delta since
// the previous one. A restarted component's cgroup counter keeps counting (the cgroup survives
// the restart), so deltas never go negative; if it ever does (cgroup recreated) it restarts at 0.
func (s *Sampler) cpu(key, path string) (cum, delta time.Duration) {
	v, err := s.tb.cg.cpuUsage(path)
	if err != nil {
		return s.prevCPU[key] - s.cpu0[key], 0
	}
	base, seen := s.cpu0[key]
	if !seen {
		s.cpu0[key], s.prevCPU[key] = v, v
		return 0, 0
	}
	prev := s.prevCPU[key]
	if v < prev {
		s.cpu0[key], prev = v-(prev-base), v
	}
	s.prevCPU[key] = v
	return v - s.cpu0[key], v - prev
}

// dirBytes is the disk space (allocated blocks) used by the files under dir.
func dirBytes(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	return total
}

// NetworkLog keeps the fabric's figures over a sampling period: the first snapshot (the
// baseline every cumulative figure counts from), the previous one (each interval is the
// difference of two snapshots, so no packet is counted twice or lost between intervals) and the
// interval rows. Snapshots are cumulative since the fabric started, so taking one costs nothing
// on the packet path beyond a short hold of the fabric's lock. The testbed's Sampler keeps one;
// so does a platform that runs on a testbed it does not host (a Kubernetes cluster's, whose
// fabric's figures it reads through the control socket: Client.FabricStats). Its zero value is
// ready to use.
type NetworkLog struct {
	mu          sync.Mutex // guards everything below: the sampler writes, Network reads
	first, prev fabric.Stats
	prevT       time.Duration
	prevAt      time.Time // when prev's CPU was read
	prevNodes   *NodesCPU // the nodes' CPU at prev (TakeWithNodes), nil: not read
	started     bool
	rows        []platform.NetworkSample
}

// Take records a snapshot st, taken at T t of the sampler's rows and returned at at.
func (l *NetworkLog) Take(t time.Duration, at time.Time, st fabric.Stats) { l.take(t, at, st, nil) }

// TakeWithNodes is Take with the nodes' CPU read in the same round (Client.NodesCPU): the
// interval's row then says how much of the host every process in the nodes used
// (NodesCPUKnown), which a platform whose samples cover only its own pods cannot say.
func (l *NetworkLog) TakeWithNodes(t time.Duration, at time.Time, st fabric.Stats, nodes NodesCPU) {
	l.take(t, at, st, &nodes)
}

func (l *NetworkLog) take(t time.Duration, at time.Time, st fabric.Stats, nodes *NodesCPU) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prevNodes := l.prevNodes
	l.prevNodes = nodes
	if !l.started {
		l.first, l.prev, l.prevT, l.prevAt, l.started = st, st, t, at, true
		return
	}
	row := platform.NetworkSample{T: t, Interval: t - l.prevT, Drops: map[string]uint64{}}
	if nodes != nil && prevNodes != nil {
		row.NodesCPUCores, row.NodesCPUKnown = nodesCores(*prevNodes, *nodes)
	}
	for _, ls := range st.Links {
		row.Packets += ls.Packets
		row.Bytes += ls.Bytes
	}
	for _, ls := range l.first.Links {
		row.Packets -= min(ls.Packets, row.Packets)
		row.Bytes -= min(ls.Bytes, row.Bytes)
	}
	// The CPU rate is over the time between the two CPU reads, not between the rounds' ticks:
	// on a saturated host the sampler (an ordinary thread) may wait long for the fabric's lock
	// while its real-time threads run, and the tick's interval would then hold more CPU time
	// than it lasted. What jitter remains cannot exceed the host's CPUs. The fabric's CPU counts
	// only threads still alive, so it can shrink when one exits: such an interval shows 0.
	if dt := at.Sub(l.prevAt).Seconds(); dt > 0 && st.CPU > l.prev.CPU {
		row.CPUCores = min((st.CPU-l.prev.CPU).Seconds()/dt, float64(runtime.NumCPU()))
	}
	row.Late = lateness(st.Late.Sub(l.prev.Late))
	row.ReadLagP99 = st.ReadLag.Sub(l.prev.ReadLag).Quantile(0.99)
	row.Drops = subDrops(st.Drops, l.first.Drops)
	for r, n := range row.Drops {
		if !fabric.Explained(r) {
			row.Unexplained += n
		}
	}
	l.rows = append(l.rows, row)
	l.prev, l.prevT, l.prevAt = st, t, at
}

// nodesCores is the cores the nodes used together between two readings, over the nodes read
// in both (a counter that went back, its cgroup made anew, counts nothing), at most the host's
// CPUs; ok is false when the readings are not in time order.
func nodesCores(prev, now NodesCPU) (cores float64, ok bool) {
	dt := now.At.Sub(prev.At).Seconds()
	if dt <= 0 {
		return 0, false
	}
	var used time.Duration
	for n, v := range now.Nodes {
		if p, seen := prev.Nodes[n]; seen && v > p {
			used += v - p
		}
	}
	return min(used.Seconds()/dt, float64(runtime.NumCPU())), true
}

// Report is what the fabric did between the first snapshot and the last (platform.NetworkReporter).
func (l *NetworkLog) Report() platform.NetworkReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rows) == 0 {
		return platform.NetworkReport{}
	}
	first, last := l.first, l.prev
	rep := platform.NetworkReport{Intervals: append([]platform.NetworkSample(nil), l.rows...),
		Late: lateness(last.Late.Sub(first.Late)), Drops: subDrops(last.Drops, first.Drops),
		Unexplained: map[string]uint64{}, Threads: last.Threads, Realtime: last.Realtime}
	if last.CPU > first.CPU {
		rep.CPU = last.CPU - first.CPU
	}
	for r, n := range rep.Drops {
		if !fabric.Explained(r) {
			rep.Unexplained[r] = n
		}
	}
	base := map[[2]string]fabric.LinkStats{}
	for _, ls := range first.Links {
		base[[2]string{ls.From, ls.To}] = ls
	}
	for _, ls := range last.Links {
		b := base[[2]string{ls.From, ls.To}]
		rep.Links = append(rep.Links, platform.NetworkLink{From: ls.From, To: ls.To,
			Packets: ls.Packets - min(b.Packets, ls.Packets), Bytes: ls.Bytes - min(b.Bytes, ls.Bytes),
			Drops: subDrops(ls.Drops, b.Drops), Late: lateness(ls.Late.Sub(b.Late))})
	}
	return rep
}

// lateness summarises an interval's (or a period's) histogram. Its maximum is the highest
// non-empty bucket's (within the histogram's ±6%), since Histogram.Max is the fabric's
// all-time maximum and would not belong to the interval.
func lateness(h fabric.Histogram) platform.Lateness {
	return platform.Lateness{Count: h.Count(), P50: h.Quantile(0.5), P99: h.Quantile(0.99), Max: h.Quantile(1)}
}

// subDrops is cur - base by reason, leaving out reasons without drops since base.
func subDrops(cur, base map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for r, n := range cur {
		if d := n - min(base[r], n); d > 0 {
			out[r] = d
		}
	}
	return out
}
