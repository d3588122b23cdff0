package pool

import (
	"context"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
)

// proximityMargin is how much later than the nearest instance's probe answer the first
// requests of a proximity service wait for the other probes. An instance whose probe has
// not answered by then is at least that much farther, so its proximity term
// exp(-l/2) is below e^-10 (0.005%) of the nearest one's: nothing left to wait for.
const proximityMargin = 20 * time.Millisecond

// maxConcurrentProbes bounds one service's probes in flight, so that re-estimating a large
// service does not open hundreds of connections at once.
const maxConcurrentProbes = 16

// Activate starts the service's background work on its first request: every candidate is
// probed at once (the initial estimate) and then as maintain schedules; initDone is closed
// when the initial probes are done. wg tracks the maintainer, which returns when ctx ends.
func (s *Service) Activate(ctx context.Context, wg *sync.WaitGroup) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.active {
		return
	}
	s.ActivateLocked()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.maintain(ctx)
	}()
}

// ActivateLocked marks every candidate due for its initial probe.
func (s *Service) ActivateLocked() {
	s.active = true
	s.ActiveFlag.Store(true)
	now := s.now()
	s.initStart = now
	pending := 0
	for _, in := range s.order {
		in.probeDue = now
		if in.disc.Ready && in.attrOK {
			in.initProbe = true
			pending++
		}
	}
	s.initPending = pending
}

// initAnsweredLocked wakes the requests waiting in waitInit after an initial probe answered.
func (s *Service) initAnsweredLocked() {
	close(s.initProgress)
	s.initProgress = make(chan struct{})
}

// WaitInit holds a request of a newly active service until its initial probes can route it,
// and no longer: the probes answer in the order of the round trips, and the farthest
// instance (the cloud, 160 ms in the QEdgeProxy set-up) would otherwise delay the first
// requests of a service that a near instance could serve at once.
func (s *Service) WaitInit(ctx context.Context) {
	if s.initSettled.Load() {
		return
	}
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		s.Mu.Lock()
		wait := s.initWaitLocked(s.now())
		progress := s.initProgress
		s.Mu.Unlock()
		if wait <= 0 {
			// Once requests are routed, later ones have nothing to wait for, even if the
			// pool empties again before the last initial probe answers.
			s.initSettled.Store(true)
			return
		}
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-progress:
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// initWaitLocked is how much longer a request should wait for the initial probes (<= 0: route
// now).
//   - qos: until the pool has a member. An instance whose probe has not answered within
//     the latency limit cannot join the pool (its probe is over the limit), so the wait ends
//     there too, and best effort takes over.
//   - proximity: until proximityMargin after the nearest probe answered; the instances still
//     unprobed then weigh as far as their probes have been running (strategy.go).
//   - always: at most one probe timeout, and not once every initial probe answered.
func (s *Service) initWaitLocked(now time.Time) time.Duration {
	if s.initPending <= 0 {
		return 0
	}
	deadline := s.Config.Probe.Timeout.Duration
	switch s.Config.Strategy {
	case config.StrategyQoS:
		if len(s.pool) > 0 {
			return 0
		}
		if limit := s.Config.QoS.Latency.Duration; limit > 0 {
			deadline = min(deadline, limit)
		}
	case config.StrategyProximity:
		nearest, ok := time.Duration(0), false
		for _, in := range s.candidates {
			if in.netKnown && (!ok || in.net < nearest) {
				nearest, ok = in.net, true
			}
		}
		if ok {
			deadline = min(deadline, nearest+proximityMargin)
		}
	default:
		return 0
	}
	return deadline - now.Sub(s.initStart)
}

// maintain re-evaluates time-driven state and runs due probes until ctx ends, then waits for
// its probes. It sleeps until the next due probe, cooldown end or hold end, or until woken
// (a failure, a discovery change, a re-estimation).
func (s *Service) maintain(ctx context.Context) {
	var probes sync.WaitGroup
	defer probes.Wait()
	sem := make(chan struct{}, maxConcurrentProbes)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		due, next := s.schedule()
		for _, in := range due {
			probes.Add(1)
			go func() {
				defer probes.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				res, err := s.probe(ctx, in)
				<-sem
				if ctx.Err() == nil {
					s.ProbeDone(in, res, err)
				}
			}()
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.kick:
		}
	}
}

// schedule re-evaluates every instance (cooldowns and holds end with time alone), marks the
// instances whose probe is due as probing and returns them with the time until the next
// thing to do.
func (s *Service) schedule() ([]*Instance, time.Duration) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	now := s.now()
	changed := false
	for _, in := range s.order {
		changed = s.evalLocked(in, now) || changed
	}
	if changed {
		s.rebuildLocked(now)
	}
	s.Spares.sweep()
	interval := s.Config.Probe.Interval.Duration
	next := now.Add(interval) // at least this often: samples age, estimates fall back to probes
	var due []*Instance
	soonest := func(t time.Time) {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	for _, in := range s.order {
		soonest(in.cooldownUntil)
		soonest(in.holdUntil)
		if !in.disc.Ready || !in.attrOK || in.probing {
			continue
		}
		at := s.probeAtLocked(in, now)
		if at.After(now) {
			soonest(at)
			continue
		}
		in.probing, in.reprobe, in.probeStarted = true, false, now
		due = append(due, in)
	}
	return due, max(next.Sub(now), time.Millisecond)
}

// probeAtLocked is when an instance should be probed next. Instances outside the pool are
// probed every interval (so that they can rejoin without traffic); instances in it only when
// no response has refreshed their estimate for an interval.
func (s *Service) probeAtLocked(in *Instance, now time.Time) time.Time {
	if now.Before(in.cooldownUntil) {
		return in.cooldownUntil
	}
	if in.needsProbe || in.reprobe || in.probeDue.IsZero() {
		return now
	}
	at := in.probeDue
	if in.InPool {
		if last := in.win.LastAt(); !last.IsZero() && last.Add(s.Config.Probe.Interval.Duration).After(at) {
			at = last.Add(s.Config.Probe.Interval.Duration)
		}
	}
	return at
}
