package experiment

import (
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/results"
)

// writeNetwork asks a platform that emulates the network (platform.NetworkReporter) what its
// emulation did while the run's sampler ran, writes network.csv and links.csv into the run
// directory, and returns the run's fabric figures with the distortion verdict for summary.json.
// It returns nil on a platform that does not report (its network is real) or when the sampler
// took fewer than two rounds (no interval to report).
func writeNetwork(pf platform.Platform, runDir string, nodes nodesCPU, log *slog.Logger) *results.Fabric {
	nr, ok := pf.(platform.NetworkReporter)
	if !ok {
		return nil
	}
	rep := nr.Network()
	if len(rep.Intervals) == 0 {
		return nil
	}
	// The emulating platform runs the nodes on this host (the testbed): its CPUs are theirs.
	rows, links, f := networkResults(rep, nodes, runtime.NumCPU())
	if err := results.WriteNetwork(filepath.Join(runDir, results.NetworkFile), rows); err != nil {
		log.Warn("writing the network figures failed", "error", err)
	}
	if err := results.WriteLinks(filepath.Join(runDir, results.LinksFile), links); err != nil {
		log.Warn("writing the link figures failed", "error", err)
	}
	return f
}

// nodesCPU is the nodes' CPU per sampling round (samples.csv's node rows summed), which
// network.csv carries beside the emulator's own.
type nodesCPU []struct {
	t     time.Duration
	cores float64
}

func (n *nodesCPU) add(rows []platform.Sample) {
	if len(rows) == 0 {
		return
	}
	sum := 0.0
	for _, s := range rows {
		if s.Component == "" && s.Node != "" {
			sum += s.CPUUtil
		}
	}
	*n = append(*n, struct {
		t     time.Duration
		cores float64
	}{rows[0].T, sum})
}

// at is the nodes' CPU of the round nearest t, within half an interval (NaN: none).
func (n nodesCPU) at(t, interval time.Duration) float64 {
	i := sort.Search(len(n), func(i int) bool { return n[i].t >= t })
	best, bestD := math.NaN(), interval/2+1
	for _, j := range []int{i - 1, i} {
		if j >= 0 && j < len(n) {
			if d := (n[j].t - t).Abs(); d < bestD {
				best, bestD = n[j].cores, d
			}
		}
	}
	return best
}

// networkResults turns a platform's network report into the rows of network.csv and links.csv
// and the run's summary figures, judged by results.Distortion; nodes and hostCPUs say how busy
// the host the nodes ran on was.
func networkResults(rep platform.NetworkReport, nodes nodesCPU, hostCPUs int) ([]results.NetworkRow, []results.LinkRow, *results.Fabric) {
	f := &results.Fabric{Delivered: rep.Late.Count, LateP50US: us(rep.Late.P50), LateP99US: us(rep.Late.P99),
		LateMaxUS: us(rep.Late.Max), Drops: map[string]uint64{}, Threads: rep.Threads, RealtimeThreads: rep.Realtime,
		HostCPUs: hostCPUs}
	var rows []results.NetworkRow
	var period time.Duration
	for _, s := range rep.Intervals {
		r := results.NetworkRow{T: s.T.Seconds(), IntervalS: s.Interval.Seconds(), Packets: float64(s.Packets),
			Bytes: float64(s.Bytes), CPUCores: s.CPUCores, Delivered: float64(s.Late.Count), LateP50US: us(s.Late.P50),
			LateP99US: us(s.Late.P99), LateMaxUS: us(s.Late.Max), ReadLagP99US: us(s.ReadLagP99),
			UnexplainedDrops: float64(s.Unexplained), DropsByReason: floats(s.Drops), NodesCPUCores: s.NodesCPUCores}
		if !s.NodesCPUKnown {
			r.NodesCPUCores = nodes.at(s.T, s.Interval)
		}
		for _, n := range s.Drops {
			r.Drops += float64(n)
		}
		rows = append(rows, r)
		period += s.Interval
		f.CPUCoresMax = max(f.CPUCoresMax, s.CPUCores)
	}
	if period > 0 {
		f.CPUCoresMean = rep.CPU.Seconds() / period.Seconds()
	}
	for r, n := range rep.Drops {
		f.Drops[r] = n
	}
	if len(rep.Unexplained) > 0 {
		f.Unexplained = map[string]uint64{}
		for r, n := range rep.Unexplained {
			f.Unexplained[r] = n
			f.UnexplainedDrops += n
		}
	}
	var links []results.LinkRow
	for _, l := range rep.Links {
		lr := results.LinkRow{From: l.From, To: l.To, Packets: float64(l.Packets), Bytes: float64(l.Bytes),
			Delivered: float64(l.Late.Count), LateP50US: us(l.Late.P50), LateP99US: us(l.Late.P99), LateMaxUS: us(l.Late.Max),
			DropsByReason: floats(l.Drops)}
		fl := results.FabricLink{From: l.From, To: l.To, Packets: l.Packets, Bytes: l.Bytes, Delivered: l.Late.Count,
			LateP50US: lr.LateP50US, LateP99US: lr.LateP99US}
		for r, n := range l.Drops {
			lr.Drops += float64(n)
			if fl.Drops == nil {
				fl.Drops = map[string]uint64{}
			}
			fl.Drops[r] = n
		}
		links = append(links, lr)
		f.Links = append(f.Links, fl)
	}
	f.HostBusyMax = results.HostBusyMax(rows)
	f.Distortion = results.Distortion(*f, rows)
	f.Distorted = len(f.Distortion) > 0
	return rows, links, f
}

func us(d time.Duration) float64 { return float64(d.Microseconds()) }

func floats(m map[string]uint64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}
