package loadgen

import (
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// LatencyStats summarises successful requests' latency in milliseconds.
type LatencyStats struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// SeriesStats is one series of stats.json; it counts only requests intended after the warm-up.
type SeriesStats struct {
	Latency       LatencyStats     `json:"latency_ms"`
	Sent          int64            `json:"sent"`
	OK            int64            `json:"ok"`
	Errors        int64            `json:"errors"`
	ThroughputRPS float64          `json:"throughput_rps"`
	ErrorsByType  map[string]int64 `json:"errors_by_type"`
	// QoS is set when the run had a QoS latency (Config.QoSLatency).
	QoS *QoSStats `json:"qos,omitempty"`
	// Instances counts requests by serving instance, for targets that tell (InstanceTarget).
	Instances map[string]InstanceStats `json:"instances,omitempty"`
}

// QoSStats is how many requests met a response-time requirement: succeeded within LatencyMS.
// Total is every request intended after the warm-up, so errors and timeouts count as misses.
type QoSStats struct {
	LatencyMS float64 `json:"latency_ms"`
	Within    int64   `json:"within"`
	Total     int64   `json:"total"`
	WithinPct float64 `json:"within_pct"` // 100 * Within / Total; 0 when Total is 0
	// Below counts the successes within each of the run's latency bounds (Config.LatencyBounds).
	// Empty without bounds.
	Below []QoSBelow `json:"below"`
}

// QoSBelow is how many requests succeeded within LatencyMS.
type QoSBelow struct {
	LatencyMS float64 `json:"latency_ms"`
	Count     int64   `json:"count"`
}

// Stats is the content of stats.json. Series is the part docs/results-format.md specifies; the
// other fields describe the run.
type Stats struct {
	Series    map[string]SeriesStats `json:"series"`
	Status    string                 `json:"status"`
	DurationS float64                `json:"duration_s"`
	WarmupS   float64                `json:"warmup_s"`
	// MeasuredS is the window throughput is computed over: from the end of the warm-up to the
	// end of sending.
	MeasuredS float64 `json:"measured_s"`
}

func latencyStats(h *hdr.Histogram) LatencyStats {
	if h.TotalCount() == 0 {
		return LatencyStats{}
	}
	return LatencyStats{
		Count: h.TotalCount(),
		Mean:  math.Round(h.Mean()/1e3) / 1e3,
		P50:   nsToMs(h.ValueAtPercentile(50)),
		P90:   nsToMs(h.ValueAtPercentile(90)),
		P99:   nsToMs(h.ValueAtPercentile(99)),
		P999:  nsToMs(h.ValueAtPercentile(99.9)),
		Max:   nsToMs(h.Max()),
	}
}

func computeStats(recs []*recorder, cfg Config, end time.Duration, status string) Stats {
	measured := max(end-cfg.Warmup, 0).Seconds()
	st := Stats{
		Series:    map[string]SeriesStats{},
		Status:    status,
		DurationS: cfg.Duration.Seconds(),
		WarmupS:   cfg.Warmup.Seconds(),
		MeasuredS: measured,
	}
	for _, r := range recs {
		r.mu.Lock()
		ss := SeriesStats{
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
			q := &QoSStats{LatencyMS: float64(cfg.QoSLatency) / 1e6, Within: r.mWithin, Total: r.mSent}
			if q.Total > 0 {
				q.WithinPct = math.Round(float64(q.Within)/float64(q.Total)*1e6) / 1e4
			}
			for i, b := range cfg.LatencyBounds {
				q.Below = append(q.Below, QoSBelow{LatencyMS: float64(b) / 1e6, Count: r.mBelow[i]})
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
	return st
}
