package pool

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

// Router maps service names to services. Services are created when discovery first reports
// them (or from the configuration's services section) and kept when their instances
// disappear, so that a known service without instances answers 503, not 404.
type Router struct {
	cfg config.Config
	now func() time.Time
	log *slog.Logger
	m   *metrics.Metrics

	mu       sync.RWMutex
	services map[string]*Service // by lower-cased name
	ready    bool                // every source delivered a snapshot
}

func NewRouter(cfg config.Config, now func() time.Time, log *slog.Logger, m *metrics.Metrics) (*Router, error) {
	rt := &Router{cfg: cfg, now: now, log: log, m: m, services: map[string]*Service{}}
	for name := range cfg.Services {
		if _, err := rt.ensure(strings.ToLower(name)); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// Get returns the service for a lower-cased name, or nil.
func (rt *Router) Get(name string) *Service {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.services[name]
}

// GetBytes is get for a name in bytes (the map lookup does not allocate).
func (rt *Router) GetBytes(name []byte) *Service {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.services[string(name)]
}

func (rt *Router) IsReady() bool {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.ready
}

func (rt *Router) SetReady() {
	rt.mu.Lock()
	rt.ready = true
	rt.mu.Unlock()
}

func (rt *Router) ensure(name string) (*Service, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if s := rt.services[name]; s != nil {
		return s, nil
	}
	s, err := NewService(name, rt.cfg.Service(name), rt.now, rt.log, rt.m)
	if err != nil {
		return nil, err
	}
	s.setRootCAs(rt.cfg.InstanceRootCAs)
	rt.services[name] = s
	return s, nil
}

// Apply hands each service its instances from a united snapshot.
func (rt *Router) Apply(snap discovery.Snapshot) {
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
	for _, s := range rt.All() {
		s.SetInstances(bySvc[s.Name], snap.Nodes)
	}
}

// All lists the services by name.
func (rt *Router) All() []*Service {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	out := make([]*Service, 0, len(rt.services))
	for _, s := range rt.services {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
