//go:build unix

package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
	_ "github.com/continuum-project/continuum/internal/systems/install"
)

// Made-up results for the shipped scenarios, for the report's tests: each scenario is loaded and
// expanded as `continuum run` does (its real sweep combinations and labels, which are what make
// tables wide), every run gets the files a run writes (run.json naming the instances and kinds,
// events.csv from the scenario's events, samples.csv for every node and component, each
// workload's stats.json, timeseries.csv and percentiles.csv), buildSummary makes summary.json
// from them as the runner does, and the metrics the kinds would have read from their components'
// outputs are added by kind with plausible values (syntheticKindMetrics).

// syntheticResults writes a results directory for the scenario at path, as described above.
func syntheticResults(t *testing.T, path string) string {
	t.Helper()
	sc, err := LoadScenario(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := sc.Expand()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var records []runRecord
	extra := map[string]results.Metrics{}
	for i, r := range runs {
		if r.Repeat > 2 {
			continue // two repeats give the tables their "± CI" cells; more add nothing wider
		}
		rs := r.Scenario
		rdir := results.RunDir(dir, r.ID)
		rec := runRecord{Run: results.Run{ID: r.ID, Params: results.Params(r.Params), Labels: r.Labels, Repeat: r.Repeat,
			Started: t0, DurationS: rs.Duration.Seconds(), WarmupS: rs.Warmup.Seconds(), Seed: rs.Seed, Status: "ok"}, dir: rdir}
		if rec.Params == nil {
			rec.Params = results.Params{}
		}
		rec.instances = append(append([]Instance{}, rs.Components...), rs.Workloads...)
		for _, in := range rec.instances {
			rec.Instances = append(rec.Instances, instanceRecord(in))
		}
		for _, w := range rs.Workloads {
			rec.workloads = append(rec.workloads, w.Name)
			writeSyntheticWorkload(t, results.WorkloadDir(rdir, w.Name), w, rs.Duration.Seconds(), float64(i+1))
		}
		writeSyntheticRunFiles(t, rdir, rs, rec.instances)
		reporttest.WriteJSON(t, filepath.Join(rdir, results.RunFile), rec.Run)
		extra[r.ID] = syntheticKindMetrics(rs, float64(i+1))
		records = append(records, rec)
	}
	s := buildSummary(sc.Name, t0, t0.Add(time.Minute), records)
	for i := range s.Runs {
		for k, v := range extra[s.Runs[i].ID] {
			s.Runs[i].Metrics[k] = v
		}
	}
	for gi := range s.Groups {
		g := &s.Groups[gi]
		vals := map[string]map[string][]float64{}
		for _, id := range g.Runs {
			for k, fields := range extra[id] {
				if vals[k] == nil {
					vals[k] = map[string][]float64{}
				}
				for f, v := range fields {
					vals[k][f] = append(vals[k][f], v)
				}
			}
		}
		for k, fields := range vals {
			g.Metrics[k] = map[string]results.Aggregate{}
			for f, vs := range fields {
				g.Metrics[k][f] = results.Aggregated(vs)
			}
		}
	}
	reporttest.WriteJSON(t, filepath.Join(dir, results.SummaryFile), s)
	return dir
}

// seriesOf names the series a workload kind writes (the ones its report section reads).
func seriesOf(w Instance) []string {
	switch w.Kind {
	case "iot":
		return []string{"t_ex", "t_rr", "t_in"}
	case "pace":
		return []string{"put", "get_lin", "push", "notify", "process"}
	case "freshness":
		return []string{"write", "stale_reader"}
	case "stream-users":
		return []string{"e2e", "ack"}
	case "kv-lag":
		return []string{"lag"}
	case "ycsb":
		return []string{"read", "update"}
	}
	return []string{"all"}
}

func writeSyntheticWorkload(t *testing.T, wdir string, w Instance, duration, k float64) {
	st := results.Stats{Series: map[string]results.SeriesStats{}}
	var ts, pct [][]string
	for j, s := range seriesOf(w) {
		base := 2 + k + float64(j)*7
		st.Series[s] = results.SeriesStats{Latency: results.LatencyStats{Count: 1000, Mean: base * 1.1, P50: base, P90: base * 2,
			P99: base * 4, P999: base * 9, Max: base * 20}, Sent: 1010, OK: 1000, Errors: 10, ThroughputRPS: 100 * k,
			ErrorsByType: map[string]int64{"timeout": 10}}
		for sec := 1.0; sec <= math.Min(duration, 30); sec++ {
			ts = append(ts, []string{fmt.Sprint(sec), s, "101", "100", "1", "100", fmt.Sprint(base), fmt.Sprint(base * 4), fmt.Sprint(base * 20), ""})
		}
		for _, p := range []float64{0, 50, 90, 99, 99.9, 100} {
			pct = append(pct, []string{s, fmt.Sprint(p), fmt.Sprint(base * (1 + p/10)), "1000"})
		}
	}
	reporttest.WriteJSON(t, filepath.Join(wdir, results.StatsFile), st)
	reporttest.WriteCSV(t, filepath.Join(wdir, results.TimeseriesFile),
		[]string{"t_s", "series", "sent", "ok", "errors", "throughput_rps", "p50_ms", "p99_ms", "max_ms", "within_qos"}, ts)
	reporttest.WriteCSV(t, filepath.Join(wdir, results.PercentilesFile), []string{"series", "percentile", "latency_ms", "count"}, pct)
}

// writeSyntheticRunFiles writes events.csv (the scenario's timed events, fired on time) and
// samples.csv (every node and component instance, once a second).
func writeSyntheticRunFiles(t *testing.T, rdir string, sc *Scenario, insts []Instance) {
	var evs [][]string
	for _, ev := range sc.Events {
		at := 0.0
		if ev.At != nil {
			at = ev.At.Seconds()
		}
		evs = append(evs, []string{fmt.Sprintf("%.3f", at+0.003), ev.Action, eventTarget(ev), "", "ok"})
	}
	reporttest.WriteCSV(t, filepath.Join(rdir, results.EventsFile), results.EventsHeader, evs)
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		t.Fatal(err)
	}
	sw, err := newSampleWriter(filepath.Join(rdir, results.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.close()
	nodes := map[string]bool{}
	for _, in := range insts {
		nodes[in.Node] = true
	}
	for sec := 1; sec <= int(math.Min(sc.Duration.Seconds(), 30)); sec++ {
		var rows []platform.Sample
		at := time.Duration(sec) * time.Second
		for n := range nodes {
			rows = append(rows, platform.Sample{T: at, Node: n, CPUSeconds: 0.5 * float64(sec), CPUUtil: 0.5, RSS: 300 << 20,
				RxBytes: uint64(sec) << 20, TxBytes: uint64(sec) << 19, RxPackets: uint64(sec) * 900, TxPackets: uint64(sec) * 800,
				PowerW: 20, EnergyJ: 20 * float64(sec), IdleJ: 15 * float64(sec)})
		}
		for _, in := range insts {
			rows = append(rows, platform.Sample{T: at, Node: in.Node, Component: in.Name, CPUSeconds: 0.2 * float64(sec), CPUUtil: 0.2,
				RSS: 40 << 20, Disk: 8 << 20, PowerW: 2, EnergyJ: 2 * float64(sec)})
		}
		sw.write(rows)
	}
}

// syntheticKindMetrics stands in for what each kind's Metrics would read from its instances'
// outputs: the metric and field names the systems' report sections read, with plausible values.
func syntheticKindMetrics(sc *Scenario, k float64) results.Metrics {
	m := results.Metrics{}
	proxied := false
	for _, c := range sc.Components {
		proxied = proxied || c.Kind == "proxy"
	}
	for _, in := range append(append([]Instance{}, sc.Components...), sc.Workloads...) {
		n := in.Name
		switch in.Kind {
		case "pace":
			m["pace/"+n] = map[string]float64{"processed": 500 * k, "published": 0}
		case "maintenance":
			m["maintenance/"+n] = map[string]float64{"rounds": 12, "compact_ms_p50": 3.5, "defrag_ms_p50": 41.2 * k, "defrag_ms_max": 95.3,
				"downtime_ms_p50": 38.1, "downtime_ms_max": 120.7, "db_before_mib_max": 123.4, "db_after_mib_min": 11.2, "probe_max_ms": 140.1}
		case "freshness":
			m["freshness/"+n] = map[string]float64{"writes": 2400, "write_errors": 3, "outage_ms": 5123.4 * k, "gap_start_s": 10.004,
				"lost_acknowledged": 0, "ended_in_outage": 0, "final_check": 1}
		case "iot":
			m["iot/"+n] = map[string]float64{"batches_due": 100, "batches_ok": 98, "messages_per_s": 4000 * k, "cpu_cores": 0.01}
		case "faas-gateway":
			m["faas/"+n+"/analytics"] = map[string]float64{"cpu_pct": 180, "rss_mib": 400, "mean_ready": 3.5, "max_ready": 5, "scale_events": 2}
		case "stream-users":
			m["stream/"+n+"/edge-cloud"] = map[string]float64{"users": 100 * k, "payload_bytes": 1024, "sent": 1000, "acked": 1000,
				"received": 1000, "lost": 0, "duplicated": 0, "mismatched": 0}
			m["stream-fabric"] = map[string]float64{"packets_per_s_mean": 4000, "packets_per_s_max": 9000}
		case "http-load":
			if proxied {
				m[n+"/all/qos"] = map[string]float64{"latency_ms": 80, "within_pct": 91.5, "within": 915, "total": 1000, "mean_ms": 30}
			}
		}
	}
	if _, ok := m["stream-fabric"]; ok {
		for _, c := range sc.Components {
			m["stream-resources/"+c.Name] = map[string]float64{"cpu_pct_mean": 30, "cpu_pct_max": 90, "rss_mib_mean": 40, "rss_mib_max": 60}
		}
	}
	return m
}
