package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/qos"
	"github.com/continuum-project/continuum/internal/spec"
)

// Strategies a service may use (ServiceConfig.Strategy).
const (
	StrategyQoS        = "qos"
	StrategyRoundRobin = "round-robin"
	StrategyRandom     = "random"
	StrategyProximity  = "proximity"
)

// Balancing within the QoS pool (ServiceConfig.Balance).
const (
	BalanceEqual            = "equal"
	BalanceLeastOutstanding = "least-outstanding"
	// BalanceHeadroom is least-outstanding with each instance's count divided by its latency
	// headroom (limit - estimate), so that instances far under the limit take more.
	BalanceHeadroom = "headroom"
)

// Fallbacks when the QoS pool and the overloaded fallback are both empty (QoSConfig.Fallback).
const (
	FallbackBestEffort = "best-effort"
	FallbackNone       = "none"
)

var (
	Strategies = []string{StrategyQoS, StrategyRoundRobin, StrategyRandom, StrategyProximity}
	balances   = []string{BalanceEqual, BalanceLeastOutstanding, BalanceHeadroom}
	fallbacks  = []string{FallbackBestEffort, FallbackNone}
)

// Config is everything proxy.Run needs. Build it with DefaultConfig and change fields, or load it
// with LoadConfig.
type Config struct {
	// Node is the node this proxy runs on (labels metrics and /debug/pools). Default: hostname.
	Node string
	// Listen is where clients send requests (host:port). Default ":8080".
	Listen string
	// AdminListen serves /metrics, /healthz, /readyz and /debug/pools. Default
	// DefaultAdminListen (loopback); "-" disables it. An address other machines can reach needs
	// AdminTokenFile: Validate refuses it otherwise.
	AdminListen string
	// AdminTokenFile, if set, holds a token that /metrics and /debug/pools then require as
	// "Authorization: Bearer TOKEN", wherever the admin listener is. /healthz and /readyz stay
	// open for probes; /readyz then says only whether the proxy is ready.
	AdminTokenFile string
	// Sources deliver the instances; their snapshots are united (the first source that reports
	// an instance ID wins; node loads take the highest value any source reports).
	Sources []discovery.Source
	// Defaults apply to every service that Services does not list.
	Defaults ServiceConfig
	// Services overrides Defaults per service (keys are service names, matched case-insensitively).
	// LoadConfig fills each entry from Defaults first, so an entry only holds what it changes.
	Services map[string]ServiceConfig
	// ShutdownTimeout bounds the drain of requests in flight when proxy.Run's context ends.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout is how long a client may take to send a request's headers (default
	// 10 s): a slow client (slowloris) is disconnected after it and holds nothing longer.
	ReadHeaderTimeout time.Duration
	// WriteTimeout is how long a write of an answer to a client may take (default 60 s, as
	// nginx's send_timeout): a client that reads nothing of its answer for that long is
	// disconnected, and frees the request's slot and the instance's connection.
	WriteTimeout time.Duration
	// MaxInflight caps the requests the proxy handles at once (default 512; 0: no cap). Past it
	// requests are answered 503 at once: each request in flight holds about 100 KiB (two
	// connections' buffers and goroutines), and an overloaded node should shed load rather
	// than grow until it is killed.
	MaxInflight int
	// InstanceRootCAs are the roots the certificates of https:// instances are verified
	// against, by the transport and the probes alike (nil: the system's roots).
	InstanceRootCAs *x509.CertPool
	// Logger receives the proxy's logs; nil means slog.Default().
	Logger *slog.Logger
}

