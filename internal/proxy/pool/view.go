package pool

import (
	"maps"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
)

type ServiceView struct {
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
	Instances     []InstanceView  `json:"instances"`
}

type requirementView struct {
	Latency        string   `json:"latency,omitempty"`
	Percentile     float64  `json:"percentile"`
	MinSuccessRate float64  `json:"min_success_rate,omitempty"`
	Require        []string `json:"require,omitempty"`
	PoolMinShare   float64  `json:"pool_min_share"`
}

type InstanceView struct {
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

// ms is d in milliseconds to the microsecond, as results.Millis; not that function itself,
// since linking package results (its schema tables and their init) would grow the slim
// continuum-proxy binary for one line.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// View snapshots the service for /debug/pools.
func (s *Service) View() ServiceView {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	now := s.now()
	c := s.Config
	v := ServiceView{Name: s.Name, Strategy: c.Strategy, Active: s.active,
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
		iv := InstanceView{ID: in.disc.ID, URL: in.disc.URL, Node: in.disc.Node, Attributes: maps.Clone(in.disc.Attributes),
			Ready: in.disc.Ready, InPool: in.InPool, Reason: in.reason, Why: in.Why,
			EstimateMs: ms(in.Est), EstimateFrom: in.estFrom, Samples: in.Samples,
			LastProbe: in.probedAt, ProbeError: in.probeErr, SuccessRate: in.success, Outcomes: in.outcomes,
			Failures: in.failures, LastError: in.lastErr, Evictions: in.evictions, Overloaded: in.overloaded,
			Outstanding: in.Outstanding.Load(), Served: in.served, Since: in.since}
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
