package results

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Run is a run's run.json: what was run and how it ended.
type Run struct {
	ID string `json:"id"`
	// Params maps each swept path to its value in this run, as written in the scenario.
	Params Params `json:"params"`
	// Labels maps a swept path to the short name of its value, for values too long to print
	// (a whole component list); paths without a label are printed as their value.
	Labels    map[string]string `json:"labels,omitempty"`
	Repeat    int               `json:"repeat"`
	Started   time.Time         `json:"started"`
	DurationS float64           `json:"duration_s"`
	WarmupS   float64           `json:"warmup_s"`
	Status    string            `json:"status"` // ok, interrupted, failed
	Error     string            `json:"error,omitempty"`
	Seed      int64             `json:"seed,omitempty"`
	Testbed   string            `json:"testbed,omitempty"`
	// Platform is what the run ran on ("testbed", "kubernetes") and LinkEmulation how that platform
	// emulated its links (platform.LinkDescriber). Absent in results written before they were
	// recorded.
	Platform      string `json:"platform,omitempty"`
	LinkEmulation string `json:"links,omitempty"`
	// T0 is the wall time the run's clock started (events.csv's t_s counts from it).
	T0 time.Time `json:"t0,omitzero"`
	// Instances are the run's components and workloads with their kinds, so the report shows
	// a system's section only for runs where that system ran. Absent in results written before
	// it was recorded.
	Instances []Instance `json:"instances,omitempty"`
}

// Instance is a component or workload of a run, as run.json names it.
type Instance struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Node string `json:"node"`
	// Outputs, for a workload, are the files its kind writes into workloads/<name>/: the report
	// flags those absent and draws request charts only for a workload that writes LoadFiles'
	// series. Absent for components, and in results written before it was recorded, for which
	// the report expects LoadFiles.
	Outputs []string `json:"outputs,omitempty"`
}

// Summary is summary.json: every run's metrics, and the sweep combinations aggregated across
// their repeats.
type Summary struct {
	Schema   int          `json:"schema"`
	Scenario string       `json:"scenario"`
	Started  string       `json:"started"`
	Finished string       `json:"finished"`
	Runs     []SummaryRun `json:"runs"`
	Groups   []Group      `json:"groups"`
}

// Params maps each swept path of a run to its value as written in the scenario: a scalar's
// text, or flow YAML for a list or mapping.
type Params map[string]string

// UnmarshalJSON accepts numbers and booleans as values too (results written by hand or by other
// tools), keeping their JSON text.
func (p *Params) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Params, len(raw))
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return err
		}
		switch x.(type) {
		case float64, bool:
			out[k] = string(v)
		default:
			return fmt.Errorf("parameter %q: want a string, number or boolean, got %s", k, v)
		}
	}
	*p = out
	return nil
}

// Label is how a swept value is shown: its short label when it has one, else the value.
func Label(params Params, labels map[string]string, path string) string {
	if l, ok := labels[path]; ok && l != "" {
		return l
	}
	return params[path]
}

// Metrics maps a metric name ("<workload>/<series>/latency_ms", "kv/all/converged_after_heal_s")
// to its fields ("p50", "count", "value").
type Metrics map[string]map[string]float64

// SummaryRun is one run's entry in summary.json.
type SummaryRun struct {
	ID      string            `json:"id"`
	Params  Params            `json:"params"`
	Labels  map[string]string `json:"labels,omitempty"`
	Repeat  int               `json:"repeat"`
	Status  string            `json:"status"`
	Error   string            `json:"error,omitempty"`
	Metrics Metrics           `json:"metrics"`
	// Fabric is the emulated network's own figures and the distortion verdict; nil on a
	// platform that does not emulate the network (not measured there).
	Fabric *Fabric `json:"fabric,omitempty"`
}

// Group is one sweep combination with every metric field aggregated across its repeats.
type Group struct {
	Params  Params                          `json:"params"`
	Labels  map[string]string               `json:"labels,omitempty"`
	Runs    []string                        `json:"runs"`
	Metrics map[string]map[string]Aggregate `json:"metrics"`
}

// Aggregate is a metric field across the repeats of a group: mean and Student-t 95% CI.
type Aggregate struct {
	N    int        `json:"n"`
	Mean float64    `json:"mean"`
	CI95 [2]float64 `json:"ci95"`
}

// Aggregated returns the mean of vs and the 95% confidence interval of that mean (Student's t);
// with one value the interval is that value. vs must not be empty.
func Aggregated(vs []float64) Aggregate {
	n := len(vs)
	var sum float64
	for _, v := range vs {
		sum += v
	}
	mean := sum / float64(n)
	a := Aggregate{N: n, Mean: mean, CI95: [2]float64{mean, mean}}
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

// One is a single value as an aggregate of one repeat.
func One(v float64) Aggregate { return Aggregate{N: 1, Mean: v, CI95: [2]float64{v, v}} }

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

// Millis is d in milliseconds, the unit of every latency and duration in the results (the
// *_ms fields and columns), kept to the microsecond so that the files do not carry clock noise.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
