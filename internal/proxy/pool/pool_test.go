package pool

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// fakeClock is the pools' clock in unit tests: time moves only when the test says.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// testService builds an active service (as after its first request) whose instances i0..i(n-1)
// each run on node n<i>; no goroutine runs: the test drives schedule and probeDone itself.
func testService(t *testing.T, cfg config.ServiceConfig, clk *fakeClock, n int, nodes map[string]discovery.NodeLoad) (*Service, []*Instance) {
	t.Helper()
	s, err := NewService("svc", cfg, clk.Now, discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	var list []discovery.Instance
	for i := range n {
		list = append(list, discovery.Instance{ID: fmt.Sprintf("i%d", i), Service: "svc",
			URL: fmt.Sprintf("http://10.0.0.%d:80", i+1), Node: fmt.Sprintf("n%d", i), Ready: true})
	}
	s.SetInstances(list, nodes)
	s.Mu.Lock()
	s.ActivateLocked()
	s.Mu.Unlock()
	ins := make([]*Instance, n)
	for i := range n {
		ins[i] = s.Lookup(fmt.Sprintf("i%d", i))
	}
	return s, ins
}

// probeAll runs the probes schedule says are due, each answering with lat[instance] (absent:
// a failure).
func probeAll(s *Service, lat map[*Instance]time.Duration) []*Instance {
	due, _ := s.schedule()
	for _, in := range due {
		if d, ok := lat[in]; ok {
			s.ProbeDone(in, probeResult{Lat: d, Net: d}, nil)
		} else {
			s.ProbeDone(in, probeResult{}, errors.New("connection refused"))
		}
	}
	return due
}

func qosConfig(latency time.Duration) config.ServiceConfig {
	c := config.DefaultServiceConfig()
	c.QoS.Latency = config.Dur(latency)
	c.Cooldown = config.BackoffConfig{Base: config.Dur(time.Second), Max: config.Dur(8 * time.Second)}
	c.Probe.Interval = config.Dur(2 * time.Second)
	return c
}

func reasons(s *Service) map[string]string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	out := map[string]string{}
	for _, in := range s.order {
		r := in.reason
		if r == "" {
			r = "pool"
		}
		out[in.disc.ID] = r
	}
	return out
}

func TestProxyInitialEstimateFromProbes(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 3, nil)
	if r := reasons(s); r["i0"] != reasonUnprobed {
		t.Fatalf("before probes: %v", r)
	}
	due := probeAll(s, map[*Instance]time.Duration{in[0]: 5 * time.Millisecond, in[1]: 60 * time.Millisecond, in[2]: 120 * time.Millisecond})
	if len(due) != 3 {
		t.Fatalf("activation probes %d instances, want 3", len(due))
	}
	want := map[string]string{"i0": "pool", "i1": "pool", "i2": reasonLatency}
	if r := reasons(s); fmt.Sprint(r) != fmt.Sprint(want) {
		t.Fatalf("after probes: %v, want %v", r, want)
	}
}

