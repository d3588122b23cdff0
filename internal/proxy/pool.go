package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
	"github.com/continuum-project/continuum/internal/proxy/qos"
)

// service holds one service's instances, their estimates and its QoS pool. Membership is
// re-evaluated on every event that can change it (a response, a probe result, a discovery
// update) and, for changes that only time brings (a cooldown or hold ending, samples ageing),
// when the maintainer wakes (maintain.go). All fields below mu are guarded by it; requests
// take it twice (pick and observe), which is cheap next to a network round trip.
type service struct {
	name string
	cfg  config.ServiceConfig
	req  qos.Requirements
	now  func() time.Time
	log  *slog.Logger
	m    *metrics.Metrics
	// conns are the keep-alive connections carrying this service's requests (conns.go); new
	// ones are dialed with the service's connect timeout, or taken from spares (qos only,
	// preconnect.go).
	conns  *connPool
	spares *spares
	// probeTransport carries HTTP probes, one new connection each, so that every probe also
	// measures the TCP connect time (the network round trip).
	probeTransport *http.Transport
	probe          probeFunc
	// minOutcomes is how many outcomes the success rate needs before it can evict.
	minOutcomes int

	mu    sync.Mutex
	insts map[string]*instance
	order []*instance // by ID, for stable output and balancing

	// Selection sets, rebuilt when any instance's reason changes.
	candidates []*instance // ready and meeting the attribute requirements
	pool       []*instance // candidates meeting the whole QoS requirement
	overflow   []*instance // would be in the pool but their node is overloaded
	healthy    []*instance // candidates not in failure cooldown (best-effort fallback)

	active     bool        // the first request arrived; probes and holds run
	activeFlag atomic.Bool // active, readable without mu (the request path's check)
	// The activation's probes, which the first requests wait for (waitInit): initStart is
	// when they began, initPending how many have not answered, and initProgress is closed
	// (and replaced) each time one answers.
	initStart      time.Time
	initPending    int
	initProgress   chan struct{}
	initSettled    atomic.Bool   // the first requests went: no request waits any more
	kick           chan struct{} // wakes the maintainer early
	lastReestimate time.Time
	reestimations  int
	rr             uint64
	scratch        []*instance
}

func newService(name string, cfg config.ServiceConfig, now func() time.Time, log *slog.Logger, m *metrics.Metrics) (*service, error) {
	req, err := qos.ParseRequirements(cfg.QoS.Require)
	if err != nil {
		return nil, err
	}
	minOut := 0
	if r := cfg.QoS.MinSuccessRate; r > 0 && r < 1 {
		minOut = int(math.Ceil(1/(1-r) - 1e-9)) // 1e-9: 1/(1-0.9) is 10.000000000000002
	} else if r == 1 {
		minOut = 1
	}
	s := &service{name: name, cfg: cfg, req: req, now: now, log: log, m: m, minOutcomes: minOut,
		insts: map[string]*instance{}, initProgress: make(chan struct{}), kick: make(chan struct{}, 1)}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout.Duration, KeepAlive: 30 * time.Second}
	s.spares = newSpares(dialer.DialContext, spareMaxAge)
	s.conns = newConnPool(s.spares.dialContext, cfg.ConnectTimeout.Duration+time.Second)
	s.probeTransport = newTransport(cfg.Probe.Timeout.Duration, dialer.DialContext)
	s.probeTransport.DisableKeepAlives = true
	s.probe = s.defaultProbe
	return s, nil
}

