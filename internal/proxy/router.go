package proxy

import (
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
)

// router maps service names to services. Services are created when discovery first reports
// them (or from the configuration's services section) and kept when their instances
// disappear, so that a known service without instances answers 503, not 404.
type router struct {
	cfg config.Config
	now func() time.Time
	log *slog.Logger
	m   *metrics.Metrics

	mu       sync.RWMutex
	services map[string]*service // by lower-cased name
	ready    bool                // every source delivered a snapshot
}

func newRouter(cfg config.Config, now func() time.Time, log *slog.Logger, m *metrics.Metrics) (*router, error) {
	rt := &router{cfg: cfg, now: now, log: log, m: m, services: map[string]*service{}}
	for name := range cfg.Services {
		if _, err := rt.ensure(strings.ToLower(name)); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// get returns the service for a lower-cased name, or nil.
func (rt *router) get(name string) *service {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.services[name]
}

// getBytes is get for a name in bytes (the map lookup does not allocate).
func (rt *router) getBytes(name []byte) *service {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.services[string(name)]
}

func (rt *router) isReady() bool {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.ready
}

func (rt *router) setReady() {
	rt.mu.Lock()
	rt.ready = true
	rt.mu.Unlock()
}

func (rt *router) ensure(name string) (*service, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if s := rt.services[name]; s != nil {
		return s, nil
	}
	s, err := newService(name, rt.cfg.Service(name), rt.now, rt.log, rt.m)
	if err != nil {
		return nil, err
	}
	s.setRootCAs(rt.cfg.InstanceRootCAs)
	rt.services[name] = s
	return s, nil
}

// apply hands each service its instances from a united snapshot.
func (rt *router) apply(snap discovery.Snapshot) {
	bySvc := map[string][]discovery.Instance{}
	for _, in := range snap.Instances {
		name := strings.ToLower(in.Service)
		bySvc[name] = append(bySvc[name], in)
	}
	for name := range bySvc {
		if _, err := rt.ensure(name); err != nil {
			// Only a bad requirement can fail, and it fails at start for configured services.
			rt.log.Error("cannot route service", "service", name, "err", err)
		}
	}
	for _, s := range rt.all() {
		s.setInstances(bySvc[s.name], snap.Nodes)
	}
}

// all lists the services by name.
func (rt *router) all() []*service {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	out := make([]*service, 0, len(rt.services))
	for _, s := range rt.services {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
