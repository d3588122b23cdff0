package testbed

import (
	"context"
	"io/fs"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
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

// Take measures once.
func (s *Sampler) Take() []Sample {
	now := time.Now()
	if s.start.IsZero() {
		s.start, s.last = now, now
	}
	dt := now.Sub(s.last).Seconds()
	s.last = now
	tb := s.tb
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
