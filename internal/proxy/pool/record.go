package pool

import (
	"net/http"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/qos"
)

// Outcome classifies an attempt's result for the estimate.
type Outcome int

const (
	OutcomeOK       Outcome = iota // an answer (any status but those below)
	OutcomeError                   // a 5xx answer: counts against the success rate
	OutcomeFailure                 // transport error, timeout, 502/503/504: cooldown
	OutcomeCanceled                // the client went away: says nothing about the instance
)

// ClassifyStatus maps an upstream status to an outcome. 502, 503 and 504 mean the instance
// (or what fronts it) could not serve at all, so it cools down; other 5xx are the
// application's answers, which the client gets and the success rate counts.
func ClassifyStatus(code int) Outcome {
	switch {
	case code == http.StatusBadGateway, code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		return OutcomeFailure
	case code >= 500:
		return OutcomeError
	}
	return OutcomeOK
}

// AttemptResult is what one attempt tells about its instance.
type AttemptResult struct {
	// Epoch is the instance's epoch when the attempt started: if it changed since, the
	// instance was evicted meanwhile and the answer says nothing about it as it is now.
	Epoch uint64
	// Lat is the time to the response headers (or to the failure) from the connection being
	// ready: setting up a connection is a cost of the proxy's connection pool, paid once per
	// connection, not of the instance's service (dataplane's transport.go).
	Lat     time.Duration
	Outcome Outcome
	ErrMsg  string
	// sampled: its latency was recorded already, when it passed the limit (observeSlow).
	Sampled bool
}

// observe records the result of an attempt started in the instance's current epoch.
func (s *Service) observe(in *Instance, lat time.Duration, oc Outcome, errMsg string) {
	s.Record(in, AttemptResult{Epoch: in.Epoch.Load(), Lat: lat, Outcome: oc, ErrMsg: errMsg})
}

// Record records an attempt's result. An answer from an earlier epoch (sent before an
// eviction cleared the samples) adds nothing to the window; a failure still starts a
// cooldown, since whether the instance can be reached does not depend on when the
// request was sent.
func (s *Service) Record(in *Instance, r AttemptResult) {
	if r.Outcome == OutcomeCanceled {
		return
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	now := s.now()
	in.served++
	current := r.Epoch == in.Epoch.Load()
	switch r.Outcome {
	case OutcomeOK:
		if !current {
			return // nothing changed
		}
		if !r.Sampled {
			in.win.AddLatency(now, r.Lat)
		}
		in.win.AddOutcome(false)
		in.failures = 0
		if limit := s.Config.QoS.Latency.Duration; limit == 0 || (!r.Sampled && r.Lat <= limit) {
			in.probation = false
		}
	case OutcomeError:
		if !current {
			return
		}
		in.win.AddOutcome(true)
	case OutcomeFailure:
		if current {
			in.win.AddOutcome(true)
			if r.Lat > 0 && r.ErrMsg == ErrTimeoutMsg && !r.Sampled {
				in.win.AddLatency(now, r.Lat) // it was at least this slow
			}
		}
		s.failLocked(in, now, r.ErrMsg)
	}
	if s.evalLocked(in, now) {
		s.rebuildLocked(now)
	}
}

// observeSlow records that an attempt of epoch has waited for its answer longer than the
// latency limit: that answer misses the requirement whatever it turns out to be, so the
// estimate takes it now (as a sample of what it waited so far) rather than when it arrives.
// When a link or an instance turns slow, this evicts it one limit after the first request
// that found it slow was sent instead of one slow response time after, and the requests
// sent to it meanwhile are the misses saved.
func (s *Service) observeSlow(in *Instance, epoch uint64, waited time.Duration) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if epoch != in.Epoch.Load() {
		return
	}
	now := s.now()
	in.win.AddLatency(now, waited)
	if s.evalLocked(in, now) {
		s.rebuildLocked(now)
	}
}

// failLocked starts or extends a cooldown. Failures during a cooldown (requests already in
// flight when it began) do not lengthen it: they are the same outage.
func (s *Service) failLocked(in *Instance, now time.Time, errMsg string) {
	in.lastErr = errMsg
	if now.Before(in.cooldownUntil) {
		return
	}
	in.failures++
	in.cooldownUntil = now.Add(backoff(s.Config.Cooldown, in.failures))
	in.needsProbe = true
	in.probeDue = in.cooldownUntil
	s.wake()
}

// ProbeDone records a probe's result.
func (s *Service) ProbeDone(in *Instance, res probeResult, err error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	now := s.now()
	in.probing = false
	in.probedAt = now
	if in.initProbe {
		in.initProbe = false
		s.initPending--
		// After the instance's membership is settled below: waitInit looks at the pool.
		defer s.initAnsweredLocked()
	}
	in.probeDue = now.Add(s.Config.Probe.Interval.Duration)
	if err != nil {
		in.probeErr = err.Error()
		s.m.Probe(s.Name, false)
		s.failLocked(in, now, "probe: "+err.Error())
	} else {
		in.probeErr = ""
		s.m.Probe(s.Name, true)
		// Probe times are smoothed more lightly than QEdgeProxy's 0.2 so that a network
		// change shows within two or three probes. The first probe of an epoch starts
		// afresh: the probes before an eviction are as stale as the samples.
		epoch := in.Epoch.Load()
		in.rtt = qos.EWMA(in.rtt, res.Lat, 0.5, !in.rttKnown || in.rttEpoch != epoch)
		in.rttKnown, in.rttEpoch = true, epoch
		if res.Net > 0 {
			in.net = qos.EWMA(in.net, res.Net, 0.5, !in.netKnown)
			in.netKnown = true
		}
		in.needsProbe = false
		if s.Config.Probe.Path != "" {
			in.win.AddLatency(now, res.Lat) // an HTTP probe is a full response, like traffic
		}
	}
	if s.evalLocked(in, now) {
		s.rebuildLocked(now)
	}
}

// retryAfter is when the client may find an instance: the end of the earliest cooldown or hold,
// at least a second (Retry-After has a one-second resolution).
func (s *Service) retryAfterLocked(now time.Time) time.Duration {
	best := time.Duration(0)
	for _, in := range s.candidates {
		until := in.cooldownUntil
		if in.holdUntil.After(until) {
			until = in.holdUntil
		}
		d := until.Sub(now)
		if in.needsProbe && d < s.Config.Probe.Interval.Duration {
			d = s.Config.Probe.Interval.Duration
		}
		if d > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	if best == 0 {
		best = s.Config.Cooldown.Base.Duration
	}
	return max(best, time.Second)
}
