package report

// QoSStats is stats.json's "qos" of a series: requests that succeeded within LatencyMS.
type QoSStats struct {
	LatencyMS float64 `json:"latency_ms"`
	Within    float64 `json:"within"`
	Total     float64 `json:"total"`
	WithinPct float64 `json:"within_pct"`
	// Below counts the successes within the workload's latency bounds (exact, from loadgen).
	Below []QoSBelow `json:"below"`
}

// QoSBelow is how many requests succeeded within LatencyMS.
type QoSBelow struct {
	LatencyMS float64 `json:"latency_ms"`
	Count     float64 `json:"count"`
}

// InstanceStats is one instance in stats.json's "instances" of a series.
type InstanceStats struct {
	Requests float64 `json:"requests"`
	OK       float64 `json:"ok"`
	Errors   float64 `json:"errors"`
	Share    float64 `json:"share"` // 0..1
	MeanMS   float64 `json:"mean_ms"`
}

// InstancePoint is a row of instances.csv.
type InstancePoint struct {
	T                    float64
	Series, Instance     string
	Requests, OK, Errors float64
	MeanMS               float64
}

// NoInstance is how loadgen labels requests no instance answered.
const NoInstance = "(none)"

func loadInstances(path string, w *Workload) error {
	return readCSV(path, []string{"t_s", "series", "instance", "requests"}, func(r csvRow) error {
		v, err := r.floats("t_s", "requests", "ok", "errors", "mean_ms")
		if err != nil {
			return err
		}
		w.Instances = append(w.Instances, InstancePoint{T: v[0], Series: r.str("series"), Instance: r.str("instance"),
			Requests: v[1], OK: v[2], Errors: v[3], MeanMS: v[4]})
		return nil
	})
}
