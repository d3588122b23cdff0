package benchkit

import (
	"context"
	"time"
)

// Rule says when an open-loop rate is sustained: the system kept up with it (achieved at least
// MinShare of the offered rate), no request failed, and the tail stayed within MaxP99Ms.
type Rule struct {
	MinShare float64 `json:"min_share"`
	MaxP99Ms float64 `json:"max_p99_ms"`
}

// SustainRule is the rule the benchmarks use: 95% of the rate, no errors, p99 within limit.
func SustainRule(p99Limit time.Duration) Rule {
	return Rule{MinShare: 0.95, MaxP99Ms: float64(p99Limit) / float64(time.Millisecond)}
}

// Outcome is what one open-loop step measured: the offered and achieved rates, the errors and
// the highest p99 over the step's operations (ms).
type Outcome struct {
	Rate     float64
	Achieved float64
	Errors   int64
	P99Ms    float64
}

// Sustained applies the rule. A closed-loop run (Rate 0) is never sustained: it offers no rate.
func (r Rule) Sustained(o Outcome) bool {
	return o.Rate > 0 && o.Errors == 0 && o.P99Ms <= r.MaxP99Ms && o.Achieved >= r.MinShare*o.Rate
}

// Sweep runs open-loop steps at ascending rates until one is no longer sustained.
type Sweep struct {
	// Rates are the steps, ascending.
	Rates []float64
	// AtLeast is the rate every sweep reaches even past a rate not sustained (0: stop at the
	// first), so that figures compared at that rate exist for every system.
	AtLeast float64
	Rule    Rule
}

// Step measures one rate; i is its index in Rates.
type Step func(ctx context.Context, i int, rate float64) (Outcome, error)

// Run calls step for each rate in turn and stops after the first rate, at or above AtLeast, that
// is not sustained. It returns the highest sustained rate with every rate below it sustained too
// (0: not even the first), so a rate that recovers after a failed one does not count. It stops
// at step's first error.
func (s Sweep) Run(ctx context.Context, step Step) (maxSustained float64, err error) {
	all := true
	for i, rate := range s.Rates {
		if err := ctx.Err(); err != nil {
			return maxSustained, err
		}
		o, err := step(ctx, i, rate)
		if err != nil {
			return maxSustained, err
		}
		ok := s.Rule.Sustained(o)
		all = all && ok
		if all {
			maxSustained = rate
		}
		if !ok && rate >= s.AtLeast {
			break
		}
	}
	return maxSustained, nil
}

// Order is the order n alternatives (paths, variants, direct vs proxied) run in at repeat rep,
// counted from 0: alternative (rep+k) mod n runs k-th, so each goes first in turn and a change
// of the machine's load during a repeat does not always fall on the same one.
func Order(rep, n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = (rep + k) % n
	}
	return out
}
