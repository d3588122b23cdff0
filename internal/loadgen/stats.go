package loadgen

import (
	"math"
	"time"

	"github.com/continuum-project/continuum/internal/results"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func latencyStats(h *hdr.Histogram) results.LatencyStats {
	if h.TotalCount() == 0 {
		return results.LatencyStats{}
	}
	return results.LatencyStats{
		Count: h.TotalCount(),
		Mean:  math.Round(h.Mean()/1e3) / 1e3,
		P50:   nsToMs(h.ValueAtPercentile(50)),
		P90:   nsToMs(h.ValueAtPercentile(90)),
		P99:   nsToMs(h.ValueAtPercentile(99)),
		P999:  nsToMs(h.ValueAtPercentile(99.9)),
		Max:   nsToMs(h.Max()),
	}
}

func computeStats(recs []*recorder, cfg Config, end time.Duration, status string) results.Stats {
	measured := max(end-cfg.Warmup, 0).Seconds()
	st := results.Stats{
		Series:    map[string]results.SeriesStats{},
		Status:    status,
		DurationS: cfg.Duration.Seconds(),
		WarmupS:   cfg.Warmup.Seconds(),
		MeasuredS: measured,
	}
	for _, r := range recs {
		r.mu.Lock()
		ss := results.SeriesStats{
			Latency:      latencyStats(r.total),
			Sent:         r.mSent,
			OK:           r.mOK,
			Errors:       r.mErrs,
			ErrorsByType: map[string]int64{},
		}
		for k, v := range r.errTypes {
			ss.ErrorsByType[k] = v
		}
		if cfg.QoSLatency > 0 {
			q := &results.QoSStats{LatencyMS: float64(cfg.QoSLatency) / 1e6, Within: r.mWithin, Total: r.mSent}
			if q.Total > 0 {
				q.WithinPct = math.Round(float64(q.Within)/float64(q.Total)*1e6) / 1e4
			}
			for i, b := range cfg.LatencyBounds {
				q.Below = append(q.Below, results.QoSBelow{LatencyMS: float64(b) / 1e6, Count: r.mBelow[i]})
			}
			ss.QoS = q
		}
		ss.Instances = instanceStats(r.mInst, r.anyInst)
		r.mu.Unlock()
		if measured > 0 {
			ss.ThroughputRPS = math.Round(float64(ss.OK)/measured*1000) / 1000
		}
		st.Series[r.name] = ss
	}
	judge(&st, cfg.CountSeries)
	return st
}
