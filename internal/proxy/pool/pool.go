package pool

import (
	"crypto/tls"
	"crypto/x509"
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

// Service holds one service's instances, their estimates and its QoS pool. Membership is
// re-evaluated on every event that can change it (a response, a probe result, a discovery
// update) and, for changes that only time brings (a cooldown or hold ending, samples ageing),
// when the maintainer wakes (maintain.go). All fields below mu are guarded by it; requests
// take it twice (pick and observe), which is cheap next to a network round trip.
type Service struct {
	Name   string
	Config config.ServiceConfig
	req    qos.Requirements
	now    func() time.Time
	log    *slog.Logger
	m      *metrics.Metrics
	// Conns are the keep-alive connections carrying this service's requests (conns.go); new
	// ones are dialed with the service's connect timeout, or taken from spares (qos only,
	// preconnect.go).
	Conns  *ConnPool
	Spares *spares
	// probeTransport carries HTTP probes, one new connection each, so that every probe also
	// measures the TCP connect time (the network round trip).
	probeTransport *http.Transport
	probe          probeFunc
	// minOutcomes is how many outcomes the success rate needs before it can evict.
	minOutcomes int

	Mu    sync.Mutex
	insts map[string]*Instance
	order []*Instance // by ID, for stable output and balancing

	// Selection sets, rebuilt when any instance's reason changes.
	candidates []*Instance // ready and meeting the attribute requirements
	pool       []*Instance // candidates meeting the whole QoS requirement
	overflow   []*Instance // would be in the pool but their node is overloaded
	healthy    []*Instance // candidates not in failure cooldown (best-effort fallback)

	active     bool        // the first request arrived; probes and holds run
	ActiveFlag atomic.Bool // active, readable without mu (the request path's check)
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
	scratch        []*Instance
}

func NewService(name string, cfg config.ServiceConfig, now func() time.Time, log *slog.Logger, m *metrics.Metrics) (*Service, error) {
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
	s := &Service{Name: name, Config: cfg, req: req, now: now, log: log, m: m, minOutcomes: minOut,
		insts: map[string]*Instance{}, initProgress: make(chan struct{}), kick: make(chan struct{}, 1)}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout.Duration, KeepAlive: 30 * time.Second}
	s.Spares = newSpares(dialer.DialContext, spareMaxAge)
	s.Conns = newConnPool(s.Spares.dialContext, cfg.ConnectTimeout.Duration+time.Second)
	s.probeTransport = newTransport(cfg.Probe.Timeout.Duration, dialer.DialContext)
	s.probeTransport.DisableKeepAlives = true
	s.probe = s.DefaultProbe
	return s, nil
}

// setRootCAs makes roots (nil: the system's) the roots https:// instances are verified
// against, by the transport and the probes.
func (s *Service) setRootCAs(roots *x509.CertPool) {
	s.Conns.rootCAs = roots
	s.probeTransport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// Close releases the service's connections; the maintainer must have stopped.
func (s *Service) Close() {
	s.Spares.close()
	s.Conns.close()
	s.probeTransport.CloseIdleConnections()
}

// SetInstances replaces the service's instances with those discovery reports, keeping the
// state (estimates, cooldowns) of instances whose ID and URL did not change.
func (s *Service) SetInstances(list []discovery.Instance, nodes map[string]discovery.NodeLoad) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	now := s.now()
	next := make(map[string]*Instance, len(list))
	outcomes := qos.OutcomeWindow(s.Config.Estimate.Window, s.Config.QoS.MinSuccessRate)
	for _, d := range list {
		in := s.insts[d.ID]
		if in == nil || in.disc.URL != d.URL {
			var err error
			if in, err = NewInstance(d, s.Config.Estimate.Window, outcomes); err != nil {
				s.log.Warn("ignoring instance", "service", s.Name, "err", err)
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
		in.overloaded = load.CPU > s.Config.OverloadThreshold || load.Memory > s.Config.OverloadThreshold
		next[d.ID] = in
	}
	for id, in := range s.insts {
		if next[id] != in {
			s.Spares.forget(in.Addr)
			s.Conns.forget(in.Addr)
			s.m.Forget(s.Name, id)
			if in.InPool {
				s.m.PoolChange(s.Name, id, false, "removed")
			}
		}
	}
	for _, in := range next {
		if in.Series == nil {
			// After the forgets above: an instance replaced under the same ID (a new URL)
			// must not cache the series they just deleted.
			in.Series = s.m.Series(s.Name, in.ID)
		}
	}
	s.insts = next
	s.order = s.order[:0]
	for _, in := range next {
		s.order = append(s.order, in)
	}
	slices.SortFunc(s.order, func(a, b *Instance) int { return strings.Compare(a.disc.ID, b.disc.ID) })
	for _, in := range s.order {
		s.evalLocked(in, now)
	}
	s.rebuildLocked(now)
	s.wake()
}

// wake nudges the maintainer without blocking.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Lookup finds an instance by ID (for tests and the debug view).
func (s *Service) Lookup(id string) *Instance {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.insts[id]
}