// ServiceConfig says how one service is routed. In YAML every field is optional; defaults come
// from the file's `defaults:` section, which itself starts from DefaultServiceConfig.
type ServiceConfig struct {
	// Strategy: qos (default), round-robin, random or proximity.
	Strategy string `yaml:"strategy"`
	// Alpha is proximity's trade-off, 0 (spread evenly) .. 1 (nearest only).
	Alpha float64 `yaml:"alpha"`
	// Balance is how the qos strategy spreads requests over its pool: equal (default),
	// least-outstanding or headroom.
	Balance string `yaml:"balance"`
	// Timeout bounds the wait for an upstream's response headers, retries included; past it
	// the client gets 504. The body is not bounded (it may stream). Default 10 s.
	Timeout spec.Duration `yaml:"timeout"`
	// ConnectTimeout bounds one TCP connect to an instance; a connect that fails or times out
	// is retried on another instance. Default 1 s.
	ConnectTimeout spec.Duration `yaml:"connect_timeout"`
	// Retries is how many other instances a request may try after connection failures
	// (default 2; 0 disables retries).
	Retries int `yaml:"retries"`
	// QoS is the requirement the qos strategy keeps its pool to.
	QoS QoSConfig `yaml:"qos"`
	// Probe configures the latency probes (initial estimate, background re-probing).
	Probe ProbeConfig `yaml:"probe"`
	// Cooldown is the backoff of an instance after failures and after leaving the pool.
	Cooldown BackoffConfig `yaml:"cooldown"`
	// Estimate configures the per-instance latency estimate.
	Estimate EstimateConfig `yaml:"estimate"`
	// OverloadThreshold: an instance whose node's CPU or memory use (0..1) is above it is used
	// by the qos strategy only when the pool is otherwise empty. Default 0.95.
	OverloadThreshold float64 `yaml:"overload_threshold"`
}

// QoSConfig is a service's requirement.
type QoSConfig struct {
	// Latency is the response time the Percentile-th percentile must stay within (0: none).
	Latency spec.Duration `yaml:"latency"`
	// Percentile of response times compared with Latency, in (0, 100]. Default 95.
	Percentile float64 `yaml:"percentile"`
	// MinSuccessRate is the fraction of requests (0..1) an instance must answer without a
	// transport error, timeout or 5xx status to stay in the pool (0: none).
	MinSuccessRate float64 `yaml:"min_success_rate"`
	// Require lists attribute requirements every instance must meet, e.g. "accuracy >= 0.95",
	// "tier in [edge, fog]", "gpu == true". They apply to every strategy.
	Require []string `yaml:"require"`
	// PoolMinShare: when the pool holds fewer than this share of the candidate instances,
	// every candidate is probed again at once (re-estimation). Default 0.3.
	PoolMinShare float64 `yaml:"pool_min_share"`
	// Fallback when neither the pool nor overloaded instances can serve: best-effort (default:
	// the healthy instance with the lowest estimate) or none (answer 503).
	Fallback string `yaml:"fallback"`
}

// ProbeConfig configures probes.
type ProbeConfig struct {
	// Path: empty probes by TCP connect time to the instance's host:port (network round trip
	// only); a path such as "/healthz" probes by HTTP GET and counts its response time as a
	// latency sample, which also sees processing delay.
	Path string `yaml:"path"`
	// Interval between probes of an instance outside the pool (or idle in it). Default 2 s.
	Interval spec.Duration `yaml:"interval"`
	// Timeout of one probe; slower is a failure. Default 1 s.
	Timeout spec.Duration `yaml:"timeout"`
}

// BackoffConfig is an exponential backoff: Base, 2*Base, 4*Base ... capped at Max.
type BackoffConfig struct {
	Base spec.Duration `yaml:"base"` // default 1 s
	Max  spec.Duration `yaml:"max"`  // default 30 s
}

// EstimateConfig configures the latency estimate (see estimator.go for why a windowed quantile).
type EstimateConfig struct {
	// Window is how many recent samples per instance the quantile is taken over. Default 32.
	Window int `yaml:"window"`
	// MaxAge: samples older than this no longer count. Default 30 s.
	MaxAge spec.Duration `yaml:"max_age"`
}

func Dur(d time.Duration) spec.Duration { return spec.Duration{Duration: d} }

// DefaultServiceConfig is the built-in default for every service.
func DefaultServiceConfig() ServiceConfig {
	return ServiceConfig{
		Strategy:          StrategyQoS,
		Balance:           BalanceEqual,
		Timeout:           Dur(10 * time.Second),
		ConnectTimeout:    Dur(time.Second),
		Retries:           2,
		QoS:               QoSConfig{Percentile: 95, PoolMinShare: 0.3, Fallback: FallbackBestEffort},
		Probe:             ProbeConfig{Interval: Dur(2 * time.Second), Timeout: Dur(time.Second)},
		Cooldown:          BackoffConfig{Base: Dur(time.Second), Max: Dur(30 * time.Second)},
		Estimate:          EstimateConfig{Window: 32, MaxAge: Dur(30 * time.Second)},
		OverloadThreshold: 0.95,
	}
}

