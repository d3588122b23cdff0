package experiment

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/report"
)

// buildSummary makes summary.json (docs/results-format.md) from the runs' records and stats.
func buildSummary(name string, started, finished time.Time, records []runRecord) report.Summary {
	s := report.Summary{Schema: 1, Scenario: name, Started: started.UTC().Format(time.RFC3339),
		Finished: finished.UTC().Format(time.RFC3339)}
	groupIdx := map[string]int{}
	for _, rec := range records {
		params := map[string]any{}
		for k, v := range rec.Params {
			params[k] = v
		}
		sr := report.SummaryRun{ID: rec.ID, Params: params, Repeat: rec.Repeat, Status: rec.Status, Error: rec.Error,
			Metrics: runMetrics(rec)}
		s.Runs = append(s.Runs, sr)
		key := paramsKey(rec.Params)
		gi, ok := groupIdx[key]
		if !ok {
			gi = len(s.Groups)
			groupIdx[key] = gi
			s.Groups = append(s.Groups, report.Group{Params: params})
		}
		s.Groups[gi].Runs = append(s.Groups[gi].Runs, rec.ID)
	}
	byID := map[string]report.SummaryRun{}
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
		g.Metrics = map[string]map[string]report.Aggregate{}
		for metric, fields := range values {
			g.Metrics[metric] = map[string]report.Aggregate{}
			for f, vs := range fields {
				g.Metrics[metric][f] = aggregateOf(vs)
			}
		}
	}
	return s
}

// runMetrics reads every workload's stats.json of a run into metric -> field -> value.
func runMetrics(rec runRecord) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, w := range rec.workloads {
		b, err := os.ReadFile(filepath.Join(rec.dir, "workloads", w, "stats.json"))
		if err != nil {
			continue // the workload never got to write it; the report says what is missing
		}
		var st loadgen.Stats
		if json.Unmarshal(b, &st) != nil {
			continue
		}
		for series, ss := range st.Series {
			p := w + "/" + series + "/"
			l := ss.Latency
			m[p+"latency_ms"] = map[string]float64{"count": float64(l.Count), "mean": l.Mean, "p50": l.P50,
				"p90": l.P90, "p99": l.P99, "p999": l.P999, "max": l.Max}
			m[p+"throughput_rps"] = map[string]float64{"value": ss.ThroughputRPS}
			m[p+"errors"] = map[string]float64{"value": float64(ss.Errors)}
		}
	}
	for metric, fields := range kindMetrics(rec) {
		m[metric] = fields
	}
	return m
}

func paramsKey(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k+"="+p[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, "\x00")
}

// aggregateOf is the mean and the 95% confidence interval of the mean (Student's t) of vs; with
// one value the interval is that value.
func aggregateOf(vs []float64) report.Aggregate {
	n := len(vs)
	var sum float64
	for _, v := range vs {
		sum += v
	}
	mean := sum / float64(n)
	a := report.Aggregate{N: n, Mean: mean, CI95: [2]float64{mean, mean}}
	if n < 2 {
		return a
	}
	var ss float64
	for _, v := range vs {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	half := tQuantile975(n-1) * sd / math.Sqrt(float64(n))
	a.CI95 = [2]float64{mean - half, mean + half}
	return a
}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < len(table) {
		return table[df]
	}
	if df < 60 {
		return 2.00
	}
	if df < 120 {
		return 1.98
	}
	return 1.96
}