func TestProxyCooldownBackoffGrowsAndProbeReadmits(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	probeAll(s, map[*Instance]time.Duration{in[0]: time.Millisecond, in[1]: time.Millisecond})
	a := in[0]

	s.observe(a, time.Millisecond, OutcomeFailure, "connection refused")
	s.observe(a, time.Millisecond, OutcomeFailure, "connection refused") // same outage
	if a.failures != 1 || a.reason != reasonCooldown || !a.cooldownUntil.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("after failures: failures %d, reason %q, cooldown until +%v", a.failures, a.reason, a.cooldownUntil.Sub(clk.Now()))
	}
	// Each failed re-probe doubles the cooldown, up to the maximum (8 s).
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if due := probeAll(s, nil); len(due) != 0 {
			t.Fatalf("step %d: probed %d instances during the cooldown", i, len(due))
		}
		clk.Advance(a.cooldownUntil.Sub(clk.Now()))
		due := probeAll(s, map[*Instance]time.Duration{in[1]: time.Millisecond})
		if len(due) == 0 || due[0] != a {
			t.Fatalf("step %d: cooldown ended but %v probed", i, due)
		}
		if got := a.cooldownUntil.Sub(clk.Now()); got != want || a.reason != reasonCooldown {
			t.Fatalf("step %d: cooldown %v (%s), want %v", i, got, a.reason, want)
		}
	}
	// Recovered: the next probe succeeds and the instance rejoins with no request sent to it.
	clk.Advance(a.cooldownUntil.Sub(clk.Now()))
	served := a.served
	probeAll(s, map[*Instance]time.Duration{a: 2 * time.Millisecond, in[1]: time.Millisecond})
	if a.reason != "" || !a.InPool || a.served != served {
		t.Fatalf("after a good probe: reason %q, in pool %v, served %d -> %d", a.reason, a.InPool, served, a.served)
	}
	// The failure count survives the probe (a flapping instance keeps its long cooldown) and
	// resets with the first successful request.
	if a.failures == 0 {
		t.Fatal("failures reset by a probe")
	}
	s.observe(a, time.Millisecond, OutcomeOK, "")
	if a.failures != 0 {
		t.Fatalf("failures = %d after a success", a.failures)
	}
}

func TestProxyLatencyEvictionHoldAndReadmissionWithoutTraffic(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	a, b := in[0], in[1]
	probeAll(s, map[*Instance]time.Duration{a: time.Millisecond, b: time.Millisecond})

	// One answer over the limit: with fewer than 20 samples the p95 is the maximum.
	s.observe(a, 120*time.Millisecond, OutcomeOK, "")
	if a.reason != ReasonHold || a.evictions != 1 || a.holdUntil.Sub(clk.Now()) != time.Second {
		t.Fatalf("after a slow answer: reason %q, evictions %d, hold %v", a.reason, a.evictions, a.holdUntil.Sub(clk.Now()))
	}
	for range 50 {
		if got, _ := s.Pick(nil); got != b {
			t.Fatalf("picked %s while it is held", got.disc.ID)
		}
	}
	// The hold ends; probes (no traffic) bring it back.
	clk.Advance(time.Second)
	probeAll(s, map[*Instance]time.Duration{a: time.Millisecond, b: time.Millisecond})
	if a.reason != "" {
		t.Fatalf("after the hold and a probe: reason %q (%s)", a.reason, a.Why)
	}
	// Slow again on its first request: held twice as long.
	s.observe(a, 150*time.Millisecond, OutcomeOK, "")
	if a.evictions != 2 || a.holdUntil.Sub(clk.Now()) != 2*time.Second {
		t.Fatalf("second eviction: evictions %d, hold %v", a.evictions, a.holdUntil.Sub(clk.Now()))
	}
}

func TestProxyNetworkChangeSeenByProbes(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	a, b := in[0], in[1]
	probeAll(s, map[*Instance]time.Duration{a: 90 * time.Millisecond, b: time.Millisecond})
	if a.reason != reasonLatency {
		t.Fatalf("far instance: reason %q", a.reason)
	}
	// The link gets faster: probes every interval see it, and it joins without traffic.
	for range 3 {
		clk.Advance(2 * time.Second)
		probeAll(s, map[*Instance]time.Duration{a: 20 * time.Millisecond, b: time.Millisecond})
	}
	if a.reason != "" {
		t.Fatalf("after faster probes: reason %q (%s), estimate %v", a.reason, a.Why, a.Est)
	}
}

func TestProxyOverloadedOnlyWhenPoolEmpty(t *testing.T) {
	clk := newFakeClock()
	nodes := map[string]discovery.NodeLoad{"n0": {CPU: 0.99}, "n1": {Memory: 0.5}}
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nodes)
	hot, cool := in[0], in[1]
	probeAll(s, map[*Instance]time.Duration{hot: time.Millisecond, cool: time.Millisecond})
	if hot.reason != reasonOverloaded {
		t.Fatalf("hot: reason %q", hot.reason)
	}
	for range 100 {
		if got, _ := s.Pick(nil); got != cool {
			t.Fatal("picked the overloaded instance while the pool has another")
		}
	}
	s.observe(cool, time.Millisecond, OutcomeFailure, "connection refused")
	for range 10 {
		if got, err := s.Pick(nil); got != hot {
			t.Fatalf("pool empty: picked %v (%v), want the overloaded instance", got, err)
		}
	}
	// The node's load drops: the instance joins the pool.
	s.SetInstances([]discovery.Instance{hot.disc, cool.disc}, map[string]discovery.NodeLoad{"n0": {CPU: 0.5}})
	if hot.reason != "" {
		t.Fatalf("after the load dropped: reason %q", hot.reason)
	}
}

