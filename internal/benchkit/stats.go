package benchkit

import (
	"fmt"
	"math"
	"slices"
)

// Median is the middle of v (the mean of the two middle values when there are an even number),
// 0 when v is empty. v is not reordered.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// NearestRank is the q-quantile of v by the nearest-rank method, the rank rounded: the value
// at rank round(q·n) of the sorted values, counted from 1 (so always one of the values, the
// lower middle one for an even count at q = 0.5); 0 when v is empty. v is not reordered.
func NearestRank(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Spread is a figure over repeats: its median and how far the repeats lie from it, as the
// range (Min–Max) and the interquartile range (Q1–Q3, by NearestRank).
type Spread struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
}

// Summarize is v's median and spread (all zero when v is empty).
func Summarize(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	return Spread{N: len(v), Median: Median(v), Min: slices.Min(v), Max: slices.Max(v),
		Q1: NearestRank(v, 0.25), Q3: NearestRank(v, 0.75)}
}

// IQR is the interquartile range, Q3 - Q1.
func (s Spread) IQR() float64 { return s.Q3 - s.Q1 }

// Format renders the median with format, followed by Range: "1.20 (1.10–1.40)".
func (s Spread) Format(format string) string { return fmt.Sprintf(format, s.Median) + s.Range(format) }

// Range is " (min–max)" with format, or "" when there were fewer than two values (no spread to
// show), for a cell that states the median its own way.
func (s Spread) Range(format string) string {
	if s.N < 2 {
		return ""
	}
	return fmt.Sprintf(" (%s–%s)", fmt.Sprintf(format, s.Min), fmt.Sprintf(format, s.Max))
}

// Values collects f over items, skipping those for which f reports no figure.
func Values[T any](items []T, f func(T) (float64, bool)) []float64 {
	var out []float64
	for _, it := range items {
		if v, ok := f(it); ok {
			out = append(out, v)
		}
	}
	return out
}

// Round rounds v to the given number of decimal digits.
func Round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}
