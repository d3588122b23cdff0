package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/continuum-project/continuum/internal/faas/copybuf"
	"github.com/continuum-project/continuum/internal/httpjson"
)

// InstanceHeader names the instance that answered (the header Continuum's load generator
// counts requests per instance by).
const InstanceHeader = "X-Continuum-Instance"

// Config is one gateway.
type Config struct {
	Functions []*Function
	Provider  Provider
	// Tick is how often autoscalers decide (default DefaultTick).
	Tick   time.Duration
	Logger *slog.Logger
	// OnScale, if set, is called for every change of a function's wanted replicas (for a
	// scaling log).
	OnScale func(ScaleEvent)
	// Auth, if set, is what every /system/ request must carry as basic auth (401 otherwise).
	// Nil leaves the system API open: the command line sets it unless told not to.
	Auth *Credentials
	// ShutdownGrace bounds how long Close lets requests under way finish (default
	// DefaultShutdownGrace; a function's exec timeout, if shorter, bounds its own): past it, or
	// past the exec timeout, each instance is stopped and what it still serves fails with 503.
	ShutdownGrace time.Duration
}

// DefaultShutdownGrace is Config.ShutdownGrace's default, Kubernetes' default
// terminationGracePeriodSeconds: a gateway asked to stop has stopped within it.
const DefaultShutdownGrace = 30 * time.Second

// errStopped fails the requests an instance still serves when it is stopped past its grace,
// and those that arrive once Close has begun.
//
// abortWriteGrace is how long a failed request may take to write its 503 (or the rest of what
// it had) before its writes are cut.
const abortWriteGrace = time.Second

var errStopped = errors.New("the instance was stopped (the gateway is shutting down or scaled it away) before the answer was complete")

// DefaultTick is Config.Tick's default: autoscalers decide every second.
const DefaultTick = time.Second

// ScaleEvent is a change of a function's wanted instances.
type ScaleEvent struct {
	At       time.Time `json:"at"`
	Function string    `json:"function"`
	From, To int       `json:"-"`
	Reason   string    `json:"reason"`
}

// Gateway routes and scales.
type Gateway struct {
	cfg  Config
	fns  map[string]*fnState
	reg  *prometheus.Registry
	m    metrics
	stop context.CancelFunc
	done sync.WaitGroup
	// starts are instances being started and drains instances being stopped after a
	// scale-down: Close waits for both, so none is left running when it closes the provider.
	starts sync.WaitGroup
	drains sync.WaitGroup
	clock  func() time.Time
	// closing is closed when Close begins (requests then fail instead of waiting for an
	// instance), graceOver when its shutdown grace has passed (every drain then ends).
	closing, graceOver chan struct{}
	closeOnce          sync.Once
}

type metrics struct {
	invocations *prometheus.CounterVec
	seconds     *prometheus.HistogramVec
	replicas    *prometheus.GaugeVec
	inflight    *prometheus.GaugeVec
	coldStart   *prometheus.HistogramVec
}