func TestProxyReestimationBelowPoolMinShare(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 4, nil)
	all := map[*Instance]time.Duration{}
	for _, x := range in {
		all[x] = time.Millisecond
	}
	probeAll(s, all)
	if s.reestimations != 0 {
		t.Fatalf("re-estimated with a full pool")
	}
	clk.Advance(100 * time.Millisecond)
	// Traffic keeps i0 fresh, so it is not due a probe of its own.
	s.observe(in[0], time.Millisecond, OutcomeOK, "")
	s.observe(in[1], 200*time.Millisecond, OutcomeOK, "") // 3/4 in pool
	s.observe(in[2], 200*time.Millisecond, OutcomeOK, "") // 2/4 = 50%
	if s.reestimations != 0 {
		t.Fatalf("re-estimated at 50%% (share 30%%)")
	}
	s.observe(in[3], 200*time.Millisecond, OutcomeOK, "") // 1/4 = 25% < 30%
	if s.reestimations != 1 {
		t.Fatalf("reestimations = %d at 25%%, want 1", s.reestimations)
	}
	due := probeAll(s, all)
	if len(due) != 4 {
		t.Fatalf("re-estimation probed %d instances, want all 4 (in-pool ones too)", len(due))
	}
	// At most once per probe interval.
	s.observe(in[0], 300*time.Millisecond, OutcomeOK, "")
	if s.reestimations != 1 {
		t.Fatalf("re-estimated twice within one probe interval")
	}
}

func TestProxySuccessRateEviction(t *testing.T) {
	clk := newFakeClock()
	cfg := qosConfig(80 * time.Millisecond)
	cfg.QoS.MinSuccessRate = 0.9 // needs 10 outcomes before it can evict
	s, in := testService(t, cfg, clk, 2, nil)
	a := in[0]
	probeAll(s, map[*Instance]time.Duration{a: time.Millisecond, in[1]: time.Millisecond})
	for i := range 9 {
		oc := OutcomeOK
		if i < 2 {
			oc = OutcomeError // HTTP 500: answered, but counts against the rate
		}
		s.observe(a, time.Millisecond, oc, "HTTP 500")
	}
	if a.reason != "" {
		t.Fatalf("evicted after 9 outcomes: %s", a.Why)
	}
	s.observe(a, time.Millisecond, OutcomeOK, "")
	if a.reason != ReasonHold {
		t.Fatalf("success rate 0.8 < 0.9 over 10 requests: reason %q", a.reason)
	}
}

func TestProxyBestEffortAndNoInstance(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(10*time.Millisecond), clk, 3, nil)
	probeAll(s, map[*Instance]time.Duration{in[0]: 40 * time.Millisecond, in[1]: 20 * time.Millisecond, in[2]: 30 * time.Millisecond})
	if got, _ := s.Pick(nil); got != in[1] {
		t.Fatalf("best effort picked %v, want the lowest estimate i1", got)
	}
	s.Mu.Lock()
	s.Config.QoS.Fallback = config.FallbackNone
	s.Mu.Unlock()
	_, err := s.Pick(nil)
	var ni *NoInstanceError
	if !errors.As(err, &ni) || ni.RetryAfter < time.Second {
		t.Fatalf("fallback none: err = %v", err)
	}
	// Everything in cooldown: Retry-After is the earliest cooldown end, rounded up to 1 s.
	s.Mu.Lock()
	s.Config.QoS.Fallback = config.FallbackBestEffort
	s.Mu.Unlock()
	for _, x := range in {
		s.observe(x, 0, OutcomeFailure, "connection refused")
	}
	if _, err := s.Pick(nil); !errors.As(err, &ni) {
		t.Fatalf("all in cooldown: err = %v", err)
	}
}

