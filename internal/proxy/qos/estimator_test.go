package qos

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestProxyEstimatorQuantile(t *testing.T) {
	w := NewWindow(4, 4)
	t0 := time.Unix(0, 0)
	for i, ms := range []int{10, 40, 20, 30, 50} { // the first falls out of the window of 4
		w.AddLatency(t0.Add(time.Duration(i)*time.Second), time.Duration(ms)*time.Millisecond)
	}
	tests := []struct {
		p     float64
		since time.Time
		want  time.Duration
		n     int
	}{
		{50, t0, 30 * time.Millisecond, 4},
		{95, t0, 50 * time.Millisecond, 4},
		{25, t0, 20 * time.Millisecond, 4},
		{100, t0.Add(2500 * time.Millisecond), 50 * time.Millisecond, 2},
		{50, t0.Add(time.Hour), 0, 0},
	}
	for _, tt := range tests {
		got, n := w.Quantile(tt.p, tt.since)
		if got != tt.want || n != tt.n {
			t.Errorf("p%v since %v: %v over %d, want %v over %d", tt.p, tt.since.Sub(t0), got, n, tt.want, tt.n)
		}
	}
	for _, failed := range []bool{true, false, false, false, false} {
		w.AddOutcome(failed)
	}
	if r, n := w.SuccessRate(); r != 1 || n != 4 {
		t.Errorf("success rate %v over %d after the failure left the ring, want 1 over 4", r, n)
	}
}

// TestWindowQuantileMatchesSort checks quantile's shortcut for tail percentiles against sorting.
func TestWindowQuantileMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1000, 0)
	for trial := range 2000 {
		size := 1 + rng.IntN(40)
		w := NewWindow(size, size)
		count := rng.IntN(2 * size)
		for i := range count {
			w.AddLatency(base.Add(time.Duration(i)*time.Second), time.Duration(rng.IntN(50))*time.Millisecond)
		}
		since := base.Add(time.Duration(rng.IntN(count+1)-1) * time.Second)
		p := []float64{50, 90, 95, 99, 99.9, 100, 1}[trial%7]
		var want []time.Duration
		for i := 0; i < w.n; i++ {
			if w.lat[i].at.After(since) {
				want = append(want, w.lat[i].lat)
			}
		}
		got, n := w.Quantile(p, since)
		if n != len(want) {
			t.Fatalf("trial %d: n %d, want %d", trial, n, len(want))
		}
		if n == 0 {
			continue
		}
		slices.Sort(want)
		rank := min(max(int(math.Ceil(p/100*float64(n))), 1), n)
		if got != want[rank-1] {
			t.Fatalf("trial %d: p%g of %v = %v, want %v", trial, p, want, got, want[rank-1])
		}
	}
}
