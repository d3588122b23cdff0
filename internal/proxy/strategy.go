package proxy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/qos"
)

// noInstanceError is returned by pick when nothing can serve; the handler answers 503 with
// Retry-After.
type noInstanceError struct {
	service    string
	detail     string
	retryAfter time.Duration
}

func (e *noInstanceError) Error() string {
	return fmt.Sprintf("no instance of service %q is available: %s", e.service, e.detail)
}

// pick chooses the instance for an attempt, skipping those in tried (earlier attempts of the
// same request).
//
// qos uses the pool, then instances on overloaded nodes, then (fallback best-effort) the
// healthy instance with the lowest estimate. The baselines model what they are named after
// and know nothing of the pool: round-robin and random use every candidate (ready, meeting
// the attribute requirements) like kube-proxy behind a NodePort, including instances in
// cooldown; proximity weighs every candidate by the network round trip to it (TCP connect
// time) as proxy-mity does, blind to processing delays.
func (s *service) pick(tried []*instance) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var in *instance
	switch s.cfg.Strategy {
	case config.StrategyQoS:
		in = s.pickQoSLocked(tried)
	case config.StrategyRoundRobin:
		if set := s.untried(s.candidates, tried); len(set) > 0 {
			s.rr++
			in = set[s.rr%uint64(len(set))]
		}
	case config.StrategyRandom:
		if set := s.untried(s.candidates, tried); len(set) > 0 {
			in = set[rand.IntN(len(set))]
		}
	case config.StrategyProximity:
		if set := s.untried(s.candidates, tried); len(set) > 0 {
			in = set[qos.WeightedIndex(qos.ProximityWeights(s.networkMs(set, now), s.cfg.Alpha), rand.Float64())]
		}
	}
	if in != nil {
		return in, nil
	}
	return nil, &noInstanceError{service: s.name, detail: s.unavailableLocked(tried), retryAfter: s.retryAfterLocked(now)}
}

func (s *service) pickQoSLocked(tried []*instance) *instance {
	if set := s.untried(s.pool, tried); len(set) > 0 {
		return s.balanceLocked(set)
	}
	if set := s.untried(s.overflow, tried); len(set) > 0 {
		return s.balanceLocked(set)
	}
	if s.cfg.QoS.Fallback != config.FallbackBestEffort {
		return nil
	}
	var best *instance
	for _, in := range s.untried(s.healthy, tried) {
		if best == nil || better(in, best) {
			best = in
		}
	}
	return best
}

// better orders best-effort candidates: known estimates before unknown ones, lower first.
func better(a, b *instance) bool {
	if (a.estFrom == estNone) != (b.estFrom == estNone) {
		return b.estFrom == estNone
	}
	return a.est < b.est
}

// balanceLocked spreads requests over set (non-empty) as Balance says. An instance on
// probation with a request in flight is passed over while another can take the request.
func (s *service) balanceLocked(set []*instance) *instance {
	s.rr++
	start := int(s.rr % uint64(len(set)))
	var best *instance
	switch s.cfg.Balance {
	case config.BalanceLeastOutstanding:
		// Scanning from a rotating start breaks ties in turn rather than always to the first.
		var bestN int64
		for i := range len(set) {
			in := set[(start+i)%len(set)]
			if n := in.outstanding.Load(); !busyOnProbation(in) && (best == nil || n < bestN) {
				best, bestN = in, n
			}
		}
	case config.BalanceHeadroom:
		limit := s.cfg.QoS.Latency.Duration
		bestScore := math.Inf(1)
		for i := range len(set) {
			in := set[(start+i)%len(set)]
			if sc := qos.HeadroomScore(in.outstanding.Load(), in.est, limit); !busyOnProbation(in) && (best == nil || sc < bestScore) {
				best, bestScore = in, sc
			}
		}
	default:
		for i := range len(set) {
			if in := set[(start+i)%len(set)]; !busyOnProbation(in) {
				best = in
				break
			}
		}
	}
	if best == nil {
		best = set[start] // every member is on probation and busy: no better choice
	}
	return best
}

// busyOnProbation: the instance rejoined after an eviction and its first request since is
// still out (instance.probation).
func busyOnProbation(in *instance) bool {
	return in.probation && in.outstanding.Load() > 0
}

// untried returns set without the instances in tried, in s.scratch (valid until the next call).
func (s *service) untried(set, tried []*instance) []*instance {
	if len(tried) == 0 {
		return set
	}
	out := s.scratch[:0]
outer:
	for _, in := range set {
		for _, t := range tried {
			if in == t {
				continue outer
			}
		}
		out = append(out, in)
	}
	s.scratch = out
	return out
}

// networkMs returns the network round trips to the instances in milliseconds (l_i of
// proxy-mity): the EWMA of TCP connect times, not the response time, so that proximity
// stays the baseline it is named after and knows nothing of processing delays or overload.
// An instance whose first probe is still running is at least as far as that probe has run
// (waitInit routes first requests on this lower bound once it makes the instance's weight
// negligible); one that never answered a probe counts as far as the probe timeout.
func (s *service) networkMs(set []*instance, now time.Time) []float64 {
	ls := make([]float64, len(set))
	for i, in := range set {
		d := s.cfg.Probe.Timeout.Duration
		switch {
		case in.netKnown:
			d = in.net
		case in.probing:
			d = min(d, now.Sub(in.probeStarted))
		}
		ls[i] = float64(d) / float64(time.Millisecond)
	}
	return ls
}

// unavailableLocked explains why nothing could be picked, for the 503 body.
func (s *service) unavailableLocked(tried []*instance) string {
	if len(s.order) == 0 {
		return "discovery reports no instances"
	}
	counts := map[string]int{}
	for _, in := range s.order {
		r := in.reason
		if r == "" {
			r = "in pool"
		}
		counts[r]++
	}
	msg := fmt.Sprintf("%d known", len(s.order))
	for _, r := range []string{"in pool", reasonNotReady, reasonAttributes, reasonCooldown, reasonAwaitingProbe,
		reasonHold, reasonUnprobed, reasonLatency, reasonSuccessRate, reasonOverloaded} {
		if counts[r] > 0 {
			msg += fmt.Sprintf(", %d %s", counts[r], r)
		}
	}
	if len(tried) > 0 {
		msg += fmt.Sprintf(", %d already tried by this request", len(tried))
	}
	return msg
}
