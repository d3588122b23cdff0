package benchkit

import (
	"math"
	"slices"
	"testing"
)

func TestMedianAndSpread(t *testing.T) {
	for _, c := range []struct {
		name   string
		v      []float64
		median float64
		spread Spread
		format string
	}{
		{"none", nil, 0, Spread{}, "0.0"},
		{"one", []float64{3}, 3, Spread{N: 1, Median: 3, Min: 3, Max: 3, Q1: 3, Q3: 3}, "3.0"},
		{"odd", []float64{5, 1, 3}, 3, Spread{N: 3, Median: 3, Min: 1, Max: 5, Q1: 1, Q3: 3}, "3.0 (1.0–5.0)"},
		{"even: mean of the middle two", []float64{4, 1, 2, 3}, 2.5, Spread{N: 4, Median: 2.5, Min: 1, Max: 4, Q1: 1, Q3: 3}, "2.5 (1.0–4.0)"},
		{"negative differences", []float64{-0.2, 0.4, 0.1, 0.3, -0.1}, 0.1, Spread{N: 5, Median: 0.1, Min: -0.2, Max: 0.4, Q1: -0.2, Q3: 0.3}, "0.1 (-0.2–0.4)"},
	} {
		in := slices.Clone(c.v)
		if got := Median(c.v); got != c.median {
			t.Errorf("%s: Median = %v, want %v", c.name, got, c.median)
		}
		s := Summarize(c.v)
		if s != c.spread {
			t.Errorf("%s: Summarize = %+v, want %+v", c.name, s, c.spread)
		}
		if got := s.Format("%.1f"); got != c.format {
			t.Errorf("%s: Format = %q, want %q", c.name, got, c.format)
		}
		if !slices.Equal(in, c.v) {
			t.Errorf("%s: the input was reordered: %v", c.name, c.v)
		}
	}
	if got := Summarize([]float64{1, 2, 3, 4, 5, 6, 7, 8}).IQR(); got != 4 {
		t.Errorf("IQR = %v, want 4 (q1 2, q3 6)", got)
	}
}

func TestNearestRank(t *testing.T) {
	v := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10} // 1..10
	for _, c := range []struct {
		q    float64
		want float64
	}{
		{0, 1}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10},
	} {
		if got := NearestRank(v, c.q); got != c.want {
			t.Errorf("NearestRank(q=%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if NearestRank(nil, 0.5) != 0 {
		t.Error("NearestRank of nothing is not 0")
	}
}

func TestValuesAndRound(t *testing.T) {
	type rep struct {
		v  float64
		ok bool
	}
	got := Values([]rep{{1, true}, {2, false}, {3, true}}, func(r rep) (float64, bool) { return r.v, r.ok })
	if !slices.Equal(got, []float64{1, 3}) {
		t.Errorf("Values = %v", got)
	}
	for _, c := range []struct {
		v      float64
		digits int
		want   float64
	}{{1.23456, 3, 1.235}, {1.25, 1, 1.3}, {-0.0004, 3, 0}, {1234.5, 0, 1235}} {
		if got := Round(c.v, c.digits); got != c.want && !(c.want == 0 && math.Abs(got) == 0) {
			t.Errorf("Round(%v, %d) = %v, want %v", c.v, c.digits, got, c.want)
		}
	}
}