// setRootCAs makes roots (nil: the system's) the roots https:// instances are verified
// against, by the transport and the probes.
func (s *service) setRootCAs(roots *x509.CertPool) {
	s.conns.rootCAs = roots
	s.probeTransport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// close releases the service's connections; the maintainer must have stopped.
func (s *service) close() {
	s.spares.close()
	s.conns.close()
	s.probeTransport.CloseIdleConnections()
}

// setInstances replaces the service's instances with those discovery reports, keeping the
// state (estimates, cooldowns) of instances whose ID and URL did not change.
func (s *service) setInstances(list []discovery.Instance, nodes map[string]discovery.NodeLoad) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	next := make(map[string]*instance, len(list))
	outcomes := qos.OutcomeWindow(s.cfg.Estimate.Window, s.cfg.QoS.MinSuccessRate)
	for _, d := range list {
		in := s.insts[d.ID]
		if in == nil || in.disc.URL != d.URL {
			var err error
			if in, err = newInstance(d, s.cfg.Estimate.Window, outcomes); err != nil {
				s.log.Warn("ignoring instance", "service", s.name, "err", err)
				continue
			}
			in.since = now
			if s.active {
				in.probeDue = now
			}
		}
		in.disc = d
		in.attrOK, in.attrWhy = s.req.Met(d.Attributes)
		load := nodes[d.Node]
		in.overloaded = load.CPU > s.cfg.OverloadThreshold || load.Memory > s.cfg.OverloadThreshold
		next[d.ID] = in
	}
	for id, in := range s.insts {
		if next[id] != in {
			s.spares.forget(in.addr)
			s.conns.forget(in.addr)
			s.m.Forget(s.name, id)
			if in.inPool {
				s.m.PoolChange(s.name, id, false, "removed")
			}
		}
	}
	for _, in := range next {
		if in.series == nil {
			// After the forgets above: an instance replaced under the same ID (a new URL)
			// must not cache the series they just deleted.
			in.series = s.m.Series(s.name, in.id)
		}
	}
	s.insts = next
	s.order = s.order[:0]
	for _, in := range next {
		s.order = append(s.order, in)
	}
	slices.SortFunc(s.order, func(a, b *instance) int { return strings.Compare(a.disc.ID, b.disc.ID) })
	for _, in := range s.order {
		s.evalLocked(in, now)
	}
	s.rebuildLocked(now)
	s.wake()
}

