package pool

import (
	"math"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/qos"
)

// counts picks n times and counts the instances chosen.
func counts(t *testing.T, s *Service, n int) map[string]int {
	t.Helper()
	c := map[string]int{}
	for range n {
		in, err := s.Pick(nil)
		if err != nil {
			t.Fatal(err)
		}
		c[in.disc.ID]++
	}
	return c
}

// probed builds an active service of len(lat) instances whose probes answered in lat.
func probed(t *testing.T, cfg config.ServiceConfig, lat ...time.Duration) (*Service, []*Instance) {
	t.Helper()
	s, in := testService(t, cfg, newFakeClock(), len(lat), nil)
	m := map[*Instance]time.Duration{}
	for i, d := range lat {
		m[in[i]] = d
	}
	probeAll(s, m)
	return s, in
}

func TestProxyRoundRobinIgnoresQoSState(t *testing.T) {
	cfg := qosConfig(80 * time.Millisecond)
	cfg.Strategy = config.StrategyRoundRobin
	s, in := probed(t, cfg, time.Millisecond, 200*time.Millisecond, time.Millisecond)
	s.observe(in[2], 0, OutcomeFailure, "connection refused") // kube-proxy does not know
	c := counts(t, s, 300)
	for _, id := range []string{"i0", "i1", "i2"} {
		if c[id] != 100 {
			t.Fatalf("round robin: %v, want 100 each", c)
		}
	}
}

func TestProxyRandomIsUniform(t *testing.T) {
	cfg := qosConfig(0)
	cfg.Strategy = config.StrategyRandom
	s, _ := probed(t, cfg, time.Millisecond, 50*time.Millisecond, 100*time.Millisecond, time.Millisecond)
	const n = 8000
	c := counts(t, s, n)
	for id, k := range c {
		if math.Abs(float64(k)-n/4) > 0.1*n/4 {
			t.Errorf("random: %s chosen %d times of %d, want about %d", id, k, n, n/4)
		}
	}
}

func TestProxyProximityDistribution(t *testing.T) {
	cfg := qosConfig(0)
	cfg.Strategy = config.StrategyProximity
	cfg.Alpha = 0.8
	s, _ := probed(t, cfg, time.Millisecond, 2*time.Millisecond, 4*time.Millisecond, 20*time.Millisecond)
	want := qos.ProximityWeights([]float64{1, 2, 4, 20}, 0.8)
	const n = 40000
	c := counts(t, s, n)
	for i, id := range []string{"i0", "i1", "i2", "i3"} {
		got := float64(c[id]) / n
		// 4 standard deviations of a binomial share.
		tol := 4 * math.Sqrt(want[i]*(1-want[i])/n)
		if math.Abs(got-want[i]) > tol {
			t.Errorf("proximity: %s share %.4f, want %.4f ± %.4f", id, got, want[i], tol)
		}
	}
	// alpha 1: no even share; the instance 19 ms further than the nearest gets exp(-9.5) of its
	// weight (0.004% of the picks).
	s.Mu.Lock()
	s.Config.Alpha = 1
	s.Mu.Unlock()
	if c := counts(t, s, 2000); !(c["i0"] > c["i1"] && c["i1"] > c["i2"]) || c["i3"] > 3 {
		t.Errorf("alpha 1: %v", c)
	}
}

func TestProxyQoSEqualBalance(t *testing.T) {
	s, _ := probed(t, qosConfig(80*time.Millisecond), time.Millisecond, 30*time.Millisecond, 70*time.Millisecond, 90*time.Millisecond)
	c := counts(t, s, 300)
	if c["i0"] != 100 || c["i1"] != 100 || c["i2"] != 100 || c["i3"] != 0 {
		t.Fatalf("equal balance over the pool {i0,i1,i2}: %v", c)
	}
}

