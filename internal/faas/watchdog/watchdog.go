// Package watchdog is the process in front of a function instance, as OpenFaaS' watchdogs
// are: it serves HTTP, runs the function in its mode (classic: a process forked and exec'd per
// request, stdin to stdout; http: one upstream server process kept and proxied to), and adds
// what every instance needs: /_/health, Prometheus metrics at /_/metrics, an exec timeout
// (504), an in-flight limit (429), and the time spent in the watchdog (X-Duration-Seconds).
//
// It runs any program, not only Python: Process is the command line (the fprocess of
// OpenFaaS). The faas package builds it for a python3-http handler.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Modes.
const (
	ModeClassic = "classic"
	ModeHTTP    = "http"
)

// Defaults of the Config fields that `continuum faas watchdog` exposes as flags (declared once,
// here).
const (
	DefaultListen      = ":8080"
	DefaultExecTimeout = time.Minute
	DefaultReadTimeout = time.Minute
)

// Config is one watchdog.
type Config struct {
	// Mode is classic or http.
	Mode string
	// Process is the function's command line: run per request (classic) or once, serving
	// HTTP on UpstreamAddr (http).
	Process []string
	// Env is added to the process's inherited environment.
	Env []string
	// CGI (classic mode) reads the process's stdout as CGI output: a Status line and headers,
	// a blank line, the body; the process gets CONTINUUM_CGI=1. Without it stdout is the body
	// of a 200 and a failing exit a 500, as the classic watchdog has it.
	CGI bool
	// Listen is the watchdog's address (default :8080).
	Listen string
	// UpstreamAddr is where the http mode's process listens (host:port).
	UpstreamAddr string
	// Zygote, if set, is the unix socket of a zygote that has the function imported: the
	// http mode's upstream, or each classic request's process, is forked from it instead of
	// exec'ing Process (no interpreter start, no imports).
	Zygote string
	// ExecTimeout bounds one request in the function (default 60 s): past it the client gets
	// 504, and a classic process is killed. WriteTimeout and ReadTimeout bound the HTTP
	// exchange with the client (default ExecTimeout + 5 s, 60 s).
	ExecTimeout, WriteTimeout, ReadTimeout time.Duration
	// ReadyTimeout bounds the http mode's wait for its upstream to listen (default 60 s).
	ReadyTimeout time.Duration
	// ReadHeaderTimeout cuts a client that has not sent its whole header by then (default
	// 10 s): a slow client (slowloris) holds a connection no longer.
	ReadHeaderTimeout time.Duration
	// MaxInflight, if > 0, answers 429 to requests beyond that many at once.
	MaxInflight int
	// MaxBody is the largest request body in bytes (default 64 MiB); larger gets 413.
	MaxBody int64
	Logger  *slog.Logger
	// Log is the function's log: what its processes write to stdout (http mode) and stderr,
	// tracebacks included (default the watchdog's stderr). A classic process's stderr is
	// written in one piece when it ends, so concurrent requests' logs do not interleave.
	Log io.Writer
}

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	switch c.Mode {
	case ModeClassic:
	case ModeHTTP:
		if c.UpstreamAddr == "" {
			return errors.New("watchdog http mode: no upstream address (host:port the process listens on)")
		}
		if _, _, err := net.SplitHostPort(c.UpstreamAddr); err != nil {
			return fmt.Errorf("upstream address %q: want host:port", c.UpstreamAddr)
		}
	default:
		return fmt.Errorf("watchdog mode %q: want %s or %s", c.Mode, ModeClassic, ModeHTTP)
	}
	if len(c.Process) == 0 && c.Zygote == "" {
		return errors.New("watchdog: no function process to run")
	}
	if c.ExecTimeout < 0 || c.WriteTimeout < 0 || c.ReadTimeout < 0 || c.MaxInflight < 0 || c.MaxBody < 0 {
		return errors.New("watchdog: timeouts, max in-flight and max body must be >= 0")
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.ExecTimeout == 0 {
		c.ExecTimeout = DefaultExecTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = c.ExecTimeout + 5*time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = time.Minute
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.MaxBody == 0 {
		c.MaxBody = 64 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	return nil
}

// invoker runs one request in the function.
type invoker interface {
	invoke(w http.ResponseWriter, r *http.Request)
	healthy() bool
	close()
	// cpuSeconds is the CPU the function's processes have used (classic: those that ended;
	// http: the current upstream), not the watchdog's own.
	cpuSeconds() float64
}

// Watchdog serves one function instance.
type Watchdog struct {
	cfg      Config
	inv      invoker
	inflight atomic.Int64
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration prometheus.Histogram
}

// New starts the function (http mode: its upstream process, waiting until it listens).
func New(ctx context.Context, cfg Config) (*Watchdog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Watchdog{cfg: cfg, reg: prometheus.NewRegistry()}
	w.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "watchdog_requests_total",
		Help: "Requests answered, by status code."}, []string{"code"})
	w.duration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "watchdog_request_duration_seconds",
		Help: "Time from a request's arrival to its answer.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)})
	w.reg.MustRegister(w.requests, w.duration, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "watchdog_inflight",
		Help: "Requests being handled."}, func() float64 { return float64(w.inflight.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "watchdog_function_cpu_seconds_total",
			Help: "CPU time of the function's processes."}, func() float64 { return w.inv.cpuSeconds() }))
	switch cfg.Mode {
	case ModeClassic:
		w.inv = &classic{cfg: &w.cfg}
	case ModeHTTP:
		up, err := startUpstream(ctx, &w.cfg)
		if err != nil {
			return nil, err
		}
		w.inv = up
	}
	return w, nil
}

