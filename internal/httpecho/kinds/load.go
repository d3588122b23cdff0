package kinds

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/httptarget"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[LoadConfig]{
		Name:    "http-load",
		System:  "httpecho",
		Doc:     "docs/scenarios.md#instances-components-workloads",
		Role:    kind.RoleWorkload,
		Summary: "HTTP load generator: open loop at a fixed rate or closed loop with N clients per target",
		Defaults: func() *LoadConfig {
			return &LoadConfig{Timeout: spec.Duration{Duration: time.Second}, Method: http.MethodGet}
		},
		Validate: (*LoadConfig).validate,
		Command:  loadCommand,
		Overrun:  func(c *LoadConfig) time.Duration { return c.Timeout.Duration + 15*time.Second },
		Metrics:  loadMetrics,
		Progress: func(map[string]*LoadConfig) kind.Progress {
			return loadgen.Follow(func(t loadgen.ProgressLine) string {
				return loadgen.CountsText(t.ThroughputRPS, t.Sent, t.Errors, "req")
			})
		},
	})
}

// LoadConfig is the `config:` of an http-load workload.
type LoadConfig struct {
	Targets     []LoadTarget  `yaml:"targets"`
	Rate        float64       `yaml:"rate"`    // open loop: requests/s per target
	Clients     int           `yaml:"clients"` // closed loop: clients per target
	Timeout     spec.Duration `yaml:"timeout"` // default 1s
	Method      string        `yaml:"method"`  // default GET
	BodySize    spec.Bytes    `yaml:"body_size"`
	MaxInflight int           `yaml:"max_inflight"` // 0: loadgen's default
	// QoSLatency is a response-time requirement: stats and summary report per series the share
	// of requests that succeeded within it ("qos" metric). 0: none.
	QoSLatency spec.Duration `yaml:"qos_latency,omitempty"`
	// LatencyBounds, with QoSLatency, are response-time bounds (ascending) under which stats
	// counts each series' successes, e.g. QEdgeProxy's ranges for 80 ms: [20ms, 50ms, 80ms, 120ms].
	LatencyBounds []spec.Duration `yaml:"latency_bounds,omitempty"`
	// NewConnections sends every request on a new connection (no keep-alive): a balancer that
	// picks per connection (kube-proxy behind a Service) then picks per request.
	NewConnections bool `yaml:"new_connections,omitempty"`
}

// LoadTarget is one series: a URL, or a component reached at http://<its node>:<port><path>.
type LoadTarget struct {
	Name      string `yaml:"name"`
	URL       string `yaml:"url,omitempty"`
	Component string `yaml:"component,omitempty"`
	Port      int    `yaml:"port,omitempty"` // default: the component's http endpoint
	Path      string `yaml:"path,omitempty"` // default "/"
	// Service and Host address a service behind a proxy component (kind proxy): the
	// X-Continuum-Service header and the Host header. Answers naming their instance
	// (X-Continuum-Instance) are counted per instance.
	Service string `yaml:"service,omitempty"`
	Host    string `yaml:"host,omitempty"`
}

// validate reports every problem at once, each with its key and the `continuum load http` flag
// it becomes.
func (c *LoadConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckLoad(c.Rate, c.Clients, c.Timeout.Duration, "requests/s per target")
	if c.MaxInflight < 0 {
		errs.Add("max_inflight", "--max-inflight", "%d: must be >= 0", c.MaxInflight)
	}
	if c.BodySize < 0 || c.BodySize > 64<<20 {
		errs.Add("body_size", "--body-size", "%d: must be between 0 and 64Mi bytes", c.BodySize)
	}
	if c.QoSLatency.Duration < 0 || c.QoSLatency.Duration > time.Minute {
		errs.Add("qos_latency", "--qos-latency", "%v: must be between 0s (none) and 1m", c.QoSLatency)
	}
	if c.Method == "" || strings.ToUpper(c.Method) != c.Method || strings.ContainsAny(c.Method, " \t/") {
		errs.Add("method", "--method", "%q: want an upper-case HTTP method such as GET, POST or PUT", c.Method)
	}
	if len(c.LatencyBounds) > 0 && c.QoSLatency.Duration == 0 {
		errs.Add("latency_bounds", "--latency-bound", "latency_bounds needs qos_latency")
	}
	for i, b := range c.LatencyBounds {
		if b.Duration <= 0 || b.Duration > time.Minute || i > 0 && b.Duration <= c.LatencyBounds[i-1].Duration {
			errs.Add(fmt.Sprintf("latency_bounds[%d]", i), "--latency-bound", "%v: want ascending durations > 0 and <= 1m", b)
		}
	}
	if len(c.Targets) == 0 {
		errs.Add("targets", "--target", "at least one target ({name, url} or {name, component}) is required")
	}
	seen := map[string]bool{}
	for i, t := range c.Targets {
		t.check(&errs, fmt.Sprintf("targets[%d]", i), seen)
	}
	return errs.Err()
}

