package experiment

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/results"
)

// buildSummary makes summary.json (docs/results-format.md) from the runs' records and stats.
func buildSummary(name string, started, finished time.Time, records []runRecord) results.Summary {
	s := results.Summary{Schema: results.Schema, Scenario: name, Started: started.UTC().Format(time.RFC3339),
		Finished: finished.UTC().Format(time.RFC3339)}
	groupIdx := map[string]int{}
	for _, rec := range records {
		sr := results.SummaryRun{ID: rec.ID, Params: rec.Params, Labels: rec.Labels, Repeat: rec.Repeat,
			Status: rec.Status, Error: rec.Error, Metrics: runMetrics(rec), Fabric: rec.fabric}
		if f := sr.Fabric; f != nil {
			// The figures a sweep compares across repeats go into the metrics too (aggregated in
			// the groups); the run's own fabric entry has them all, with the reasons.
			m := sr.Metrics["fabric"]
			if m == nil {
				m = map[string]float64{}
				sr.Metrics["fabric"] = m
			}
			f.PacketsPerS, f.MbitS = m["packets_per_s"], m["mbit_s"]
			m["cpu_cores_max"], m["late_p99_us"], m["unexplained_drops"] = f.CPUCoresMax, f.LateP99US, float64(f.UnexplainedDrops)
		}
		s.Runs = append(s.Runs, sr)
		key := paramsKey(rec.Params)
		gi, ok := groupIdx[key]
		if !ok {
			gi = len(s.Groups)
			groupIdx[key] = gi
			s.Groups = append(s.Groups, results.Group{Params: rec.Params, Labels: rec.Labels})
		}
		s.Groups[gi].Runs = append(s.Groups[gi].Runs, rec.ID)
	}
	byID := map[string]results.SummaryRun{}
	for _, r := range s.Runs {
		byID[r.ID] = r
	}
	for gi := range s.Groups {
		g := &s.Groups[gi]
		values := map[string]map[string][]float64{}
		for _, id := range g.Runs {
			for metric, fields := range byID[id].Metrics {
				if values[metric] == nil {
					values[metric] = map[string][]float64{}
				}
				for f, v := range fields {
					values[metric][f] = append(values[metric][f], v)
				}
			}
		}
		g.Metrics = map[string]map[string]results.Aggregate{}
		for metric, fields := range values {
			g.Metrics[metric] = map[string]results.Aggregate{}
			for f, vs := range fields {
				g.Metrics[metric][f] = results.Aggregated(vs)
			}
		}
	}
	return s
}

// runMetrics reads every workload's stats.json of a run into metric -> field -> value, and adds
// what the kinds report of their own instances.
func runMetrics(rec runRecord) results.Metrics {
	m := results.Metrics{}
	for _, w := range rec.workloads {
		var st results.Stats
		if results.ReadJSON(filepath.Join(results.WorkloadDir(rec.dir, w), results.StatsFile), &st) != nil {
			continue // the workload never got to write it (or wrote it badly); the report says so
		}
		for series, ss := range st.Series {
			p := w + "/" + series + "/"
			m[p+"latency_ms"] = ss.Latency.Fields()
			m[p+"throughput_rps"] = map[string]float64{"value": ss.ThroughputRPS}
			m[p+"errors"] = map[string]float64{"value": float64(ss.Errors)}
		}
	}
	for metric, fields := range kindMetrics(rec) {
		m[metric] = fields
	}
	for metric, fields := range resourceMetrics(rec) {
		m[metric] = fields
	}
	return m
}

// resourceMetrics summarises a run's samples.csv: resources/<component> per component
// instance (results.Usage), and "resources", the components together: CPU, RSS and energy
// summed, the largest disk, and the traffic among the components' nodes alone when no workload
// shares them. Workloads and helper components (kind.Kind.Helper) are left out: these are the
// resources of the system under test.
func resourceMetrics(rec runRecord) map[string]map[string]float64 {
	samples, err := results.ReadSamples(filepath.Join(rec.dir, results.SamplesFile))
	if err != nil {
		return nil // the run never got to sample; the report says so
	}
	workloads, skip := map[string]bool{}, map[string]bool{}
	for _, w := range rec.workloads {
		workloads[w], skip[w] = true, true
	}
	for _, in := range rec.instances {
		if k, ok := kind.Lookup(in.Kind); ok && k.Helper {
			skip[in.Name] = true
		}
	}
	us := results.Usages(samples, skip)
	if len(us) == 0 {
		return nil
	}
	m := map[string]map[string]float64{}
	total := map[string]float64{"instances": float64(len(us))}
	for name, u := range us {
		m["resources/"+name] = u.Fields()
		total["cpu_pct"] += u.CPUPct
		total["rss_mib"] += u.RSSMiB
		total["energy_j_per_30s"] += u.EnergyJPer30s
		total["disk_mib_max"] = max(total["disk_mib_max"], u.DiskMiB)
	}
	if v, ok := results.ComponentsOnlyTraffic(samples, workloads); ok {
		total["components_only_mbit_s"] = v
	}
	m["resources"] = total
	if pps, mbps, ok := results.FabricLoad(samples); ok {
		m["fabric"] = map[string]float64{"packets_per_s": pps, "mbit_s": mbps}
	}
	return m
}

func paramsKey(p results.Params) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k+"="+p[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, "\x00")
}
