package proxy

import (
	"net/http"
	"time"

	"github.com/continuum-project/continuum/internal/httpjson"

	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/proxy/sources"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// poolsView is GET /debug/pools: every service the proxy knows, with each instance's
// estimate and why it is or is not in the pool.
type poolsView struct {
	Node     string             `json:"node"`
	Time     time.Time          `json:"time"`
	Ready    bool               `json:"ready"`
	Sources  []sources.Status   `json:"sources"`
	Services []pool.ServiceView `json:"services"`
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
		if !p.rt.IsReady() {
			code = http.StatusServiceUnavailable
		}
		body := map[string]any{"ready": code == http.StatusOK}
		if p.adminToken == "" || hasToken(r, p.adminToken) {
			body["sources"] = p.u.Statuses()
		}
		httpjson.Write(w, code, body)
	})
	mux.Handle("GET /debug/pools", guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.Write(w, http.StatusOK, p.pools())
	})))
	return mux
}

func (p *Proxy) pools() poolsView {
	v := poolsView{Node: p.cfg.Node, Time: time.Now(), Ready: p.rt.IsReady(), Sources: p.u.Statuses(), Services: []pool.ServiceView{}}
	for _, s := range p.rt.All() {
		v.Services = append(v.Services, s.View())
	}
	return v
}

// slogPromLogger adapts slog to promhttp's error logger.
type slogPromLogger struct {
	log interface{ Error(string, ...any) }
}

func (l slogPromLogger) Println(v ...any) { l.log.Error("metrics", "err", v) }
