package benchkit

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestSustainRule(t *testing.T) {
	r := SustainRule(10 * time.Millisecond)
	for _, c := range []struct {
		name string
		o    Outcome
		want bool
	}{
		{"kept up", Outcome{Rate: 1000, Achieved: 1000, P99Ms: 3}, true},
		{"95% of the rate", Outcome{Rate: 1000, Achieved: 950, P99Ms: 3}, true},
		{"below 95%", Outcome{Rate: 1000, Achieved: 949, P99Ms: 3}, false},
		{"p99 at the limit", Outcome{Rate: 1000, Achieved: 1000, P99Ms: 10}, true},
		{"p99 over the limit", Outcome{Rate: 1000, Achieved: 1000, P99Ms: 10.01}, false},
		{"one error", Outcome{Rate: 1000, Achieved: 1000, P99Ms: 1, Errors: 1}, false},
		{"closed loop offers no rate", Outcome{Achieved: 50000, P99Ms: 1}, false},
	} {
		if got := r.Sustained(c.o); got != c.want {
			t.Errorf("%s: Sustained(%+v) = %v, want %v", c.name, c.o, got, c.want)
		}
	}
}

func TestSweepStopRule(t *testing.T) {
	rates := []float64{1000, 2000, 3000, 5000, 8000}
	for _, c := range []struct {
		name      string
		atLeast   float64
		sustained map[float64]bool // rates not listed are sustained
		ran       []float64
		max       float64
	}{
		{"all sustained", 0, nil, rates, 8000},
		{"stops after the first failure", 0, map[float64]bool{3000: false}, []float64{1000, 2000, 3000}, 2000},
		{"none sustained", 0, map[float64]bool{1000: false}, []float64{1000}, 0},
		{"goes on below AtLeast", 5000, map[float64]bool{2000: false}, rates, 1000},
		{"stops at the first failure from AtLeast on", 5000, map[float64]bool{2000: false, 5000: false}, []float64{1000, 2000, 3000, 5000}, 1000},
		{"a recovered rate does not count", 5000, map[float64]bool{2000: false, 8000: false}, rates, 1000},
		{"failure at AtLeast stops there", 3000, map[float64]bool{3000: false}, []float64{1000, 2000, 3000}, 2000},
	} {
		var ran []float64
		s := Sweep{Rates: rates, AtLeast: c.atLeast, Rule: SustainRule(10 * time.Millisecond)}
		got, err := s.Run(context.Background(), func(_ context.Context, i int, rate float64) (Outcome, error) {
			if rates[i] != rate {
				t.Fatalf("step %d got rate %v", i, rate)
			}
			ran = append(ran, rate)
			p99 := 1.0
			if ok, listed := c.sustained[rate]; listed && !ok {
				p99 = 50
			}
			return Outcome{Rate: rate, Achieved: rate, P99Ms: p99}, nil
		})
		if err != nil || got != c.max || !slices.Equal(ran, c.ran) {
			t.Errorf("%s: ran %v, max sustained %v, %v; want %v, %v", c.name, ran, got, err, c.ran, c.max)
		}
	}
}

func TestSweepStopsAtAnError(t *testing.T) {
	boom := errors.New("server gone")
	n := 0
	got, err := Sweep{Rates: []float64{1, 2, 3}, Rule: SustainRule(time.Second)}.Run(context.Background(),
		func(_ context.Context, _ int, rate float64) (Outcome, error) {
			if n++; rate == 2 {
				return Outcome{}, boom
			}
			return Outcome{Rate: rate, Achieved: rate}, nil
		})
	if !errors.Is(err, boom) || got != 1 || n != 2 {
		t.Errorf("Run = %v, %v after %d steps; want 1, %v after 2", got, err, n, boom)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Sweep{Rates: []float64{1}}).Run(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v", err)
	}
}

func TestOrder(t *testing.T) {
	for _, c := range []struct {
		rep, n int
		want   []int
	}{
		{0, 2, []int{0, 1}}, {1, 2, []int{1, 0}}, {2, 2, []int{0, 1}},
		{0, 3, []int{0, 1, 2}}, {1, 3, []int{1, 2, 0}}, {2, 3, []int{2, 0, 1}},
		{5, 1, []int{0}},
	} {
		if got := Order(c.rep, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Order(%d, %d) = %v, want %v", c.rep, c.n, got, c.want)
		}
	}
}
