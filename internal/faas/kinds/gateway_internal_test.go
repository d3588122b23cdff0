package kinds

import (
	"math"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

func TestInstanceResources(t *testing.T) {
	s := func(t float64, comp string, cpu, rssMiB float64) results.Sample {
		return results.Sample{T: t, Component: comp, CPUUtil: cpu, RSSBytes: rssMiB * (1 << 20)}
	}
	samples := []results.Sample{
		s(1, "gw-analytics-1", 0.5, 60), s(1, "gw-zygote-analytics", 0, 80), s(1, "gw", 0.1, 20),
		s(2, "gw-analytics-1", 0.9, 62), s(2, "gw-analytics-2", 0.7, 64), s(2, "gw-zygote-analytics", 0, 80),
		s(2, "gw-analytics-extra", 5, 500), s(2, "other-analytics-1", 5, 500),
	}
	got := instanceResources(samples, "gw", "analytics")
	// t=1: 0.5 cores, 140 MiB; t=2: 1.6 cores, 206 MiB.
	want := map[string]float64{"cpu_pct": 105, "rss_mib": 173, "rss_mib_max": 206}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s = %g, want %g (all %v)", k, got[k], v, got)
		}
	}
	if instanceResources(samples, "gw", "nope") != nil {
		t.Error("resources for a function without instances")
	}
}