// DefaultConfig listens on :8080 (admin on loopback, 127.0.0.1:9090) with no sources and DefaultServiceConfig.
func DefaultConfig() Config {
	return Config{
		Listen:            ":8080",
		AdminListen:       DefaultAdminListen,
		Defaults:          DefaultServiceConfig(),
		ShutdownTimeout:   10 * time.Second,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      60 * time.Second,
		MaxInflight:       512,
	}
}

// Validate checks every field; the error lists every problem, each naming the field and what
// is allowed.
func (c Config) Validate() error {
	var errs []error
	if err := checkListen(c.Listen, false); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	if err := checkListen(c.AdminListen, true); err != nil {
		errs = append(errs, fmt.Errorf("admin_listen: %w", err))
	} else if err := checkAdminExposure(c.AdminListen, c.AdminTokenFile); err != nil {
		errs = append(errs, err)
	}
	if c.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("shutdown_timeout %v: must be >= 0", c.ShutdownTimeout))
	}
	if c.ReadHeaderTimeout < 0 {
		errs = append(errs, fmt.Errorf("read_header_timeout %v: must be > 0 (0: the default 10s)", c.ReadHeaderTimeout))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("write_timeout %v: must be > 0 (0: the default 60s)", c.WriteTimeout))
	}
	if c.MaxInflight < 0 {
		errs = append(errs, fmt.Errorf("max_inflight %d: must be >= 0 (0: no cap)", c.MaxInflight))
	}
	for _, p := range c.Defaults.problems() {
		errs = append(errs, errors.New(p.String("defaults")))
	}
	seen := map[string]string{}
	for name, sc := range c.Services {
		if !discovery.ValidServiceName(name) {
			errs = append(errs, fmt.Errorf("services.%s: invalid service name; want letters, digits, '-', '_' or '.'", name))
		}
		if prev, dup := seen[strings.ToLower(name)]; dup {
			errs = append(errs, fmt.Errorf("services.%s: same service as services.%s (names are case-insensitive)", name, prev))
		}
		seen[strings.ToLower(name)] = name
		for _, p := range sc.problems() {
			errs = append(errs, errors.New(p.String("services."+name)))
		}
	}
	for i, s := range c.Sources {
		if s == nil {
			errs = append(errs, fmt.Errorf("sources[%d]: nil source", i))
		}
	}
	return errors.Join(errs...)
}

func checkListen(addr string, allowOff bool) error {
	if allowOff && addr == "-" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		if allowOff {
			return fmt.Errorf("%q: want host:port such as :9090, or - to disable", addr)
		}
		return fmt.Errorf("%q: want host:port such as :8080", addr)
	}
	return nil
}

// problem is a validation failure at a field path below a service's config, so that LoadConfig
// can point at the line and Validate can name the field.
type problem struct {
	path []string
	msg  string
}

