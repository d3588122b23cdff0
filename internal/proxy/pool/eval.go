package pool

import (
	"fmt"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
)

// evalLocked recomputes an instance's estimate and pool membership; it reports whether the
// reason it is (not) in the pool changed.
func (s *Service) evalLocked(in *Instance, now time.Time) bool {
	c := s.Config
	if in.InPool && in.evictions > 0 && now.Sub(in.since) >= c.Cooldown.Max.Duration {
		in.evictions = 0 // stable long enough: the next eviction starts from the base hold
	}
	s.estimateLocked(in, now)
	reason, why := s.reasonLocked(in, now)
	// Leaving the pool for a QoS reason starts a hold that grows with repeated evictions, and
	// clears the window: the samples that caused the eviction must not keep the instance out
	// after the hold, or an instance that no traffic reaches could never show it recovered.
	// After the hold the estimate comes from probes; with TCP probes (network only) a slow
	// service shows itself again on its first request and is held twice as long.
	//
	// The eviction also starts a new epoch: answers to requests sent before it (in flight
	// when it happened) are discarded when they arrive, or the late answers of the requests
	// that were already on their way to a slow instance would refill the window and keep it
	// out until they age out (estimate.max_age), probes or not. The probe estimate is stale
	// too, so the instance is probed now, during the hold: after the hold its estimate is
	// that fresh probe until requests sent after the eviction measure it.
	if in.InPool && c.Strategy == config.StrategyQoS && (reason == reasonLatency || reason == reasonSuccessRate) {
		in.evictions++
		hold := backoff(c.Cooldown, in.evictions)
		in.holdUntil = now.Add(hold)
		in.holdWhy = fmt.Sprintf("left the pool: %s; held %v (eviction %d in a row)", why, hold, in.evictions)
		in.win.Clear()
		in.Epoch.Add(1)
		in.probation = false
		if !in.probing {
			in.probeDue = now
		}
		s.wake()
		s.estimateLocked(in, now)
		reason, why = ReasonHold, in.holdWhy
	}
	changed := reason != in.reason
	in.reason, in.Why = reason, why
	if inPool := reason == ""; inPool != in.InPool {
		in.InPool, in.since = inPool, now
		// Back from a QoS eviction: its probe cannot tell whether the service recovered (a
		// TCP probe does not see processing), so its first request tells, alone.
		in.probation = inPool && in.evictions > 0 && c.Strategy == config.StrategyQoS
		if c.Strategy == config.StrategyQoS {
			want := 0
			if inPool {
				want = sparesPerInstance
			}
			s.Spares.setWant(in.Addr, want)
		}
		s.m.PoolChange(s.Name, in.disc.ID, inPool, reason)
		if inPool {
			s.log.Debug("instance joined the pool", "service", s.Name, "instance", in.disc.ID, "estimate", in.Est)
		} else {
			s.log.Debug("instance left the pool", "service", s.Name, "instance", in.disc.ID, "reason", reason, "why", why)
		}
	}
	return changed
}

func (s *Service) estimateLocked(in *Instance, now time.Time) {
	q, n := in.win.Quantile(s.Config.QoS.Percentile, now.Add(-s.Config.Estimate.MaxAge.Duration))
	in.Samples = n
	switch {
	case n > 0:
		in.Est, in.estFrom = q, EstFromTraffic
	case in.rttKnown && in.rttEpoch == in.Epoch.Load():
		in.Est, in.estFrom = in.rtt, estFromProbe
	default:
		in.Est, in.estFrom = 0, estNone
	}
	in.success, in.outcomes = in.win.SuccessRate()
}

// reasonLocked says why an instance is not in the pool ("" if it is). The order matters: the
// first reason is the one to fix first.
func (s *Service) reasonLocked(in *Instance, now time.Time) (string, string) {
	c := s.Config
	limit := c.QoS.Latency.Duration
	switch {
	case !in.disc.Ready:
		return ReasonNotReady, "discovery reports it not ready"
	case !in.attrOK:
		return reasonAttributes, in.attrWhy
	case now.Before(in.cooldownUntil):
		return reasonCooldown, fmt.Sprintf("%d failure(s) in a row, last: %s", in.failures, in.lastErr)
	case in.needsProbe:
		return reasonAwaitingProbe, "cooldown over; rejoins after a successful probe"
	case now.Before(in.holdUntil):
		return ReasonHold, in.holdWhy
	case limit > 0 && in.estFrom == estNone && in.rttKnown:
		return reasonUnprobed, "no probe since it left the pool"
	case limit > 0 && in.estFrom == estNone:
		return reasonUnprobed, "no latency estimate yet"
	case limit > 0 && in.Est > limit:
		return reasonLatency, fmt.Sprintf("p%g estimate %s > %v (from %s)", c.QoS.Percentile, fmtMs(in.Est), limit, in.estFrom)
	case s.minOutcomes > 0 && in.outcomes >= s.minOutcomes && in.success < c.QoS.MinSuccessRate:
		return reasonSuccessRate, fmt.Sprintf("success rate %.4f < %v over %d requests", in.success, c.QoS.MinSuccessRate, in.outcomes)
	case in.overloaded:
		return reasonOverloaded, "node CPU or memory above the overload threshold"
	}
	return "", ""
}

// rebuildLocked recomputes the selection sets and, for the qos strategy, starts a
// re-estimation when the pool holds less than PoolMinShare of the candidates.
func (s *Service) rebuildLocked(now time.Time) {
	s.candidates, s.pool, s.overflow, s.healthy = s.candidates[:0], s.pool[:0], s.overflow[:0], s.healthy[:0]
	for _, in := range s.order {
		switch in.reason {
		case ReasonNotReady, reasonAttributes:
			continue
		}
		s.candidates = append(s.candidates, in)
		switch in.reason {
		case "":
			s.pool = append(s.pool, in)
		case reasonOverloaded:
			s.overflow = append(s.overflow, in)
		}
		if in.reason != reasonCooldown && in.reason != reasonAwaitingProbe {
			s.healthy = append(s.healthy, in)
		}
	}
	s.m.SetPoolSize(s.Name, len(s.pool), len(s.candidates))
	// Instances not probed yet are being probed anyway and are not a shrinking pool.
	probed := 0
	for _, in := range s.candidates {
		if in.reason != reasonUnprobed {
			probed++
		}
	}
	if !s.active || s.Config.Strategy != config.StrategyQoS || probed == 0 {
		return
	}
	if float64(len(s.pool)) >= s.Config.QoS.PoolMinShare*float64(probed) {
		return
	}
	// Probing every candidate at most once per probe interval: the pool is small, so the
	// estimates of the instances outside it are checked now rather than at their turn.
	if !s.lastReestimate.IsZero() && now.Sub(s.lastReestimate) < s.Config.Probe.Interval.Duration {
		return
	}
	s.lastReestimate = now
	s.reestimations++
	s.m.Reestimation(s.Name)
	for _, in := range s.candidates {
		if !in.probing && !now.Before(in.cooldownUntil) {
			in.reprobe = true
		}
	}
	s.wake()
}