// New validates the functions and starts each one's initial instances.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ShutdownGrace < 0 {
		return nil, fmt.Errorf("shutdown grace %v: want >= 0 (0: the default, %v)", cfg.ShutdownGrace, DefaultShutdownGrace)
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	g := &Gateway{cfg: cfg, fns: map[string]*fnState{}, reg: prometheus.NewRegistry(), clock: time.Now,
		closing: make(chan struct{}), graceOver: make(chan struct{})}
	g.m = metrics{
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gateway_function_invocation_total",
			Help: "Invocations answered, by function and status code."}, []string{"function_name", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gateway_functions_seconds",
			Help: "Time from a request's arrival at the gateway to its answer.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)},
			[]string{"function_name"}),
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gateway_service_count",
			Help: "Instances ready to serve, by function."}, []string{"function_name"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gateway_function_inflight",
			Help: "Requests under way, by function."}, []string{"function_name"}),
		coldStart: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gateway_cold_start_seconds",
			Help: "Time from a request finding no instance until one was ready.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)},
			[]string{"function_name"}),
	}
	g.reg.MustRegister(g.m.invocations, g.m.seconds, g.m.replicas, g.m.inflight, g.m.coldStart)
	for _, f := range cfg.Functions {
		if err := f.Validate(); err != nil {
			return nil, err
		}
		if g.fns[f.Name] != nil {
			return nil, fmt.Errorf("function %s: defined twice", f.Name)
		}
		if f.URL == "" && cfg.Provider == nil {
			return nil, fmt.Errorf("function %s: no provider to start its instances with", f.Name)
		}
		fs := newFnState(g, f)
		if f.KeyFile != "" {
			k, err := readKey(f.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("function %s: %w", f.Name, err)
			}
			fs.key = k
		}
		g.fns[f.Name] = fs
	}
	// Zygotes start with the gateway, so even the first cold start forks a warm process.
	if p, ok := cfg.Provider.(interface {
		Prepare(context.Context, *Function) error
	}); ok {
		for _, f := range cfg.Functions {
			if err := p.Prepare(ctx, f); err != nil {
				// The zygotes of the functions prepared before this one run already.
				if c, ok := cfg.Provider.(interface{ Close() }); ok {
					c.Close()
				}
				return nil, err
			}
		}
	}
	rctx, stop := context.WithCancel(context.Background())
	g.stop = stop
	for _, fs := range g.fns {
		fs.setWanted(fs.fn.Replicas, "initial")
		g.done.Add(1)
		go func() {
			defer g.done.Done()
			fs.reconcile(rctx)
		}()
	}
	// The initial instances are ready before the gateway serves.
	for _, fs := range g.fns {
		if err := fs.waitReady(ctx, fs.fn.Replicas); err != nil {
			g.Close()
			return nil, err
		}
	}
	g.done.Add(1)
	go func() {
		defer g.done.Done()
		g.autoscale(rctx)
	}()
	return g, nil
}

// Close stops scaling and every instance. It lets the requests under way finish for up to
// Config.ShutdownGrace (each function's exec timeout, if shorter, bounds its own), then stops
// the instances anyway and fails what they still serve with 503; requests that arrive once
// Close has begun get 503 at once. So Close returns within the grace plus the time the
// provider takes to stop the instances, however stuck a call is.
func (g *Gateway) Close() {
	g.closeOnce.Do(func() {
		close(g.closing)
		time.AfterFunc(g.cfg.ShutdownGrace, func() { close(g.graceOver) })
	})
	g.stop()
	g.done.Wait()
	g.starts.Wait()
	g.drains.Wait()
	var wg sync.WaitGroup
	for _, fs := range g.fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs.stopAll()
		}()
	}
	wg.Wait()
	if c, ok := g.cfg.Provider.(interface{ Close() }); ok {
		c.Close()
	}
}

// Handler serves /function/NAME/..., the system API, /healthz and /metrics. With
// Config.Auth, everything under /system/ needs it, unknown paths included (a caller without
// credentials learns nothing of which exist); /function/ is public unless a function has a key,
// and /healthz and /metrics are public, as on OpenFaaS (probes and Prometheus scrape them).
func (g *Gateway) Handler() http.Handler {
	system := http.NewServeMux()
	system.HandleFunc("GET /system/functions", g.listFunctions)
	system.HandleFunc("POST /system/scale-function/{name}", g.scaleFunction)
	system.HandleFunc("/system/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("no route %s %s (want GET /system/functions or POST /system/scale-function/NAME)", r.Method, r.URL.Path), http.StatusNotFound)
	})
	var sys http.Handler = system
	if g.cfg.Auth != nil {
		sys = requireBasicAuth(g.cfg.Auth, system)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/function/", g.invoke)
	mux.Handle("/system/", sys)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK\n")) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{}))
	return mux
}

