package pool

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/qos"
)

// NoInstanceError is returned by pick when nothing can serve; the handler answers 503 with
// Retry-After.
type NoInstanceError struct {
	service    string
	detail     string
	RetryAfter time.Duration
}

func (e *NoInstanceError) Error() string {
	return fmt.Sprintf("no instance of service %q is available: %s", e.service, e.detail)
}

// Pick chooses the instance for an attempt, skipping those in tried (earlier attempts of the
// same request).
//
// qos uses the pool, then instances on overloaded nodes, then (fallback best-effort) the
// healthy instance with the lowest estimate. The baselines model what they are named after
// and know nothing of the pool: round-robin and random use every candidate (ready, meeting
// the attribute requirements) like kube-proxy behind a NodePort, including instances in
// cooldown; proximity weighs every candidate by the network round trip to it (TCP connect
// time) as proxy-mity does, blind to processing delays.
func (s *Service) Pick(tried []*Instance) (*Instance, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	now := s.now()
	var in *Instance
	switch s.Config.Strategy {
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
			in = set[qos.WeightedIndex(qos.ProximityWeights(s.networkMs(set, now), s.Config.Alpha), rand.Float64())]
		}
	}
	if in != nil {
		return in, nil
	}
	return nil, &NoInstanceError{service: s.Name, detail: s.unavailableLocked(tried), RetryAfter: s.retryAfterLocked(now)}
}

func (s *Service) pickQoSLocked(tried []*Instance) *Instance {
	if set := s.untried(s.pool, tried); len(set) > 0 {
		return s.balanceLocked(set)
	}
	if set := s.untried(s.overflow, tried); len(set) > 0 {
		return s.balanceLocked(set)
	}
	if s.Config.QoS.Fallback != config.FallbackBestEffort {
		return nil
	}
	var best *Instance
	for _, in := range s.untried(s.healthy, tried) {
		if best == nil || better(in, best) {
			best = in
		}
	}
	return best
}

// better orders best-effort candidates: known estimates before unknown ones, lower first.
func better(a, b *Instance) bool {
	if (a.estFrom == estNone) != (b.estFrom == estNone) {
		return b.estFrom == estNone
	}
	return a.Est < b.Est
}

// balanceLocked spreads requests over set (non-empty) as Balance says. An instance on
// probation with a request in flight is passed over while another can take the request.
func (s *Service) balanceLocked(set []*Instance) *Instance {
	s.rr++
	start := int(s.rr % uint64(len(set)))
	var best *Instance
	switch s.Config.Balance {
	case config.BalanceLeastOutstanding:
		// Scanning from a rotating start breaks ties in turn rather than always to the first.
		var bestN int64
		for i := range len(set) {
			in := set[(start+i)%len(set)]
			if n := in.Outstanding.Load(); !busyOnProbation(in) && (best == nil || n < bestN) {
				best, bestN = in, n
			}
		}
	case config.BalanceHeadroom:
		limit := s.Config.QoS.Latency.Duration
		bestScore := math.Inf(1)
		for i := range len(set) {
			in := set[(start+i)%len(set)]
			if sc := qos.HeadroomScore(in.Outstanding.Load(), in.Est, limit); !busyOnProbation(in) && (best == nil || sc < bestScore) {
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
func busyOnProbation(in *Instance) bool {
	return in.probation && in.Outstanding.Load() > 0
}

// untried returns set without the instances in tried, in s.scratch (valid until the next call).
func (s *Service) untried(set, tried []*Instance) []*Instance {
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
func (s *Service) networkMs(set []*Instance, now time.Time) []float64 {
	ls := make([]float64, len(set))
	for i, in := range set {
		d := s.Config.Probe.Timeout.Duration
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
func (s *Service) unavailableLocked(tried []*Instance) string {
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
	for _, r := range []string{"in pool", ReasonNotReady, reasonAttributes, reasonCooldown, reasonAwaitingProbe,
		ReasonHold, reasonUnprobed, reasonLatency, reasonSuccessRate, reasonOverloaded} {
		if counts[r] > 0 {
			msg += fmt.Sprintf(", %d %s", counts[r], r)
		}
	}
	if len(tried) > 0 {
		msg += fmt.Sprintf(", %d already tried by this request", len(tried))
	}
	return msg
}