func TestProxyLeastOutstandingAndHeadroom(t *testing.T) {
	cfg := qosConfig(80 * time.Millisecond)
	cfg.Balance = config.BalanceLeastOutstanding
	s, in := probed(t, cfg, time.Millisecond, 10*time.Millisecond, 70*time.Millisecond)
	in[0].Outstanding.Store(3)
	in[1].Outstanding.Store(1)
	in[2].Outstanding.Store(2)
	for range 10 {
		if got, _ := s.Pick(nil); got != in[1] {
			t.Fatalf("least outstanding picked %s", got.disc.ID)
		}
	}
	// Ties are broken in turn.
	in[0].Outstanding.Store(0)
	in[1].Outstanding.Store(0)
	in[2].Outstanding.Store(0)
	if c := counts(t, s, 300); c["i0"] != 100 || c["i1"] != 100 || c["i2"] != 100 {
		t.Fatalf("ties: %v", c)
	}

	s.Mu.Lock()
	s.Config.Balance = config.BalanceHeadroom
	s.Mu.Unlock()
	// Headroom: i0 (1 ms of 80) has 98.75% free, i2 (70 ms) 12.5%: with 2 requests on i0 and
	// none on i2, i0 scores 3/0.9875 = 3.04 and i2 1/0.125 = 8, so i0 still wins.
	in[0].Outstanding.Store(2)
	in[1].Outstanding.Store(5)
	if got, _ := s.Pick(nil); got != in[0] {
		t.Fatalf("headroom picked %s", got.disc.ID)
	}
	in[0].Outstanding.Store(9) // 10/0.9875 = 10.1 > 8
	in[1].Outstanding.Store(9) // 10/0.875 = 11.4 > 8
	if got, _ := s.Pick(nil); got != in[2] {
		t.Fatalf("headroom with i0 busy picked %s", got.disc.ID)
	}
}

func TestProxyPickSkipsTried(t *testing.T) {
	for _, strategy := range config.Strategies {
		cfg := qosConfig(80 * time.Millisecond)
		cfg.Strategy = strategy
		s, in := probed(t, cfg, time.Millisecond, time.Millisecond)
		for range 20 {
			got, err := s.Pick([]*Instance{in[0]})
			if err != nil || got != in[1] {
				t.Fatalf("%s: picked %v, %v with i0 tried", strategy, got, err)
			}
		}
		if _, err := s.Pick(in); err == nil {
			t.Fatalf("%s: picked although every instance was tried", strategy)
		}
	}
}

// proximity is proxy-mity: weights from the network round trip, blind to processing time.
func TestProxyProximityUsesNetworkRoundTrip(t *testing.T) {
	cfg := qosConfig(80 * time.Millisecond)
	cfg.Strategy = config.StrategyProximity
	cfg.Alpha = 1
	s, in := probed(t, cfg, time.Millisecond, 20*time.Millisecond)
	for range 32 { // the near instance is overloaded: its answers take 115 ms
		s.observe(in[0], 115*time.Millisecond, OutcomeOK, "")
	}
	if in[0].Est != 115*time.Millisecond {
		t.Fatalf("estimate %v", in[0].Est)
	}
	if c := counts(t, s, 1000); c["i0"] < 995 {
		t.Fatalf("alpha 1 with l = 1 ms and 20 ms: %v, want (nearly) all on i0", c)
	}
	if got := s.networkMs(in, time.Time{}); got[0] != 1 || got[1] != 20 {
		t.Fatalf("l = %v ms, want [1 20]", got)
	}
}

// While an initial probe runs, its instance is at least as far as the probe has been running.
func TestProxyProximityPendingProbeLowerBound(t *testing.T) {
	clk := newFakeClock()
	cfg := qosConfig(0)
	cfg.Strategy = config.StrategyProximity
	s, in := testService(t, cfg, clk, 2, nil)
	s.schedule()
	clk.Advance(30 * time.Millisecond)
	s.ProbeDone(in[0], probeResult{Lat: 2 * time.Millisecond, Net: 2 * time.Millisecond}, nil)
	s.Mu.Lock()
	got := s.networkMs(in, clk.Now())
	s.Mu.Unlock()
	if got[0] != 2 || got[1] != 30 {
		t.Fatalf("l = %v ms, want [2 30] (the pending probe has run 30 ms)", got)
	}
}
