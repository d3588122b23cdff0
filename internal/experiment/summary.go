package experiment

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// buildSummary makes summary.json (docs/results-format.md) from the runs' records and stats.
func buildSummary(name string, started, finished time.Time, records []runRecord) results.Summary {
	s := results.Summary{Schema: results.Schema, Scenario: name, Started: started.UTC().Format(time.RFC3339),
		Finished: finished.UTC().Format(time.RFC3339)}
	groupIdx := map[string]int{}
	for _, rec := range records {
		sr := results.SummaryRun{ID: rec.ID, Params: rec.Params, Labels: rec.Labels, Repeat: rec.Repeat,
			Status: rec.Status, Error: rec.Error, Metrics: runMetrics(rec)}
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