func (g *Gateway) invoke(w http.ResponseWriter, r *http.Request) {
	name, path, rawPath, err := functionPath(r.URL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fs := g.fns[name]
	if fs == nil {
		http.Error(w, fmt.Sprintf("no function %q (GET /system/functions lists them)", name), http.StatusNotFound)
		return
	}
	if fs.key != "" {
		if !checkKey(r, fs.key) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="function `+name+`"`)
			http.Error(w, fmt.Sprintf("function %s needs its key: send Authorization: Bearer KEY", name), http.StatusUnauthorized)
			return
		}
		// The key is the gateway's business: the function does not see it. A shallow copy
		// of the request, as serve makes, so the caller's headers are not changed under it.
		r = r.Clone(r.Context())
		r.Header.Del("Authorization")
	}
	fs.serve(w, r, path, rawPath)
}

// FunctionStatus is one row of GET /system/functions.
type FunctionStatus struct {
	Name              string  `json:"name"`
	Replicas          int     `json:"replicas"`          // wanted
	AvailableReplicas int     `json:"availableReplicas"` // ready
	InvocationCount   int64   `json:"invocationCount"`   // answered
	Inflight          int64   `json:"inflight"`          // under way
	Scaler            string  `json:"scaler"`            // autoscaler
	MinReplicas       int     `json:"minReplicas"`       // bounds
	MaxReplicas       int     `json:"maxReplicas"`       //
	ColdStarts        int64   `json:"coldStarts"`        // requests that waited for a first instance
	ScaleEvents       int64   `json:"scaleEvents"`       // changes of the wanted replicas
	Draining          int     `json:"drainingReplicas"`  // being removed
	Starting          int     `json:"startingReplicas"`  // being started
	LastRequestAgoS   float64 `json:"lastRequestAgoS"`   // seconds since the last request (-1: none yet)
}

// Status lists the functions, by name.
func (g *Gateway) Status() []FunctionStatus {
	var out []FunctionStatus
	for _, fs := range g.fns {
		out = append(out, fs.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (g *Gateway) listFunctions(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, g.Status())
}

// Scale sets a function's wanted replicas (clamped to its bounds).
func (g *Gateway) Scale(name string, replicas int, reason string) error {
	fs := g.fns[name]
	if fs == nil {
		return fmt.Errorf("no function %q", name)
	}
	if replicas < 0 {
		return fmt.Errorf("replicas %d: want >= 0", replicas)
	}
	fs.setWanted(replicas, reason)
	return nil
}

func (g *Gateway) scaleFunction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Replicas *int `json:"replicas"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil || req.Replicas == nil {
		http.Error(w, `body: want {"replicas": N}`, http.StatusBadRequest)
		return
	}
	if err := g.Scale(r.PathValue("name"), *req.Replicas, "api"); err != nil {
		code := http.StatusBadRequest
		if strings.HasPrefix(err.Error(), "no function") {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// fnState is a function's instances and counters.
type fnState struct {
	g   *Gateway
	fn  *Function
	key string // Function.KeyFile's key; "" = public

	mu       sync.Mutex
	wanted   int
	ready    []*instance
	draining int
	starting int
	nextID   int
	changed  chan struct{} // closed and replaced whenever ready or wanted change

	// Per request, without the lock: when the last one began (Unix ns, 0: none yet) and how
	// many began in each recent second.
	lastReq     atomic.Int64
	perSecond   secondCounts
	inflight    atomic.Int64
	answered    atomic.Int64
	coldStarts  atomic.Int64
	scaleEvents atomic.Int64
	rr          atomic.Uint64

	// The function's metric children, looked up once instead of per request.
	mInflight prometheus.Gauge
	mSeconds  prometheus.Observer
	mCodes    sync.Map // status code -> prometheus.Counter
}

type instance struct {
	Instance
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	// inflight counts the requests given to the instance (pick adds, under fnState.mu, only
	// while it is ready; done subtracts). Once draining is set (after the instance left the
	// ready set) it only falls, and whoever sees it at 0 with draining set closes idle: done,
	// or startDrain when nothing is under way. Both read the other's atomic after writing
	// their own, so one of them sees both and no wakeup is lost.
	inflight atomic.Int64
	draining atomic.Bool
	idle     chan struct{}
	idleOnce sync.Once
	// aborted is cancelled when the instance is stopped past its grace: the requests it still
	// serves are failed (their context cancelled, their writes to a client that does not read
	// cut by a past write deadline).
	aborted context.Context
	abort   context.CancelFunc
}

// done ends a request on the instance.
func (in *instance) done() {
	if in.inflight.Add(-1) == 0 && in.draining.Load() {
		in.idleOnce.Do(func() { close(in.idle) })
	}
}

// startDrain marks the instance as draining (it must have left the ready set) and returns a
// channel closed once it serves nothing.
func (in *instance) startDrain() <-chan struct{} {
	in.draining.Store(true)
	if in.inflight.Load() == 0 {
		in.idleOnce.Do(func() { close(in.idle) })
	}
	return in.idle
}

func newFnState(g *Gateway, f *Function) *fnState {
	return &fnState{g: g, fn: f, changed: make(chan struct{}),
		mInflight: g.m.inflight.WithLabelValues(f.Name), mSeconds: g.m.seconds.WithLabelValues(f.Name)}
}

// invocations is the counter of answers with a status code.
func (fs *fnState) invocations(code int) prometheus.Counter {
	if c, ok := fs.mCodes.Load(code); ok {
		return c.(prometheus.Counter)
	}
	c, _ := fs.mCodes.LoadOrStore(code, fs.g.m.invocations.WithLabelValues(fs.fn.Name, strconv.Itoa(code)))
	return c.(prometheus.Counter)
}

// notifyLocked wakes whoever waits for a change.
func (fs *fnState) notifyLocked() {
	close(fs.changed)
	fs.changed = make(chan struct{})
}

func (fs *fnState) setWanted(n int, reason string) {
	n = min(max(n, fs.fn.MinReplicas), fs.fn.MaxReplicas)
	fs.mu.Lock()
	from := fs.wanted
	if from == n && reason != "initial" {
		fs.mu.Unlock()
		return
	}
	fs.wanted = n
	fs.notifyLocked()
	fs.mu.Unlock()
	if reason == "initial" {
		return
	}
	fs.scaleEvents.Add(1)
	fs.g.cfg.Logger.Info("scale", "function", fs.fn.Name, "from", from, "to", n, "reason", reason)
	if fs.g.cfg.OnScale != nil {
		fs.g.cfg.OnScale(ScaleEvent{At: fs.g.clock(), Function: fs.fn.Name, From: from, To: n, Reason: reason})
	}
}

// reconcile starts and stops instances until ready+starting matches wanted, until ctx ends.
func (fs *fnState) reconcile(ctx context.Context) {
	for {
		fs.mu.Lock()
		have := len(fs.ready) + fs.starting
		want := fs.wanted
		ch := fs.changed
		switch {
		case have < want:
			for i := have; i < want; i++ {
				fs.nextID++
				id := fs.fn.Name + "-" + strconv.Itoa(fs.nextID)
				fs.starting++
				fs.g.starts.Add(1)
				go func() {
					defer fs.g.starts.Done()
					fs.start(ctx, id)
				}()
			}
		case len(fs.ready) > want:
			// Remove the least busy: they drain soonest.
			sort.Slice(fs.ready, func(i, j int) bool { return fs.ready[i].inflight.Load() > fs.ready[j].inflight.Load() })
			gone := fs.ready[want:]
			fs.ready = append([]*instance(nil), fs.ready[:want]...)
			fs.draining += len(gone)
			fs.g.m.replicas.WithLabelValues(fs.fn.Name).Set(float64(len(fs.ready)))
			for _, in := range gone {
				fs.g.drains.Add(1)
				go func() {
					defer fs.g.drains.Done()
					fs.drain(in)
				}()
			}
		}
		fs.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

func (fs *fnState) start(ctx context.Context, id string) {
	var inst Instance
	var err error
	if fs.fn.URL != "" {
		inst = Instance{ID: id, URL: fs.fn.URL} // runs already
	} else {
		inst, err = fs.g.cfg.Provider.Start(ctx, fs.fn, id)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.starting--
	if err != nil {
		fs.g.cfg.Logger.Warn("instance did not start", "function", fs.fn.Name, "id", id, "err", err)
		if ctx.Err() == nil {
			// Try again on the next change or tick rather than spinning; Close waits for
			// this goroutine as for the start itself, and cancelling ctx ends it.
			fs.g.starts.Add(1)
			go func() {
				defer fs.g.starts.Done()
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				fs.mu.Lock()
				fs.notifyLocked()
				fs.mu.Unlock()
			}()
		}
		return
	}
	u, _ := url.Parse(inst.URL)
	in := &instance{Instance: inst, transport: &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second},
		idle: make(chan struct{})}
	in.aborted, in.abort = context.WithCancel(context.Background())
	in.proxy = &httputil.ReverseProxy{
		// The function's server gets its own URL's host as Host, never the client's: with the
		// client's, a caller of a public function could pick another virtual host on the same
		// server (a key-protected function's). The client's Host goes in X-Forwarded-Host, with
		// X-Forwarded-For and -Proto, as OpenFaaS' gateway does.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport:  in.transport,
		BufferPool: copybuf.Shared,
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(InstanceHeader, inst.ID)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(context.Cause(r.Context()), errStopped) {
				http.Error(w, fmt.Sprintf("function %s instance %s: %v", fs.fn.Name, inst.ID, errStopped), http.StatusServiceUnavailable)
				return
			}
			if errors.Is(r.Context().Err(), context.DeadlineExceeded) {
				http.Error(w, fmt.Sprintf("function %s exceeded its exec timeout of %v", fs.fn.Name, fs.fn.ExecTimeout), http.StatusGatewayTimeout)
				return
			}
			http.Error(w, fmt.Sprintf("function %s instance %s: %v", fs.fn.Name, inst.ID, err), http.StatusBadGateway)
		},
	}
	fs.ready = append(fs.ready, in)
	fs.g.m.replicas.WithLabelValues(fs.fn.Name).Set(float64(len(fs.ready)))
	fs.notifyLocked()
}

// drain stops an instance once the requests it was given are answered, or once its grace is
// over: the function's exec timeout from now (no request in time lasts longer: a request still
// under way then is stuck, e.g. writing to a client that does not read) or the end of Close's
// shutdown grace, whichever comes first. What is still under way then fails with 503.
func (fs *fnState) drain(in *instance) {
	idle := in.startDrain()
	t := time.NewTimer(fs.fn.ExecTimeout)
	select {
	case <-idle:
	case <-t.C:
		fs.g.cfg.Logger.Warn("instance stopped with requests under way: its exec timeout passed while draining",
			"function", fs.fn.Name, "id", in.ID, "inflight", in.inflight.Load())
	case <-fs.g.graceOver:
		fs.g.cfg.Logger.Warn("instance stopped with requests under way: the shutdown grace passed",
			"function", fs.fn.Name, "id", in.ID, "inflight", in.inflight.Load())
	}
	t.Stop()
	in.abort()
	if fs.fn.URL != "" {
		// not ours to stop
	} else if err := fs.g.cfg.Provider.Stop(context.Background(), in.Instance); err != nil {
		fs.g.cfg.Logger.Warn("instance did not stop", "function", fs.fn.Name, "id", in.ID, "err", err)
	}
	in.transport.CloseIdleConnections()
	fs.mu.Lock()
	fs.draining--
	fs.notifyLocked()
	fs.mu.Unlock()
}

func (fs *fnState) stopAll() {
	fs.mu.Lock()
	gone := fs.ready
	fs.ready = nil
	fs.draining += len(gone)
	fs.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range gone {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs.drain(in)
		}()
	}
	wg.Wait()
}

// waitReady waits until n instances are ready.
func (fs *fnState) waitReady(ctx context.Context, n int) error {
	for {
		fs.mu.Lock()
		ok, ch := len(fs.ready) >= n, fs.changed
		fs.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("function %s: %d instance(s) not ready: %w", fs.fn.Name, n, ctx.Err())
		case <-ch:
		}
	}
}

// pick takes the ready instance with the fewest requests under way (ties in turn), counting
// the request on it; with none ready it asks for one and waits, up to the exec timeout.
func (fs *fnState) pick(ctx context.Context) (*instance, error) {
	var waitedSince time.Time
	for {
		// Once Close has begun nothing new is forwarded, ready instances or not (Close removes
		// them only after the drains under way, up to the whole shutdown grace).
		select {
		case <-fs.g.closing:
			return nil, errStopped
		default:
		}
		fs.mu.Lock()
		if n := len(fs.ready); n > 0 {
			start := int(fs.rr.Add(1) % uint64(n))
			best := fs.ready[start]
			for i := 1; i < n; i++ {
				if c := fs.ready[(start+i)%n]; c.inflight.Load() < best.inflight.Load() {
					best = c
				}
			}
			best.inflight.Add(1)
			fs.mu.Unlock()
			if !waitedSince.IsZero() {
				fs.coldStarts.Add(1)
				fs.g.m.coldStart.WithLabelValues(fs.fn.Name).Observe(time.Since(waitedSince).Seconds())
			}
			return best, nil
		}
		if waitedSince.IsZero() {
			waitedSince = time.Now()
		}
		scaleFromZero := fs.wanted == 0
		ch := fs.changed
		fs.mu.Unlock()
		if scaleFromZero {
			fs.setWanted(1, "request while scaled to zero")
		}
		select {
		case <-ctx.Done():
			return nil, errNoInstance
		case <-fs.g.closing:
			return nil, errStopped
		case <-ch:
		}
	}
}

// serve forwards r to an instance at path (rawPath: as the client escaped it, see functionPath).
func (fs *fnState) serve(w http.ResponseWriter, r *http.Request, path, rawPath string) {
	start := time.Now()
	fs.inflight.Add(1)
	fs.mInflight.Inc()
	fs.lastReq.Store(start.UnixNano())
	fs.perSecond.add(start.Unix())
	sw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
	defer func() {
		fs.inflight.Add(-1)
		fs.answered.Add(1)
		fs.mInflight.Dec()
		fs.invocations(sw.code).Inc()
		fs.mSeconds.Observe(time.Since(start).Seconds())
	}()
	cctx, cancelCause := context.WithCancelCause(r.Context())
	defer cancelCause(nil)
	ctx, cancel := context.WithTimeout(cctx, fs.fn.ExecTimeout)
	defer cancel()
	in, err := fs.pick(ctx)
	if err != nil {
		if errors.Is(err, errStopped) {
			http.Error(sw, fmt.Sprintf("function %s: the gateway is shutting down", fs.fn.Name), http.StatusServiceUnavailable)
			return
		}
		http.Error(sw, fmt.Sprintf("function %s: %v (within %v)", fs.fn.Name, err, fs.fn.ExecTimeout), http.StatusServiceUnavailable)
		return
	}
	defer in.done()
	// Stopping the instance past its grace fails this request: its context is cancelled, so the
	// proxy stops waiting for the instance and answers 503; if the request is still under way
	// abortWriteGrace later, it is stuck writing to a client that does not read, and its writes
	// get a past deadline. The abort finishes before serve returns, so no deadline is ever set on
	// a connection that goes on to serve its next request.
	served, aborting := make(chan struct{}), make(chan struct{})
	stopAbort := context.AfterFunc(in.aborted, func() {
		defer close(aborting)
		cancelCause(errStopped)
		t := time.NewTimer(abortWriteGrace)
		defer t.Stop()
		select {
		case <-served:
		case <-t.C:
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now())
		}
	})
	defer func() {
		close(served)
		if !stopAbort() {
			<-aborting
		}
	}()
	// A shallow copy: the proxy copies the headers it sends anyway.
	r2 := r.WithContext(ctx)
	u := *r.URL
	u.Path, u.RawPath = path, rawPath
	r2.URL = &u
	in.proxy.ServeHTTP(sw, r2)
}

// secondCounts counts events by Unix second over the last len(secondCounts) seconds, without a
// lock: a slot holds its second (the low 32 bits of it) in its upper half and that second's count
// in its lower half, so one compare-and-swap both moves a slot on to a new second and counts.
type secondCounts [64]atomic.Uint64

// maxCountedWindow is the longest window secondCounts can sum.
const maxCountedWindow = time.Duration(len(secondCounts{})-1) * time.Second

func (c *secondCounts) add(sec int64) {
	slot, tag := &c[uint64(sec)%uint64(len(c))], uint64(uint32(sec))<<32
	for {
		v := slot.Load()
		next := tag | 1
		if v&^0xffffffff == tag {
			next = v + 1
		}
		if slot.CompareAndSwap(v, next) {
			return
		}
	}
}

// count is how many events were counted in second sec (0 once its slot has moved on).
func (c *secondCounts) count(sec int64) int64 {
	v := c[uint64(sec)%uint64(len(c))].Load()
	if v>>32 != uint64(uint32(sec)) {
		return 0
	}
	return int64(v & 0xffffffff)
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (c *codeWriter) WriteHeader(code int) {
	c.code = code
	c.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (which the reverse proxy flushes streamed responses
// with) reach the connection's writer: without it a streamed response is held back until it ends.
func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (fs *fnState) status() FunctionStatus {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	ago := -1.0
	if last := fs.lastReq.Load(); last != 0 {
		ago = math.Round(time.Since(time.Unix(0, last)).Seconds()*1000) / 1000
	}
	return FunctionStatus{Name: fs.fn.Name, Replicas: fs.wanted, AvailableReplicas: len(fs.ready),
		InvocationCount: fs.answered.Load(), Inflight: fs.inflight.Load(), Scaler: fs.fn.Scaler,
		MinReplicas: fs.fn.MinReplicas, MaxReplicas: fs.fn.MaxReplicas, ColdStarts: fs.coldStarts.Load(),
		ScaleEvents: fs.scaleEvents.Load(), Draining: fs.draining, Starting: fs.starting, LastRequestAgoS: ago}
}
