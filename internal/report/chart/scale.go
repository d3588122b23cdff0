package chart

import (
	"math"
	"strconv"
	"strings"
)

// scale maps a data domain [d0, d1] onto a pixel range [r0, r1], linearly or by log10.
type scale struct {
	log    bool
	d0, d1 float64
	r0, r1 float64
}

func (s scale) pos(v float64) float64 {
	a, b := s.d0, s.d1
	if s.log {
		v, a, b = math.Log10(v), math.Log10(a), math.Log10(b)
	}
	if b == a {
		return (s.r0 + s.r1) / 2
	}
	return s.r0 + (v-a)/(b-a)*(s.r1-s.r0)
}

// tick is an axis position; minor ticks get a faint gridline and no label.
type tick struct {
	v     float64
	label string
	minor bool
}

// niceStep rounds a raw step to 1, 2 or 5 times a power of ten, so tick labels stay short.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	f := raw / p
	switch {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	}
	return 10 * p
}

// linearTicks returns about n ticks covering [lo, hi] and the widened, tick-aligned domain the
// axis should use, so the first and last gridlines sit on the frame.
func linearTicks(lo, hi float64, n int) ([]tick, float64, float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 0, 1
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if lo == hi {
		if lo == 0 {
			hi = 1
		} else {
			d := math.Abs(lo) * 0.1
			lo, hi = lo-d, hi+d
		}
	}
	if n < 2 {
		n = 2
	}
	step := niceStep((hi - lo) / float64(n-1))
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	var ts []tick
	for i := 0; ; i++ {
		v := start + float64(i)*step
		if v > end+step/2 {
			break
		}
		v = math.Round(v/step) * step // drop float noise such as 0.30000000000000004
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ts = append(ts, tick{v: v, label: formatTick(v, step, math.Max(math.Abs(start), math.Abs(end)))})
	}
	return ts, start, end
}

// logTicks returns ticks for a log10 axis over [lo, hi] (lo > 0) and the decade-aligned domain.
// Every decade is labelled; 2 and 5 are labelled too when the axis spans few decades, and the
// other integers are minor gridlines, which is what makes a log axis readable.
func logTicks(lo, hi float64) ([]tick, float64, float64) {
	if !(hi > 0) {
		hi = 1
	}
	if !(lo > 0) {
		lo = hi / 1000
	}
	if !(hi > lo) {
		hi = lo * 10
	}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if e1 == e0 {
		e1++
	}
	few := e1-e0 <= 3
	var ts []tick
	for e := e0; e <= e1; e++ {
		p := math.Pow(10, e)
		ts = append(ts, tick{v: p, label: formatLogTick(p)})
		if e == e1 {
			break
		}
		for m := 2.0; m <= 9; m++ {
			labelled := few && (m == 2 || m == 5)
			t := tick{v: m * p, minor: !labelled}
			if labelled {
				t.label = formatLogTick(m * p)
			}
			ts = append(ts, t)
		}
	}
	return ts, math.Pow(10, e0), math.Pow(10, e1)
}

// formatTick prints v with as many decimals as the step needs, and k/M suffixes when the axis
// reaches big numbers (decided by the axis's largest magnitude, so all labels use one unit).
func formatTick(v, step, axisMax float64) string {
	switch {
	case v == 0:
		return "0"
	case axisMax >= 1e6 && step >= 1e5:
		return trimZeros(strconv.FormatFloat(v/1e6, 'f', decimals(step/1e6), 64)) + "M"
	case axisMax >= 1e4 && step >= 1e3:
		return trimZeros(strconv.FormatFloat(v/1e3, 'f', decimals(step/1e3), 64)) + "k"
	}
	return strconv.FormatFloat(v, 'f', decimals(step), 64)
}

func formatLogTick(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func decimals(step float64) int {
	if step >= 1 {
		return 0
	}
	d := int(math.Ceil(-math.Log10(step) - 1e-9))
	if d > 9 {
		d = 9
	}
	return d
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// FormatNum prints a measurement for tables and tooltips with about 3-4 significant digits.
func FormatNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	av := math.Abs(v)
	switch {
	case av == 0:
		return "0"
	case av < 1e9 && v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64) // counts and whole seconds read better bare
	case av >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case av >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case av >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