// Handler is the watchdog's HTTP interface.
func (w *Watchdog) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/_/health", func(rw http.ResponseWriter, _ *http.Request) {
		if !w.inv.healthy() {
			http.Error(rw, "function process not running", http.StatusServiceUnavailable)
			return
		}
		_, _ = rw.Write([]byte("OK\n"))
	})
	mux.Handle("/_/metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", w.serve)
	return mux
}

func (w *Watchdog) serve(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	n := w.inflight.Add(1)
	defer w.inflight.Add(-1)
	sw := &statusWriter{ResponseWriter: rw, start: start}
	defer func() {
		w.requests.WithLabelValues(strconv.Itoa(sw.code())).Inc()
		w.duration.Observe(time.Since(start).Seconds())
	}()
	if w.cfg.MaxInflight > 0 && n > int64(w.cfg.MaxInflight) {
		http.Error(sw, fmt.Sprintf("concurrent request limit %d reached", w.cfg.MaxInflight), http.StatusTooManyRequests)
		return
	}
	if r.ContentLength > w.cfg.MaxBody {
		http.Error(sw, fmt.Sprintf("body of %d bytes is larger than the limit of %d", r.ContentLength, w.cfg.MaxBody), http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = http.MaxBytesReader(sw, r.Body, w.cfg.MaxBody)
	w.inv.invoke(sw, r)
}

// statusWriter remembers the status and stamps X-Duration-Seconds on the way out.
type statusWriter struct {
	http.ResponseWriter
	start  time.Time
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
		s.Header().Set("X-Duration-Seconds", strconv.FormatFloat(time.Since(s.start).Seconds(), 'f', 6, 64))
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (which the reverse proxy flushes streamed responses
// with) reach the connection's writer: without it a streamed response is held back until it ends.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Serve answers on cfg.Listen until ctx ends, then drains in-flight requests (up to the exec
// timeout) and stops the function.
func (w *Watchdog) Serve(ctx context.Context, ready func(addr net.Addr)) error {
	defer w.inv.close()
	ln, err := net.Listen("tcp", w.cfg.Listen)
	if err != nil {
		return fmt.Errorf("watchdog listen %s: %w", w.cfg.Listen, err)
	}
	srv := &http.Server{Handler: w.Handler(), ReadTimeout: w.cfg.ReadTimeout, WriteTimeout: w.cfg.WriteTimeout,
		ReadHeaderTimeout: w.cfg.ReadHeaderTimeout}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), w.cfg.ExecTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// CPUSeconds is the CPU time the function's processes have used (classic: the per-request
// processes that ended; http: the current upstream process).
func (w *Watchdog) CPUSeconds() float64 { return w.inv.cpuSeconds() }

// Close stops the function without serving (for a Watchdog used through Handler).
func (w *Watchdog) Close() { w.inv.close() }

// Run serves until ctx ends: New, then Serve.
func Run(ctx context.Context, cfg Config, ready func(addr net.Addr)) error {
	w, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	return w.Serve(ctx, ready)
}
