package pool

import (
	"context"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
)

func TestProxyInitialWait(t *testing.T) {
	cloud := 160 * time.Millisecond
	tests := []struct {
		name     string
		strategy string
		answered map[int]time.Duration // instance index -> probe time, answered so far
		elapsed  time.Duration         // since the probes started
		want     time.Duration         // how much longer the first requests wait
	}{
		{"qos, nothing answered", config.StrategyQoS, nil, 10 * time.Millisecond, 70 * time.Millisecond},
		{"qos, a near instance answered", config.StrategyQoS, map[int]time.Duration{0: time.Millisecond}, 2 * time.Millisecond, 0},
		{"qos, only far instances answered", config.StrategyQoS, map[int]time.Duration{2: cloud}, cloud, 0}, // past the limit: best effort
		{"qos, a far one answered early", config.StrategyQoS, map[int]time.Duration{2: 90 * time.Millisecond}, 50 * time.Millisecond, 30 * time.Millisecond},
		{"proximity, nothing answered", config.StrategyProximity, nil, 10 * time.Millisecond, 990 * time.Millisecond},
		{"proximity, the nearest answered", config.StrategyProximity, map[int]time.Duration{0: 5 * time.Millisecond}, 6 * time.Millisecond, 19 * time.Millisecond},
		{"proximity, margin over", config.StrategyProximity, map[int]time.Duration{0: 5 * time.Millisecond}, 25 * time.Millisecond, 0},
		{"proximity, all answered", config.StrategyProximity, map[int]time.Duration{0: 5 * time.Millisecond, 1: 6 * time.Millisecond, 2: cloud}, 7 * time.Millisecond, 0},
		{"round-robin never waits", config.StrategyRoundRobin, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			cfg := qosConfig(80 * time.Millisecond)
			cfg.Strategy = tt.strategy
			s, in := testService(t, cfg, clk, 3, nil)
			due, _ := s.schedule()
			if len(due) != 3 {
				t.Fatalf("%d initial probes, want 3", len(due))
			}
			clk.Advance(tt.elapsed)
			for i, d := range tt.answered {
				s.ProbeDone(in[i], probeResult{Lat: d, Net: d}, nil)
			}
			s.Mu.Lock()
			got := max(s.initWaitLocked(clk.Now()), 0)
			s.Mu.Unlock()
			if got != tt.want {
				t.Fatalf("wait %v, want %v", got, tt.want)
			}
		})
	}
}

// The first requests go as soon as an initial probe lets them, not when the last one answers.
func TestProxyFirstRequestsDoNotWaitForFarProbes(t *testing.T) {
	clk := newFakeClock()
	cfg := qosConfig(80 * time.Millisecond)
	cfg.QoS.Latency = config.Dur(time.Hour) // the deadline cannot end the wait: only a probe can
	cfg.Probe.Timeout = config.Dur(time.Hour)
	s, in := testService(t, cfg, clk, 2, nil)
	s.schedule()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WaitInit(context.Background())
	}()
	select {
	case <-done:
		t.Fatal("waitInit returned before any probe answered")
	default:
	}
	s.ProbeDone(in[0], probeResult{Lat: time.Millisecond, Net: time.Millisecond}, nil) // in[1] (the cloud) is still out
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waitInit still waiting with an instance in the pool")
	}
}