func (p problem) String(prefix string) string {
	return strings.Join(append([]string{prefix}, p.path...), ".") + ": " + p.msg
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func (c ServiceConfig) problems() []problem {
	var ps []problem
	add := func(msg string, path ...string) { ps = append(ps, problem{path, msg}) }
	if !oneOf(c.Strategy, Strategies) {
		add(fmt.Sprintf("%q: want one of %s", c.Strategy, strings.Join(Strategies, ", ")), "strategy")
	}
	if !(c.Alpha >= 0 && c.Alpha <= 1) {
		add(fmt.Sprintf("%v: want a number between 0 and 1", c.Alpha), "alpha")
	}
	if !oneOf(c.Balance, balances) {
		add(fmt.Sprintf("%q: want one of %s", c.Balance, strings.Join(balances, ", ")), "balance")
	}
	if c.Timeout.Duration <= 0 {
		add(fmt.Sprintf("%v: want a duration > 0 such as 5s", c.Timeout), "timeout")
	}
	if c.ConnectTimeout.Duration <= 0 {
		add(fmt.Sprintf("%v: want a duration > 0 such as 1s", c.ConnectTimeout), "connect_timeout")
	}
	if c.Retries < 0 || c.Retries > 10 {
		add(fmt.Sprintf("%d: want 0..10", c.Retries), "retries")
	}
	q := c.QoS
	if q.Latency.Duration < 0 {
		add(fmt.Sprintf("%v: want a duration >= 0 (0: no latency requirement)", q.Latency), "qos", "latency")
	}
	if !(q.Percentile > 0 && q.Percentile <= 100) {
		add(fmt.Sprintf("%v: want a number in (0, 100], e.g. 95", q.Percentile), "qos", "percentile")
	}
	if !(q.MinSuccessRate >= 0 && q.MinSuccessRate <= 1) {
		add(fmt.Sprintf("%v: want a fraction between 0 and 1, e.g. 0.99", q.MinSuccessRate), "qos", "min_success_rate")
	}
	for i, r := range q.Require {
		if _, err := qos.ParseRequirement(r); err != nil {
			add(err.Error(), "qos", fmt.Sprintf("require[%d]", i))
		}
	}
	if !(q.PoolMinShare >= 0 && q.PoolMinShare <= 1) {
		add(fmt.Sprintf("%v: want a fraction between 0 and 1, e.g. 0.3", q.PoolMinShare), "qos", "pool_min_share")
	}
	if !oneOf(q.Fallback, fallbacks) {
		add(fmt.Sprintf("%q: want one of %s", q.Fallback, strings.Join(fallbacks, ", ")), "qos", "fallback")
	}
	if p := c.Probe.Path; p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t\r\n")) {
		add(fmt.Sprintf("%q: want an absolute path such as /healthz, or empty for TCP connect probes", p), "probe", "path")
	}
	if c.Probe.Interval.Duration <= 0 {
		add(fmt.Sprintf("%v: want a duration > 0 such as 2s", c.Probe.Interval), "probe", "interval")
	}
	if c.Probe.Timeout.Duration <= 0 {
		add(fmt.Sprintf("%v: want a duration > 0 such as 1s", c.Probe.Timeout), "probe", "timeout")
	}
	if c.Cooldown.Base.Duration <= 0 {
		add(fmt.Sprintf("%v: want a duration > 0 such as 1s", c.Cooldown.Base), "cooldown", "base")
	}
	if c.Cooldown.Max.Duration < c.Cooldown.Base.Duration {
		add(fmt.Sprintf("%v: want a duration >= cooldown.base (%v)", c.Cooldown.Max, c.Cooldown.Base), "cooldown", "max")
	}
	if c.Estimate.Window < 1 || c.Estimate.Window > 4096 {
		add(fmt.Sprintf("%d: want 1..4096 samples", c.Estimate.Window), "estimate", "window")
	}
	if c.Estimate.MaxAge.Duration <= 0 {
		add(fmt.Sprintf("%v: want a duration > 0 such as 30s", c.Estimate.MaxAge), "estimate", "max_age")
	}
	if !(c.OverloadThreshold > 0) || math.IsInf(c.OverloadThreshold, 0) {
		add(fmt.Sprintf("%v: want a fraction > 0, e.g. 0.95", c.OverloadThreshold), "overload_threshold")
	}
	return ps
}

// Validate checks one service's configuration.
func (c ServiceConfig) Validate() error {
	var errs []error
	for _, p := range c.problems() {
		errs = append(errs, errors.New(strings.Join(p.path, ".")+": "+p.msg))
	}
	return errors.Join(errs...)
}

// Service returns the configuration of a service by name.
func (c Config) Service(name string) ServiceConfig {
	if sc, ok := c.Services[name]; ok {
		return sc
	}
	for k, sc := range c.Services {
		if strings.EqualFold(k, name) {
			return sc
		}
	}
	return c.Defaults
}

// DefaultAdminListen is where the admin endpoints listen unless told: loopback only, so that
// /metrics and /debug/pools (every instance's address, attributes and errors) are not served to
// whoever can reach the node.
const DefaultAdminListen = "127.0.0.1:9090"

// checkAdminExposure refuses an admin listener other machines can reach without a token.
func checkAdminExposure(adminListen, tokenFile string) error {
	if adminListen == "-" || tokenFile != "" || httpauth.IsLoopback(adminListen) {
		return nil
	}
	return fmt.Errorf("admin_listen %q is reachable from other machines, and /metrics and /debug/pools would be open to them: "+
		"give admin_token_file (--admin-token-file), a file with a token callers send as \"Authorization: Bearer TOKEN\", "+
		"or listen on loopback (%s, the default)", adminListen, DefaultAdminListen)
}