// check records the problems of target t, the key at; seen holds the names of the targets
// before it.
func (t LoadTarget) check(errs *kind.FieldErrors, at string, seen map[string]bool) {
	if err := loadgen.CheckSeriesName(t.Name); err != nil {
		errs.AddErr(at+".name", "--target", err)
	} else if seen[t.Name] {
		errs.Add(at+".name", "--target", "%q: used twice", t.Name)
	}
	seen[t.Name] = true
	switch {
	case (t.URL == "") == (t.Component == ""):
		errs.Add(at, "--target", "give exactly one of url and component (%s)", t.Name)
	case t.URL != "" && (t.Port != 0 || t.Path != ""):
		errs.Add(at, "--target", "port and path go with component, not url (%s)", t.Name)
	}
	if t.Port < 0 || t.Port > 65535 {
		errs.Add(at+".port", "--target", "%d: must be between 1 and 65535", t.Port)
	}
	if !headerValueRE.MatchString(t.Service) {
		errs.Add(at+".service", "--service", "%q: a name without spaces, '/' or control characters", t.Service)
	}
	if !headerValueRE.MatchString(t.Host) {
		errs.Add(at+".host", "--host", "%q: a name without spaces, '/' or control characters", t.Host)
	}
	if t.URL != "" {
		if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Add(at+".url", "--target", "%q: want http://host[:port]/path", t.URL)
		}
	}
}

// url returns the target's URL; a component target resolves to its http endpoint (or the one on
// Port) at its node's name, which every node resolves.
func (t LoadTarget) url(env kind.Env) (string, error) {
	if t.URL != "" {
		return t.URL, nil
	}
	node, ep, err := env.Endpoint(t.Component, t.Port, kind.ProtocolHTTP)
	if err != nil {
		return "", fmt.Errorf("target %s: %w", t.Name, err)
	}
	path := t.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return "http://" + net.JoinHostPort(node, strconv.Itoa(ep.Port)) + path, nil
}

func loadCommand(env kind.Env, c *LoadConfig) (kind.Command, error) {
	f := httptarget.DefaultFlags()
	for _, t := range c.Targets {
		u, err := t.url(env)
		if err != nil {
			return kind.Command{}, err
		}
		f.Targets = append(f.Targets, t.Name+"="+u)
		if t.Service != "" {
			f.Services = append(f.Services, t.Name+"="+t.Service)
		}
		if t.Host != "" {
			f.Hosts = append(f.Hosts, t.Name+"="+t.Host)
		}
	}
	load := &f.Config.Load
	if c.QoSLatency.Duration > 0 {
		load.QoSLatency = c.QoSLatency.Duration
		for _, b := range c.LatencyBounds {
			load.LatencyBounds = append(load.LatencyBounds, b.Duration)
		}
	}
	if c.Clients > 0 {
		load.Clients = c.Clients // without --rate: the closed loop
	} else {
		load.Rate = c.Rate
	}
	load.Timeout, f.Config.Method, f.Config.BodySize = c.Timeout.Duration, c.Method, int(c.BodySize)
	if c.MaxInflight > 0 {
		load.MaxInflight = c.MaxInflight
	}
	f.Config.NewConnections = c.NewConnections
	load.Duration, load.Warmup, load.OutDir, f.Config.Seed = env.Duration, env.Warmup, env.OutDir, env.Seed
	return kind.Command{Args: append([]string{env.Binary, "load", "http"}, cli.Args(httptarget.DefaultFlags(), f)...)}, nil
}

// headerValueRE matches what http-load may send as a Host or service header ("" = unset).
var headerValueRE = regexp.MustCompile(`^[A-Za-z0-9._:\[\]-]*$`)

// loadMetrics adds, per series of every http-load instance, what the runner's generic summary
// does not know: the QoS figures (average response time of the successful requests and the
// share of all requests answered successfully within the requirement) and the share of requests
// each serving instance answered (behind a proxy), from the instance's stats.json.
func loadMetrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var st results.Stats
		if results.ReadJSON(filepath.Join(in.OutDir, results.StatsFile), &st) != nil {
			continue // the workload never wrote it (or wrote it badly); the report says so
		}
		for series, ss := range st.Series {
			p := in.Name + "/" + series + "/"
			if q := ss.QoS; q != nil {
				m[p+"qos"] = map[string]float64{"latency_ms": q.LatencyMS, "within_pct": q.WithinPct,
					"within": float64(q.Within), "total": float64(q.Total), "mean_ms": ss.Latency.Mean}
			}
			if len(ss.Instances) > 0 {
				share := map[string]float64{}
				for name, is := range ss.Instances {
					share[name] = math.Round(is.Share*1e6) / 1e4
				}
				m[p+"instance_share_pct"] = share
			}
		}
	}
	return m
}