func TestProxyAttributeRequirementsApplyToEveryStrategy(t *testing.T) {
	for _, strategy := range config.Strategies {
		clk := newFakeClock()
		cfg := qosConfig(0)
		cfg.Strategy = strategy
		cfg.QoS.Require = []string{"accuracy >= 0.95", "tier in [edge]"}
		s, err := NewService("svc", cfg, clk.Now, discard, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.SetInstances([]discovery.Instance{
			{ID: "good", URL: "http://h1:80", Ready: true, Attributes: map[string]string{"accuracy": "0.97", "tier": "edge"}},
			{ID: "inaccurate", URL: "http://h2:80", Ready: true, Attributes: map[string]string{"accuracy": "0.9", "tier": "edge"}},
			{ID: "cloud", URL: "http://h3:80", Ready: true, Attributes: map[string]string{"accuracy": "0.99", "tier": "cloud"}},
			{ID: "unready", URL: "http://h4:80", Ready: false, Attributes: map[string]string{"accuracy": "0.99", "tier": "edge"}},
		}, nil)
		for range 50 {
			got, err := s.Pick(nil)
			if err != nil || got.disc.ID != "good" {
				t.Fatalf("%s: picked %v, %v", strategy, got, err)
			}
		}
	}
}

func TestProxyBackoff(t *testing.T) {
	b := config.BackoffConfig{Base: config.Dur(time.Second), Max: config.Dur(30 * time.Second)}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 1000: 30 * time.Second} {
		if got := backoff(b, n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestProxyLateAnswersAfterEvictionAreDiscarded(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	a, b := in[0], in[1]
	probeAll(s, map[*Instance]time.Duration{a: 40 * time.Millisecond, b: 20 * time.Millisecond})
	before := a.Epoch.Load() // the epoch of requests sent now, before the eviction

	s.observe(a, 166*time.Millisecond, OutcomeOK, "") // the first slow answer evicts it
	if a.reason != ReasonHold || a.Epoch.Load() == before {
		t.Fatalf("after a slow answer: reason %q, epoch %d -> %d", a.reason, before, a.Epoch.Load())
	}
	// The answers of the requests that were on their way when it was evicted arrive late.
	for range 13 {
		s.Record(a, AttemptResult{Epoch: before, Lat: 170 * time.Millisecond, Outcome: OutcomeOK})
	}
	s.Record(a, AttemptResult{Epoch: before, Outcome: OutcomeError, ErrMsg: "HTTP 500"})
	if a.Samples != 0 || a.outcomes != 0 {
		t.Fatalf("late answers counted: %d samples, %d outcomes", a.Samples, a.outcomes)
	}
	// The estimate from before the eviction is stale too: no estimate until a new probe,
	// which is due at once, during the hold.
	if a.estFrom != estNone {
		t.Fatalf("estimate from %s (%v) right after the eviction, want none until a probe", a.estFrom, a.Est)
	}
	if due := probeAll(s, map[*Instance]time.Duration{a: 40 * time.Millisecond, b: 20 * time.Millisecond}); len(due) != 1 || due[0] != a {
		t.Fatalf("probes due after the eviction: %v, want only the evicted instance", due)
	}
	// The hold ends: the probe taken during it brings the instance back, with no traffic.
	clk.Advance(time.Second)
	s.schedule()
	if a.reason != "" || a.estFrom != estFromProbe || a.Est != 40*time.Millisecond {
		t.Fatalf("after the hold: reason %q (%s), estimate %v from %s", a.reason, a.Why, a.Est, a.estFrom)
	}
	// A failure of a request sent before the eviction still starts a cooldown: whether the
	// instance can be reached does not depend on when the request left.
	s.Record(a, AttemptResult{Epoch: before, Outcome: OutcomeFailure, ErrMsg: "connection refused"})
	if a.reason != reasonCooldown {
		t.Fatalf("late connection failure: reason %q", a.reason)
	}
}

func TestProxyHoldEndsWithoutProbeStaysOut(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	a := in[0]
	probeAll(s, map[*Instance]time.Duration{a: time.Millisecond, in[1]: time.Millisecond})
	s.observe(a, 200*time.Millisecond, OutcomeOK, "")
	due, _ := s.schedule() // the probe starts but does not answer before the hold ends
	clk.Advance(time.Second)
	s.schedule()
	if a.reason != reasonUnprobed || !strings.Contains(a.Why, "no probe since") {
		t.Fatalf("hold over, probe not back: reason %q (%s), want unprobed", a.reason, a.Why)
	}
	for _, x := range due {
		s.ProbeDone(x, probeResult{Lat: 150 * time.Millisecond, Net: 150 * time.Millisecond}, nil) // the link is slower now
	}
	if a.reason != reasonLatency || a.Est != 150*time.Millisecond {
		t.Fatalf("fresh probe of 150ms: reason %q, estimate %v (the old 1ms probe must not be averaged in)", a.reason, a.Est)
	}
}

func TestProxyProbationAfterEviction(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	a, b := in[0], in[1]
	lat := map[*Instance]time.Duration{a: time.Millisecond, b: time.Millisecond}
	probeAll(s, lat)
	if a.probation {
		t.Fatal("on probation before any eviction")
	}
	s.observe(a, 120*time.Millisecond, OutcomeOK, "")
	probeAll(s, lat)
	clk.Advance(time.Second)
	s.schedule()
	if a.reason != "" || !a.probation {
		t.Fatalf("back after the hold: reason %q, probation %v", a.reason, a.probation)
	}
	// One request at a time until it answers within the limit.
	first, _ := s.Pick(nil)
	second, _ := s.Pick(nil)
	if first == second {
		t.Fatalf("picks %s twice in a row with two in the pool", first.ID)
	}
	a.Outstanding.Add(1) // a's request is out
	for range 10 {
		if got, _ := s.Pick(nil); got != b {
			t.Fatalf("picked %s while its probation request is in flight", got.ID)
		}
	}
	// With only a in the pool there is no one else: it takes the requests.
	s.observe(b, 0, OutcomeFailure, "connection refused")
	if got, _ := s.Pick(nil); got != a {
		t.Fatalf("with the pool {a} picked %v", got)
	}
	a.Outstanding.Add(-1)
	s.observe(a, 30*time.Millisecond, OutcomeOK, "")
	if a.probation {
		t.Fatal("still on probation after an answer within the limit")
	}
}

func TestProxySlowInFlightEvictsBeforeTheAnswer(t *testing.T) {
	clk := newFakeClock()
	s, in := testService(t, qosConfig(80*time.Millisecond), clk, 2, nil)
	a := in[0]
	probeAll(s, map[*Instance]time.Duration{a: time.Millisecond, in[1]: time.Millisecond})
	for range 32 { // a full window: its p95 is the second slowest sample
		s.observe(a, 30*time.Millisecond, OutcomeOK, "")
	}
	e := a.Epoch.Load()
	s.observeSlow(a, e, 81*time.Millisecond) // one request has waited past the limit
	if a.reason != "" {
		t.Fatalf("one request past the limit in a full window: reason %q (%s)", a.reason, a.Why)
	}
	s.observeSlow(a, e, 81*time.Millisecond) // and a second one: p95 = 81ms > 80ms
	if a.reason != ReasonHold {
		t.Fatalf("two requests in flight past the limit: reason %q (estimate %v)", a.reason, a.Est)
	}
	// Their answers arrive: already sampled, and from before the eviction anyway.
	s.Record(a, AttemptResult{Epoch: e, Lat: 240 * time.Millisecond, Outcome: OutcomeOK, Sampled: true})
	s.observeSlow(a, e, 90*time.Millisecond) // a third one, of the old epoch
	if a.Samples != 0 {
		t.Fatalf("%d samples after the eviction, want 0", a.Samples)
	}
}
