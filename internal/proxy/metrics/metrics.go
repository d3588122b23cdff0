package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/continuum-project/continuum/internal/version"
)

// Error types of continuum_proxy_errors_total.
const (
	ErrTypeBadRequest     = "bad_request"
	ErrTypeUnknownService = "unknown_service"
	ErrTypeNoInstance     = "no_instance"
	ErrTypeTimeout        = "timeout"
	ErrTypeUnreachable    = "unreachable"
	ErrTypeClientGone     = "client_canceled"
	ErrTypeClientTimeout  = "client_timeout"
	ErrTypeOverloaded     = "overloaded"
)

// Metrics are the proxy's Prometheus metrics, in a registry of their own (several proxies may
// share a process in tests, and the global registry is mutable package state). A nil *Metrics
// records nothing, which keeps the pool's unit tests free of it.
//
// Label values come from discovery (service, instance) or from fixed sets, never from request
// headers: a request for an unknown service is counted under service="", so arbitrary Host
// headers cannot grow the series without bound.
type Metrics struct {
	Registry      *prometheus.Registry
	requests      *prometheus.CounterVec
	upstream      *prometheus.HistogramVec
	duration      *prometheus.HistogramVec
	poolSize      *prometheus.GaugeVec
	candidates    *prometheus.GaugeVec
	poolChanges   *prometheus.CounterVec
	retries       *prometheus.CounterVec
	errors        *prometheus.CounterVec
	probes        *prometheus.CounterVec
	reestimations *prometheus.CounterVec
	discInstances *prometheus.GaugeVec
	discErrors    *prometheus.CounterVec
}

// latencyBuckets span loopback to cloud round trips (0.25 ms .. 10 s).
var latencyBuckets = []float64{.00025, .0005, .001, .0025, .005, .01, .02, .04, .06, .08, .1, .15, .2, .3, .5, 1, 2.5, 5, 10}

func New(node string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "continuum_proxy_info", Help: "Constant 1, labelled with the proxy's node and version.",
		ConstLabels: prometheus.Labels{"node": node, "version": version.Version}})
	info.Set(1)
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_requests_total",
			Help: "Requests answered, by service, instance that answered (empty if none) and status code sent to the client (499: client went away)."},
			[]string{"service", "instance", "code"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "continuum_proxy_upstream_latency_seconds",
			Help: "Time from sending a request to an instance to its response headers, by service and instance (the estimate's input).", Buckets: latencyBuckets},
			[]string{"service", "instance"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "continuum_proxy_request_duration_seconds",
			Help: "Time the proxy spent on a request, retries and body included, by service.", Buckets: latencyBuckets},
			[]string{"service"}),
		poolSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "continuum_proxy_pool_size",
			Help: "Instances in the service's QoS pool."}, []string{"service"}),
		candidates: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "continuum_proxy_pool_candidates",
			Help: "Ready instances meeting the service's attribute requirements (what the pool is a share of)."}, []string{"service"}),
		poolChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_pool_changes_total",
			Help: "Pool membership changes by service, instance, change (join, leave) and reason for leaving."},
			[]string{"service", "instance", "change", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_retries_total",
			Help: "Attempts on another instance after a connection failure, by service."}, []string{"service"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_errors_total",
			Help: "Requests the proxy answered itself, by service and type (bad_request, unknown_service, no_instance, timeout, unreachable, client_canceled, overloaded)."},
			[]string{"service", "type"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_probes_total",
			Help: "Latency probes by service and result (ok, failed)."}, []string{"service", "result"}),
		reestimations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_reestimations_total",
			Help: "Times the pool fell below pool_min_share of the candidates and every candidate was probed again."}, []string{"service"}),
		discInstances: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "continuum_proxy_discovery_instances",
			Help: "Instances in each discovery source's latest snapshot."}, []string{"source"}),
		discErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "continuum_proxy_discovery_errors_total",
			Help: "Times a discovery source stopped with an error (it is restarted with backoff)."}, []string{"source"}),
	}
	reg.MustRegister(info, m.requests, m.upstream, m.duration, m.poolSize, m.candidates, m.poolChanges,
		m.retries, m.errors, m.probes, m.reestimations, m.discInstances, m.discErrors)
	return m
}

func (m *Metrics) Request(service, instance string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(service, instance, strconv.Itoa(code)).Inc()
	if service != "" {
		m.duration.WithLabelValues(service).Observe(d.Seconds())
	}
}

// InstanceSeries are an instance's series that every request updates, looked up once when
// the instance is created instead of by label values per request (hashing three labels and
// formatting the code). A removed instance's series are deleted (forget) with the instance,
// and a returning one gets a new instance and new series.
type InstanceSeries struct {
	ok       prometheus.Counter  // requests_total{code="200"}
	upstream prometheus.Observer // upstream_latency_seconds
	duration prometheus.Observer // request_duration_seconds of its service
}

// Series looks up an instance's series; nil m gives nil series (which record nothing).
func (m *Metrics) Series(service, instance string) *InstanceSeries {
	if m == nil {
		return nil
	}
	return &InstanceSeries{ok: m.requests.WithLabelValues(service, instance, "200"),
		upstream: m.upstream.WithLabelValues(service, instance), duration: m.duration.WithLabelValues(service)}
}

// RequestOK counts a 200 answered by the instance whose series ser are.
func (ser *InstanceSeries) RequestOK(d time.Duration) {
	if ser != nil {
		ser.ok.Inc()
		ser.duration.Observe(d.Seconds())
	}
}

func (ser *InstanceSeries) UpstreamLatency(d time.Duration) {
	if ser != nil {
		ser.upstream.Observe(d.Seconds())
	}
}

func (m *Metrics) PoolChange(service, instance string, joined bool, reason string) {
	if m == nil {
		return
	}
	if joined {
		m.poolChanges.WithLabelValues(service, instance, "join", "").Inc()
	} else {
		m.poolChanges.WithLabelValues(service, instance, "leave", reason).Inc()
	}
}

func (m *Metrics) SetPoolSize(service string, pool, candidates int) {
	if m != nil {
		m.poolSize.WithLabelValues(service).Set(float64(pool))
		m.candidates.WithLabelValues(service).Set(float64(candidates))
	}
}

func (m *Metrics) Retry(service string) {
	if m != nil {
		m.retries.WithLabelValues(service).Inc()
	}
}

func (m *Metrics) CountError(service, typ string) {
	if m != nil {
		m.errors.WithLabelValues(service, typ).Inc()
	}
}

func (m *Metrics) Probe(service string, ok bool) {
	if m == nil {
		return
	}
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.probes.WithLabelValues(service, result).Inc()
}

func (m *Metrics) Reestimation(service string) {
	if m != nil {
		m.reestimations.WithLabelValues(service).Inc()
	}
}

func (m *Metrics) Discovery(source string, instances int) {
	if m != nil {
		m.discInstances.WithLabelValues(source).Set(float64(instances))
	}
}

func (m *Metrics) DiscoveryError(source string) {
	if m != nil {
		m.discErrors.WithLabelValues(source).Inc()
	}
}

// Forget drops an instance's series when discovery no longer reports it, so that instances
// that come and go (Pods) do not accumulate.
func (m *Metrics) Forget(service, instance string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"service": service, "instance": instance}
	m.requests.DeletePartialMatch(l)
	m.upstream.DeletePartialMatch(l)
	m.poolChanges.DeletePartialMatch(l)
}
