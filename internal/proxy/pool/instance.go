package pool

import (
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
	"github.com/continuum-project/continuum/internal/proxy/qos"
)

// Reasons an instance is not in its service's pool (instanceView.Reason, metrics labels).
const (
	ReasonNotReady      = "not_ready"
	reasonAttributes    = "attributes"
	reasonCooldown      = "cooldown"
	reasonAwaitingProbe = "awaiting_probe"
	ReasonHold          = "hold"
	reasonUnprobed      = "unprobed"
	reasonLatency       = "latency"
	reasonSuccessRate   = "success_rate"
	reasonOverloaded    = "overloaded"
)

// Where an estimate comes from.
const (
	EstFromTraffic = "traffic"
	estFromProbe   = "probe"
	estNone        = "none"
)

// Instance is the proxy's view of one discovered instance. Fields below mu are guarded by the
// owning service's mu; outstanding is read without it by the balancers.
type Instance struct {
	// ID and target never change (a new URL makes a new instance), so the request path reads
	// them without the lock; disc is rewritten by discovery updates and needs it.
	ID string
	// IDHeader is the X-Continuum-Instance header's value, shared by every answer (read-only).
	IDHeader []string
	Target   *url.URL // scheme and host of disc.URL
	Addr     string   // host:port that TCP probes and the transport dial
	// TLSName is the TLS server name for an https:// instance ("" for http://): the
	// transport speaks TLS to it, verified for that name.
	TLSName string
	disc    discovery.Instance

	Outstanding atomic.Int64
	// Series are its metrics that every request updates (read without the lock).
	Series *metrics.InstanceSeries

	// Epoch counts the times the instance's samples were cleared (QoS evictions). An attempt
	// records it when it starts; an answer from an older epoch was sent before the samples
	// were cleared and is not a sample of the instance as it is now (written under
	// service.mu, read without it by the request path).
	Epoch atomic.Uint64

	// guarded by service.mu
	win qos.Window
	// rtt is the EWMA of probe times (TCP connect, or HTTP probe response) taken in rttEpoch;
	// after an eviction it is stale like the samples, and the estimate waits for a new probe.
	rtt      time.Duration
	rttKnown bool
	rttEpoch uint64
	// net is the EWMA of TCP connect times, the network round trip to the instance's host
	// (what proximity weighs); it is not cleared by evictions, which are about the service.
	net          time.Duration
	netKnown     bool
	probedAt     time.Time
	probeDue     time.Time // zero: no probe scheduled
	probing      bool
	probeStarted time.Time // when the running probe was scheduled
	probeErr     string
	// reprobe: a re-estimation wants this instance probed now, even if traffic is fresh.
	reprobe bool
	// initProbe marks the probes of the activation batch, which the first request waits for.
	initProbe bool
	// failures counts consecutive failures (requests or probes); it sets the cooldown's length
	// and is reset by a successful request.
	failures      int
	cooldownUntil time.Time
	// needsProbe: the cooldown is over but no probe has succeeded since the failure; the
	// instance takes no traffic until one does, so a dead instance costs probes, not requests.
	needsProbe bool
	// evictions counts QoS evictions (latency or success rate) in a row; it sets the hold's
	// length and is reset after the instance stays in the pool for Cooldown.Max.
	evictions int
	holdUntil time.Time
	holdWhy   string
	// probation: it rejoined the pool after a QoS eviction, and until an answer within the
	// limit shows it recovered it takes one request at a time, so a still-slow instance
	// costs one late answer per hold rather than every request sent before the first one
	// returns.
	probation  bool
	overloaded bool
	attrOK     bool
	attrWhy    string

	// results of the last evaluation
	Est      time.Duration
	estFrom  string
	Samples  int
	success  float64
	outcomes int
	reason   string // "" = in the pool
	Why      string // human explanation of reason
	InPool   bool
	since    time.Time // when inPool last changed
	lastErr  string
	served   int64
}

func NewInstance(d discovery.Instance, latWindow, outcomes int) (*Instance, error) {
	if err := discovery.CheckInstanceID(d.ID); err != nil {
		// The union refuses these already (package sources); an instance made another way must
		// not carry such an ID into answers either.
		return nil, fmt.Errorf("instance id %w", err)
	}
	u, err := url.Parse(d.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("instance %s: url %q: want http://host:port", d.ID, d.URL)
	}
	in := &Instance{ID: d.ID, IDHeader: []string{d.ID}, disc: d, Target: &url.URL{Scheme: u.Scheme, Host: u.Host},
		win: qos.NewWindow(latWindow, outcomes), estFrom: estNone, success: 1}
	in.Addr = in.hostPort()
	if u.Scheme == "https" {
		in.TLSName = u.Hostname()
	}
	return in, nil
}

// hostPort is what TCP probes connect to.
func (in *Instance) hostPort() string {
	if in.Target.Port() != "" {
		return in.Target.Host
	}
	if in.Target.Scheme == "https" {
		return in.Target.Host + ":443"
	}
	return in.Target.Host + ":80"
}

// backoff is base * 2^(n-1), capped at max (n >= 1).
func backoff(b config.BackoffConfig, n int) time.Duration {
	d := b.Base.Duration
	for i := 1; i < n && d < b.Max.Duration; i++ {
		d *= 2
	}
	return min(d, b.Max.Duration)
}

// fmtMs prints a duration in milliseconds with two decimals, for explanations.
func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
