package results

// Stats is a workload's stats.json. Series is the part other tools read; the other fields
// describe the run that produced it.
type Stats struct {
	Series    map[string]SeriesStats `json:"series"`
	Status    string                 `json:"status"`
	DurationS float64                `json:"duration_s"`
	WarmupS   float64                `json:"warmup_s"`
	// MeasuredS is the window throughput is computed over: from the end of the warm-up to the
	// end of sending.
	MeasuredS float64 `json:"measured_s"`
}

// SeriesStats is one series of stats.json. It counts only requests intended after the warm-up.
type SeriesStats struct {
	Latency       LatencyStats     `json:"latency_ms"`
	Sent          int64            `json:"sent"`
	OK            int64            `json:"ok"`
	Errors        int64            `json:"errors"`
	ThroughputRPS float64          `json:"throughput_rps"`
	ErrorsByType  map[string]int64 `json:"errors_by_type"`
	// QoS is set when the workload had a QoS latency.
	QoS *QoSStats `json:"qos,omitempty"`
	// Instances counts requests by serving instance, for workloads whose answers name it.
	Instances map[string]InstanceStats `json:"instances,omitempty"`
}

// LatencyStats summarises the successful requests' latency in milliseconds.
type LatencyStats struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Fields is the latency summary as summary.json's metric fields ("count", "mean", "p50", ...).
func (l LatencyStats) Fields() map[string]float64 {
	return map[string]float64{"count": float64(l.Count), "mean": l.Mean, "p50": l.P50, "p90": l.P90,
		"p99": l.P99, "p999": l.P999, "max": l.Max}
}

// QoSStats is how many requests met a response-time requirement: succeeded within LatencyMS.
// Total is every request intended after the warm-up, so errors and timeouts count as misses.
type QoSStats struct {
	LatencyMS float64 `json:"latency_ms"`
	Within    int64   `json:"within"`
	Total     int64   `json:"total"`
	WithinPct float64 `json:"within_pct"` // 100 * Within / Total; 0 when Total is 0
	// Below counts the successes within each of the workload's latency bounds, in the order the
	// workload gave them. Empty without bounds.
	Below []QoSBelow `json:"below"`
}

// QoSBelow is how many requests succeeded within LatencyMS.
type QoSBelow struct {
	LatencyMS float64 `json:"latency_ms"`
	Count     int64   `json:"count"`
}

// InstanceStats is one serving instance of a series (requests intended after the warm-up).
type InstanceStats struct {
	Requests int64 `json:"requests"`
	OK       int64 `json:"ok"`
	Errors   int64 `json:"errors"`
	// Share is Requests over all the series' requests after the warm-up (0..1).
	Share  float64 `json:"share"`
	MeanMS float64 `json:"mean_ms"` // mean latency of the successful ones; 0 if none
}

// NoInstance labels requests that no instance answered (the request failed before reaching one,
// or the balancer answered itself), in stats.json and instances.csv.
const NoInstance = "(none)"
