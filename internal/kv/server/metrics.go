package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// metrics are the server's Prometheus metrics, in a registry of its own (no global state), named
// like etcd's where etcd has the same metric so dashboards carry over.
type metrics struct {
	s        *Server
	reg      *prometheus.Registry
	handled  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	methods  sync.Map // full method -> *methodMetrics: no label hashing per request
}

type methodMetrics struct {
	duration prometheus.Observer
	ok       prometheus.Counter
}

func (m *metrics) method(name string) *methodMetrics {
	if mm, ok := m.methods.Load(name); ok {
		return mm.(*methodMetrics)
	}
	mm := &methodMetrics{duration: m.duration.WithLabelValues(name), ok: m.handled.WithLabelValues(name, codes.OK.String())}
	v, _ := m.methods.LoadOrStore(name, mm)
	return v.(*methodMetrics)
}

func newMetrics(s *Server) *metrics {
	m := &metrics{s: s, reg: prometheus.NewRegistry()}
	m.handled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grpc_server_handled_total", Help: "RPCs completed on the server, by method and code.",
	}, []string{"grpc_method", "grpc_code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "continuum_kv_request_duration_seconds", Help: "Unary request latency by method.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"grpc_method"})
	m.reg.MustRegister(m.handled, m.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_current_revision", Help: "The current revision of the store."},
			func() float64 { return float64(s.store.Rev()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_compact_revision", Help: "The revision of the last compaction."},
			func() float64 { return float64(s.store.CompactRev()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_mvcc_db_total_size_in_bytes", Help: "Disk space used by the database."},
			func() float64 { t, _ := s.store.DBSize(); return float64(t) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_mvcc_db_total_size_in_use_in_bytes", Help: "Disk space held by live data."},
			func() float64 { _, u := s.store.DBSize(); return float64(u) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_server_quota_backend_bytes", Help: "The backend quota."},
			func() float64 { return float64(s.cfg.QuotaBackendBytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_keys_total", Help: "Keys in the index."},
			func() float64 { return float64(s.store.KeyCount()) }),
		storageCollector{s.store},
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "continuum_kv_conflicts_total",
			Help: "Peers' writes that lost here to a concurrent write of the same key (last writer wins), since the member started."},
			func() float64 { return float64(s.store.ConflictsTotal()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_server_has_leader", Help: "1: the member serves (always: every member serves its own writes)."},
			func() float64 { return 1 }),
	)
	if s.repl != nil {
		m.reg.MustRegister(s.repl.Collector())
	}
	return m
}

func (m *metrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	mm := m.method(info.FullMethod)
	mm.duration.Observe(time.Since(start).Seconds())
	if err == nil {
		mm.ok.Inc()
	} else {
		m.handled.WithLabelValues(info.FullMethod, status.Code(err).String()).Inc()
	}
	return resp, err
}

func (m *metrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	m.handled.WithLabelValues(info.FullMethod, status.Code(err).String()).Inc()
	return err
}

// handler serves /metrics and etcd's /health ({"health":"true","reason":""}; 503 with the
// alarm as reason while NOSPACE is raised, as etcd does).
func (m *metrics) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		type health struct {
			Health string `json:"health"`
			Reason string `json:"reason"`
		}
		h := health{Health: "true"}
		code := http.StatusOK
		if alarms := m.s.store.Alarms(); len(alarms) > 0 {
			h = health{Health: "false", Reason: "ALARM " + alarms[0].String()}
			code = http.StatusServiceUnavailable
		}
		// Byte for byte etcd's answer: its JSON without a newline, and no Content-Type of its
		// own (Go's sniffing gives text/plain).
		b, _ := json.Marshal(h)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write(b)
	})
	if m.s.cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// storageCollector exports the storage engine's write counters, read once per scrape (each read
// gathers Pebble's metrics over every level).
type storageCollector struct{ store *mvcc.Store }

var (
	storageWAL = prometheus.NewDesc("continuum_kv_storage_wal_bytes_total",
		"Bytes the storage engine wrote to its write-ahead log since start.", nil, nil)
	storageFlushed = prometheus.NewDesc("continuum_kv_storage_flushed_bytes_total",
		"Bytes of tables the storage engine flushed from memtables since start.", nil, nil)
	storageCompacted = prometheus.NewDesc("continuum_kv_storage_compacted_bytes_total",
		"Bytes the storage engine's compactions wrote since start; (wal + flushed + compacted) / wal is the write amplification.", nil, nil)
	storageCompactions = prometheus.NewDesc("continuum_kv_storage_compactions_total",
		"Compactions the storage engine ran since start.", nil, nil)
)

func (storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storageWAL
	ch <- storageFlushed
	ch <- storageCompacted
	ch <- storageCompactions
}

func (c storageCollector) Collect(ch chan<- prometheus.Metric) {
	io := c.store.StorageIO()
	ch <- prometheus.MustNewConstMetric(storageWAL, prometheus.CounterValue, float64(io.WALBytes))
	ch <- prometheus.MustNewConstMetric(storageFlushed, prometheus.CounterValue, float64(io.FlushedBytes))
	ch <- prometheus.MustNewConstMetric(storageCompacted, prometheus.CounterValue, float64(io.CompactedBytes))
	ch <- prometheus.MustNewConstMetric(storageCompactions, prometheus.CounterValue, float64(io.Compactions))
}
