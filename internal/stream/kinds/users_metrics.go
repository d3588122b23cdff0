package kinds

import (
	"math"
	"path/filepath"
	"sort"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/stream/streamload"
)

// Metrics of a stream-users run, for summary.json:
//
//   - stream/<instance>/<architecture>: the accounting of streamload.json (sent, acked,
//     received, lost, duplicated, mismatched, ...), users and payload_bytes (so the report
//     can compare architectures whatever the sweep), and drain_after_<action>_s per heal,
//     restart or start event: from the event until the last record sent before it arrived
//     (the offline and crash scenarios' time to drain);
//   - stream-resources/<component>: CPU (% of one core), memory (MiB) and its node's network
//     (Mbit/s), mean and max over the run's samples (seeds/003 Fig. 6 shows both);
//   - stream-fabric: the testbed fabric's packets/s, mean and max over the sampling intervals.
func usersMetrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var r streamload.Report
		if results.ReadJSON(filepath.Join(in.OutDir, streamload.ReportFile), &r) != nil {
			continue
		}
		arch := "unknown"
		if c, ok := in.Config.(*UsersConfig); ok {
			arch = c.Architecture
		}
		f := map[string]float64{"users": float64(r.Users), "requests": float64(r.Requests), "payload_bytes": float64(r.Payload),
			"planned": float64(r.Planned), "sent": float64(r.Sent), "acked": float64(r.Acked), "unacked": float64(r.Unacked),
			"received": float64(r.Received), "received_unacked": float64(r.ReceivedUnacked), "lost": float64(r.Lost),
			"duplicated": float64(r.Duplicated), "mismatched": float64(r.Mismatched), "foreign": float64(r.Foreign),
			"partial": float64(r.Partial), "reconnects": float64(r.Reconnects), "resyncs": float64(r.Resyncs), "max_latency_ms": r.MaxLatencyMS,
			"records_per_s": r.RecordsPerS, "cpu_cores": r.CPUCores}
		if v := r.Verify; v != nil {
			f["db_records"], f["db_missing"], f["db_mismatched"], f["db_unexpected"] =
				float64(v.Records), float64(v.Missing), float64(v.Mismatched), float64(v.Unexpected)
			if v.Error != "" {
				f["db_read_failed"] = 1
			}
		}
		for action, s := range drains(out, in.OutDir, r.T0UnixUS) {
			f["drain_after_"+action+"_s"] = s
		}
		m["stream/"+in.Name+"/"+arch] = f
	}
	if len(m) == 0 {
		return nil
	}
	if samples, err := results.ReadSamples(out.Samples); err == nil {
		resourceMetrics(samples, m)
	}
	return m
}

// drains computes, per heal/restart/start event, the seconds from it until the last record
// sent before it was received (the largest over events of the same action). A record never
// received does not count (it is lost, reported as such).
func drains(out kind.RunOutput, dir string, t0us int64) map[string]float64 {
	type row struct{ t, last float64 }
	var rows []row
	_ = results.ReadCSV(filepath.Join(dir, streamload.TimelineFile), streamload.TimelineHeader, func(r results.CSVRow) error {
		v, err := r.Floats("t_s", "received", "last_receipt_s")
		if err == nil && v[1] > 0 {
			rows = append(rows, row{v[0], v[2]})
		}
		return err
	})
	d := map[string]float64{}
	t0 := float64(t0us) / 1e6
	for _, e := range out.Events {
		switch e.Action {
		case "heal", "restart", "start":
		default:
			continue
		}
		at := float64(out.T0.UnixMicro())/1e6 + e.At.Seconds() - t0 // the event on the timeline's clock
		drain := 0.0
		for _, r := range rows {
			if r.t+1 <= at { // every record of that second was sent before the event
				drain = math.Max(drain, r.last-at)
			}
		}
		d[e.Action] = math.Max(d[e.Action], drain)
	}
	return d
}

// resourceMetrics adds stream-resources/<component> and stream-fabric from the run's samples.
func resourceMetrics(samples []results.Sample, m map[string]map[string]float64) {
	type acc struct {
		n                              int
		cpuSum, cpuMax, rssSum, rssMax float64
		node                           string
	}
	comps := map[string]*acc{}
	nodes := map[string][]results.Sample{}
	for _, s := range samples {
		if s.Component == "" {
			nodes[s.Node] = append(nodes[s.Node], s)
			continue
		}
		a := comps[s.Component]
		if a == nil {
			a = &acc{node: s.Node}
			comps[s.Component] = a
		}
		a.n++
		cpu, rss := s.CPUUtil*100, s.RSSBytes/(1<<20)
		if !math.IsNaN(cpu) {
			a.cpuSum += cpu
			a.cpuMax = math.Max(a.cpuMax, cpu)
		}
		if !math.IsNaN(rss) {
			a.rssSum += rss
			a.rssMax = math.Max(a.rssMax, rss)
		}
	}
	// Per node: the network rate over each sampling interval; per second index: the fabric's
	// packets (every node's sends) over the same intervals.
	netMean, netMax := map[string]float64{}, map[string]float64{}
	fabric := map[float64]float64{}
	var fabricDT = map[float64]float64{}
	for node, ss := range nodes {
		sort.Slice(ss, func(i, j int) bool { return ss[i].T < ss[j].T })
		var sum float64
		var n int
		for i := 1; i < len(ss); i++ {
			dt := ss[i].T - ss[i-1].T
			if dt <= 0 {
				continue
			}
			rate := (ss[i].RxBytes + ss[i].TxBytes - ss[i-1].RxBytes - ss[i-1].TxBytes) * 8 / dt / 1e6
			sum += rate
			n++
			netMax[node] = math.Max(netMax[node], rate)
			key := math.Round(ss[i].T)
			fabric[key] += ss[i].TxPackets - ss[i-1].TxPackets
			fabricDT[key] = math.Max(fabricDT[key], dt)
		}
		if n > 0 {
			netMean[node] = sum / float64(n)
		}
	}
	for name, a := range comps {
		if a.n == 0 {
			continue
		}
		m["stream-resources/"+name] = map[string]float64{"cpu_pct_mean": a.cpuSum / float64(a.n), "cpu_pct_max": a.cpuMax,
			"rss_mib_mean": a.rssSum / float64(a.n), "rss_mib_max": a.rssMax,
			"node_net_mbit_s_mean": netMean[a.node], "node_net_mbit_s_max": netMax[a.node]}
	}
	var sum, peak float64
	var n int
	for k, p := range fabric {
		if dt := fabricDT[k]; dt > 0 {
			pps := p / dt
			sum += pps
			n++
			peak = math.Max(peak, pps)
		}
	}
	if n > 0 {
		m["stream-fabric"] = map[string]float64{"packets_per_s_mean": sum / float64(n), "packets_per_s_max": peak}
	}
}
