package proxy

import (
	"encoding/json"
	"maps"
	"net/http"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/sources"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// poolsView is GET /debug/pools: every service the proxy knows, with each instance's
// estimate and why it is or is not in the pool.
type poolsView struct {
	Node     string           `json:"node"`
	Time     time.Time        `json:"time"`
	Ready    bool             `json:"ready"`
	Sources  []sources.Status `json:"sources"`
	Services []serviceView    `json:"services"`
}

type serviceView struct {
	Name     string  `json:"name"`
	Strategy string  `json:"strategy"`
	Balance  string  `json:"balance,omitempty"`
	Alpha    float64 `json:"alpha,omitempty"`
	// Active: a request arrived, so instances are probed and estimated.
	Active        bool            `json:"active"`
	Requirement   requirementView `json:"requirement"`
	PoolSize      int             `json:"pool_size"`
	Candidates    int             `json:"candidates"`
	Reestimations int             `json:"reestimations"`
	Instances     []instanceView  `json:"instances"`
}

type requirementView struct {
	Latency        string   `json:"latency,omitempty"`
	Percentile     float64  `json:"percentile"`
	MinSuccessRate float64  `json:"min_success_rate,omitempty"`
	Require        []string `json:"require,omitempty"`
	PoolMinShare   float64  `json:"pool_min_share"`
}

type instanceView struct {
	ID         string            `json:"id"`
	URL        string            `json:"url"`
	Node       string            `json:"node,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Ready      bool              `json:"ready"`
	InPool     bool              `json:"in_pool"`
	// Reason is why it is not in the pool (not_ready, attributes, cooldown, awaiting_probe,
	// hold, unprobed, latency, success_rate, overloaded); Why explains it.
	Reason       string  `json:"reason,omitempty"`
	Why          string  `json:"why,omitempty"`
	EstimateMs   float64 `json:"estimate_ms"`
	EstimateFrom string  `json:"estimate_from"`
	Samples      int     `json:"samples"`
	ProbeMs      float64 `json:"probe_ms,omitempty"`
	// NetworkMs is the network round trip (TCP connect time) that proximity weighs.
	NetworkMs     float64   `json:"network_ms,omitempty"`
	LastProbe     time.Time `json:"last_probe,omitzero"`
	ProbeError    string    `json:"probe_error,omitempty"`
	SuccessRate   float64   `json:"success_rate"`
	Outcomes      int       `json:"outcomes"`
	Failures      int       `json:"failures"`
	LastError     string    `json:"last_error,omitempty"`
	CooldownUntil time.Time `json:"cooldown_until,omitzero"`
	HoldUntil     time.Time `json:"hold_until,omitzero"`
	Evictions     int       `json:"evictions"`
	Probation     bool      `json:"probation,omitempty"`
	Overloaded    bool      `json:"overloaded"`
	Outstanding   int64     `json:"outstanding"`
	Served        int64     `json:"served"`
	Since         time.Time `json:"since,omitzero"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// view snapshots the service for /debug/pools.
func (s *service) view() serviceView {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c := s.cfg
	v := serviceView{Name: s.name, Strategy: c.Strategy, Active: s.active,
		Requirement: requirementView{Percentile: c.QoS.Percentile, MinSuccessRate: c.QoS.MinSuccessRate,
			Require: c.QoS.Require, PoolMinShare: c.QoS.PoolMinShare},
		PoolSize: len(s.pool), Candidates: len(s.candidates), Reestimations: s.reestimations}
	if c.QoS.Latency.Duration > 0 {
		v.Requirement.Latency = c.QoS.Latency.String()
	}
	switch c.Strategy {
	case config.StrategyQoS:
		v.Balance = c.Balance
	case config.StrategyProximity:
		v.Alpha = c.Alpha
	}
	for _, in := range s.order {
		iv := instanceView{ID: in.disc.ID, URL: in.disc.URL, Node: in.disc.Node, Attributes: maps.Clone(in.disc.Attributes),
			Ready: in.disc.Ready, InPool: in.inPool, Reason: in.reason, Why: in.why,
			EstimateMs: ms(in.est), EstimateFrom: in.estFrom, Samples: in.samples,
			LastProbe: in.probedAt, ProbeError: in.probeErr, SuccessRate: in.success, Outcomes: in.outcomes,
			Failures: in.failures, LastError: in.lastErr, Evictions: in.evictions, Overloaded: in.overloaded,
			Outstanding: in.outstanding.Load(), Served: in.served, Since: in.since}
		if in.rttKnown {
			iv.ProbeMs = ms(in.rtt)
		}
		if in.netKnown {
			iv.NetworkMs = ms(in.net)
		}
		iv.Probation = in.probation
		if in.cooldownUntil.After(now) {
			iv.CooldownUntil = in.cooldownUntil
		}
		if in.holdUntil.After(now) {
			iv.HoldUntil = in.holdUntil
		}
		v.Instances = append(v.Instances, iv)
	}
	return v
}

// adminHandler serves /metrics, /healthz (liveness: the process serves), /readyz (every
// discovery source delivered a snapshot) and /debug/pools. With an admin token, /metrics and
// /debug/pools need it, and /readyz shows its sources' details only to a caller that has it:
// probes see the status code and whether the proxy is ready, nothing about the instances.
func (p *Proxy) adminHandler() http.Handler {
	guard := func(h http.Handler) http.Handler {
		if p.adminToken == "" {
			return h
		}
		return requireToken(p.adminToken, h)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", guard(promhttp.HandlerFor(p.m.Registry, promhttp.HandlerOpts{ErrorLog: slogPromLogger{p.log}})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusOK
		if !p.rt.isReady() {
			code = http.StatusServiceUnavailable
		}
		body := map[string]any{"ready": code == http.StatusOK}
		if p.adminToken == "" || hasToken(r, p.adminToken) {
			body["sources"] = p.u.Statuses()
		}
		writeJSON(w, code, body)
	})
	mux.Handle("GET /debug/pools", guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, p.pools())
	})))
	return mux
}

func (p *Proxy) pools() poolsView {
	v := poolsView{Node: p.cfg.Node, Time: time.Now(), Ready: p.rt.isReady(), Sources: p.u.Statuses(), Services: []serviceView{}}
	for _, s := range p.rt.all() {
		v.Services = append(v.Services, s.view())
	}
	return v
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// slogPromLogger adapts slog to promhttp's error logger.
type slogPromLogger struct {
	log interface{ Error(string, ...any) }
}

func (l slogPromLogger) Println(v ...any) { l.log.Error("metrics", "err", v) }