// wake nudges the maintainer without blocking.
func (s *service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// evalLocked recomputes an instance's estimate and pool membership; it reports whether the
// reason it is (not) in the pool changed.
func (s *service) evalLocked(in *instance, now time.Time) bool {
	c := s.cfg
	if in.inPool && in.evictions > 0 && now.Sub(in.since) >= c.Cooldown.Max.Duration {
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
	if in.inPool && c.Strategy == config.StrategyQoS && (reason == reasonLatency || reason == reasonSuccessRate) {
		in.evictions++
		hold := backoff(c.Cooldown, in.evictions)
		in.holdUntil = now.Add(hold)
		in.holdWhy = fmt.Sprintf("left the pool: %s; held %v (eviction %d in a row)", why, hold, in.evictions)
		in.win.Clear()
		in.epoch.Add(1)
		in.probation = false
		if !in.probing {
			in.probeDue = now
		}
		s.wake()
		s.estimateLocked(in, now)
		reason, why = reasonHold, in.holdWhy
	}
	changed := reason != in.reason
	in.reason, in.why = reason, why
	if inPool := reason == ""; inPool != in.inPool {
		in.inPool, in.since = inPool, now
		// Back from a QoS eviction: its probe cannot tell whether the service recovered (a
		// TCP probe does not see processing), so its first request tells, alone.
		in.probation = inPool && in.evictions > 0 && c.Strategy == config.StrategyQoS
		if c.Strategy == config.StrategyQoS {
			want := 0
			if inPool {
				want = sparesPerInstance
			}
			s.spares.setWant(in.addr, want)
		}
		s.m.PoolChange(s.name, in.disc.ID, inPool, reason)
		if inPool {
			s.log.Debug("instance joined the pool", "service", s.name, "instance", in.disc.ID, "estimate", in.est)
		} else {
			s.log.Debug("instance left the pool", "service", s.name, "instance", in.disc.ID, "reason", reason, "why", why)
		}
	}
	return changed
}

func (s *service) estimateLocked(in *instance, now time.Time) {
	q, n := in.win.Quantile(s.cfg.QoS.Percentile, now.Add(-s.cfg.Estimate.MaxAge.Duration))
	in.samples = n
	switch {
	case n > 0:
		in.est, in.estFrom = q, estFromTraffic
	case in.rttKnown && in.rttEpoch == in.epoch.Load():
		in.est, in.estFrom = in.rtt, estFromProbe
	default:
		in.est, in.estFrom = 0, estNone
	}
	in.success, in.outcomes = in.win.SuccessRate()
}

// reasonLocked says why an instance is not in the pool ("" if it is). The order matters: the
// first reason is the one to fix first.
func (s *service) reasonLocked(in *instance, now time.Time) (string, string) {
	c := s.cfg
	limit := c.QoS.Latency.Duration
	switch {
	case !in.disc.Ready:
		return reasonNotReady, "discovery reports it not ready"
	case !in.attrOK:
		return reasonAttributes, in.attrWhy
	case now.Before(in.cooldownUntil):
		return reasonCooldown, fmt.Sprintf("%d failure(s) in a row, last: %s", in.failures, in.lastErr)
	case in.needsProbe:
		return reasonAwaitingProbe, "cooldown over; rejoins after a successful probe"
	case now.Before(in.holdUntil):
		return reasonHold, in.holdWhy
	case limit > 0 && in.estFrom == estNone && in.rttKnown:
		return reasonUnprobed, "no probe since it left the pool"
	case limit > 0 && in.estFrom == estNone:
		return reasonUnprobed, "no latency estimate yet"
	case limit > 0 && in.est > limit:
		return reasonLatency, fmt.Sprintf("p%g estimate %s > %v (from %s)", c.QoS.Percentile, fmtMs(in.est), limit, in.estFrom)
	case s.minOutcomes > 0 && in.outcomes >= s.minOutcomes && in.success < c.QoS.MinSuccessRate:
		return reasonSuccessRate, fmt.Sprintf("success rate %.4f < %v over %d requests", in.success, c.QoS.MinSuccessRate, in.outcomes)
	case in.overloaded:
		return reasonOverloaded, "node CPU or memory above the overload threshold"
	}
	return "", ""
}

// rebuildLocked recomputes the selection sets and, for the qos strategy, starts a
// re-estimation when the pool holds less than PoolMinShare of the candidates.
func (s *service) rebuildLocked(now time.Time) {
	s.candidates, s.pool, s.overflow, s.healthy = s.candidates[:0], s.pool[:0], s.overflow[:0], s.healthy[:0]
	for _, in := range s.order {
		switch in.reason {
		case reasonNotReady, reasonAttributes:
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
	s.m.SetPoolSize(s.name, len(s.pool), len(s.candidates))
	// Instances not probed yet are being probed anyway and are not a shrinking pool.
	probed := 0
	for _, in := range s.candidates {
		if in.reason != reasonUnprobed {
			probed++
		}
	}
	if !s.active || s.cfg.Strategy != config.StrategyQoS || probed == 0 {
		return
	}
	if float64(len(s.pool)) >= s.cfg.QoS.PoolMinShare*float64(probed) {
		return
	}
	// Probing every candidate at most once per probe interval: the pool is small, so the
	// estimates of the instances outside it are checked now rather than at their turn.
	if !s.lastReestimate.IsZero() && now.Sub(s.lastReestimate) < s.cfg.Probe.Interval.Duration {
		return
	}
	s.lastReestimate = now
	s.reestimations++
	s.m.Reestimation(s.name)
	for _, in := range s.candidates {
		if !in.probing && !now.Before(in.cooldownUntil) {
			in.reprobe = true
		}
	}
	s.wake()
}

// outcome classifies an attempt's result for the estimate.
type outcome int

const (
	outcomeOK       outcome = iota // an answer (any status but those below)
	outcomeError                   // a 5xx answer: counts against the success rate
	outcomeFailure                 // transport error, timeout, 502/503/504: cooldown
	outcomeCanceled                // the client went away: says nothing about the instance
)

// classifyStatus maps an upstream status to an outcome. 502, 503 and 504 mean the instance
// (or what fronts it) could not serve at all, so it cools down; other 5xx are the
// application's answers, which the client gets and the success rate counts.
func classifyStatus(code int) outcome {
	switch {
	case code == http.StatusBadGateway, code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		return outcomeFailure
	case code >= 500:
		return outcomeError
	}
	return outcomeOK
}

// attemptResult is what one attempt tells about its instance.
type attemptResult struct {
	// epoch is the instance's epoch when the attempt started: if it changed since, the
	// instance was evicted meanwhile and the answer says nothing about it as it is now.
	epoch uint64
	// lat is the time to the response headers (or to the failure) from the connection being
	// ready: setting up a connection is a cost of the proxy's connection pool, paid once per
	// connection, not of the instance's service (transport.go).
	lat    time.Duration
	oc     outcome
	errMsg string
	// sampled: its latency was recorded already, when it passed the limit (observeSlow).
	sampled bool
}

// observe records the result of an attempt started in the instance's current epoch.
func (s *service) observe(in *instance, lat time.Duration, oc outcome, errMsg string) {
	s.record(in, attemptResult{epoch: in.epoch.Load(), lat: lat, oc: oc, errMsg: errMsg})
}

// record records an attempt's result. An answer from an earlier epoch (sent before an
// eviction cleared the samples) adds nothing to the window; a failure still starts a
// cooldown, since whether the instance can be reached does not depend on when the
// request was sent.
func (s *service) record(in *instance, r attemptResult) {
	if r.oc == outcomeCanceled {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	in.served++
	current := r.epoch == in.epoch.Load()
	switch r.oc {
	case outcomeOK:
		if !current {
			return // nothing changed
		}
		if !r.sampled {
			in.win.AddLatency(now, r.lat)
		}
		in.win.AddOutcome(false)
		in.failures = 0
		if limit := s.cfg.QoS.Latency.Duration; limit == 0 || (!r.sampled && r.lat <= limit) {
			in.probation = false
		}
	case outcomeError:
		if !current {
			return
		}
		in.win.AddOutcome(true)
	case outcomeFailure:
		if current {
			in.win.AddOutcome(true)
			if r.lat > 0 && r.errMsg == errTimeoutMsg && !r.sampled {
				in.win.AddLatency(now, r.lat) // it was at least this slow
			}
		}
		s.failLocked(in, now, r.errMsg)
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
func (s *service) observeSlow(in *instance, epoch uint64, waited time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != in.epoch.Load() {
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
func (s *service) failLocked(in *instance, now time.Time, errMsg string) {
	in.lastErr = errMsg
	if now.Before(in.cooldownUntil) {
		return
	}
	in.failures++
	in.cooldownUntil = now.Add(backoff(s.cfg.Cooldown, in.failures))
	in.needsProbe = true
	in.probeDue = in.cooldownUntil
	s.wake()
}

// probeDone records a probe's result.
func (s *service) probeDone(in *instance, res probeResult, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	in.probing = false
	in.probedAt = now
	if in.initProbe {
		in.initProbe = false
		s.initPending--
		// After the instance's membership is settled below: waitInit looks at the pool.
		defer s.initAnsweredLocked()
	}
	in.probeDue = now.Add(s.cfg.Probe.Interval.Duration)
	if err != nil {
		in.probeErr = err.Error()
		s.m.Probe(s.name, false)
		s.failLocked(in, now, "probe: "+err.Error())
	} else {
		in.probeErr = ""
		s.m.Probe(s.name, true)
		// Probe times are smoothed more lightly than QEdgeProxy's 0.2 so that a network
		// change shows within two or three probes. The first probe of an epoch starts
		// afresh: the probes before an eviction are as stale as the samples.
		epoch := in.epoch.Load()
		in.rtt = qos.EWMA(in.rtt, res.lat, 0.5, !in.rttKnown || in.rttEpoch != epoch)
		in.rttKnown, in.rttEpoch = true, epoch
		if res.net > 0 {
			in.net = qos.EWMA(in.net, res.net, 0.5, !in.netKnown)
			in.netKnown = true
		}
		in.needsProbe = false
		if s.cfg.Probe.Path != "" {
			in.win.AddLatency(now, res.lat) // an HTTP probe is a full response, like traffic
		}
	}
	if s.evalLocked(in, now) {
		s.rebuildLocked(now)
	}
}

// lookup finds an instance by ID (for tests and the debug view).
func (s *service) lookup(id string) *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insts[id]
}

// retryAfter is when the client may find an instance: the end of the earliest cooldown or hold,
// at least a second (Retry-After has a one-second resolution).
func (s *service) retryAfterLocked(now time.Time) time.Duration {
	best := time.Duration(0)
	for _, in := range s.candidates {
		until := in.cooldownUntil
		if in.holdUntil.After(until) {
			until = in.holdUntil
		}
		d := until.Sub(now)
		if in.needsProbe && d < s.cfg.Probe.Interval.Duration {
			d = s.cfg.Probe.Interval.Duration
		}
		if d > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	if best == 0 {
		best = s.cfg.Cooldown.Base.Duration
	}
	return max(best, time.Second)
}
