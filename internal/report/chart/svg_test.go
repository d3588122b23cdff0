package chart

import (
	"math"
	"strings"
	"testing"
)

func tickValues(ts []tick, labelledOnly bool) []float64 {
	var out []float64
	for _, t := range ts {
		if labelledOnly && t.label == "" {
			continue
		}
		out = append(out, t.v)
	}
	return out
}

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		name           string
		lo, hi         float64
		n              int
		wantLo, wantHi float64
		wantLabels     []string
	}{
		{"percent", 0, 100, 6, 0, 100, []string{"0", "20", "40", "60", "80", "100"}},
		{"fractions", 0.13, 0.87, 10, 0.1, 0.9, []string{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"}},
		{"seconds", 0, 30, 10, 0, 30, []string{"0", "5", "10", "15", "20", "25", "30"}},
		{"constant", 5, 5, 6, 4.4, 5.6, nil},
		{"zero range at zero", 0, 0, 6, 0, 1, nil},
		{"NaN", math.NaN(), 1, 6, 0, 1, nil},
		{"thousands", 0, 25000, 6, 0, 25000, []string{"0", "5k", "10k", "15k", "20k", "25k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, lo, hi := linearTicks(tt.lo, tt.hi, tt.n)
			if math.Abs(lo-tt.wantLo) > 1e-9 || math.Abs(hi-tt.wantHi) > 1e-9 {
				t.Errorf("domain = [%v, %v], want [%v, %v]", lo, hi, tt.wantLo, tt.wantHi)
			}
			if len(ts) < 2 {
				t.Fatalf("got %d ticks, want at least 2", len(ts))
			}
			if tt.wantLabels != nil {
				var got []string
				for _, tk := range ts {
					got = append(got, tk.label)
				}
				if strings.Join(got, ",") != strings.Join(tt.wantLabels, ",") {
					t.Errorf("labels = %v, want %v", got, tt.wantLabels)
				}
			}
			for i := 1; i < len(ts); i++ {
				if ts[i].v <= ts[i-1].v {
					t.Errorf("ticks not increasing: %v", tickValues(ts, false))
				}
			}
		})
	}
}

func TestLogTicks(t *testing.T) {
	ts, lo, hi := logTicks(17, 575)
	if lo != 10 || hi != 1000 {
		t.Errorf("domain = [%v, %v], want [10, 1000]", lo, hi)
	}
	got := tickValues(ts, true)
	want := []float64{10, 20, 50, 100, 200, 500, 1000}
	if len(got) != len(want) {
		t.Fatalf("labelled ticks = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("labelled ticks = %v, want %v", got, want)
		}
	}
	// Over many decades only the powers of ten carry labels, the rest are minor gridlines.
	ts, lo, hi = logTicks(0.5, 20000)
	if lo != 0.1 || hi != 1e5 {
		t.Errorf("domain = [%v, %v], want [0.1, 1e5]", lo, hi)
	}
	var labels []string
	for _, tk := range ts {
		if tk.label != "" {
			labels = append(labels, tk.label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.1 1 10 100 1000 10k 100k" {
		t.Errorf("labels = %q", got)
	}
	if _, lo, hi := logTicks(0, 0); !(lo > 0 && hi > lo) {
		t.Errorf("degenerate domain [%v, %v]", lo, hi)
	}
}

func TestScale(t *testing.T) {
	lin := scale{d0: 0, d1: 10, r0: 100, r1: 200}
	if got := lin.pos(5); got != 150 {
		t.Errorf("linear pos(5) = %v, want 150", got)
	}
	inv := scale{d0: 0, d1: 10, r0: 200, r1: 100} // y axes grow upwards
	if got := inv.pos(10); got != 100 {
		t.Errorf("inverted pos(10) = %v, want 100", got)
	}
	lg := scale{log: true, d0: 1, d1: 1000, r0: 0, r1: 300}
	for v, want := range map[float64]float64{1: 0, 10: 100, 100: 200, 1000: 300} {
		if got := lg.pos(v); math.Abs(got-want) > 1e-9 {
			t.Errorf("log pos(%v) = %v, want %v", v, got, want)
		}
	}
	if got := (scale{d0: 3, d1: 3, r0: 0, r1: 10}).pos(3); got != 5 {
		t.Errorf("empty domain pos = %v, want the middle", got)
	}
}

func TestLineChartEmpty(t *testing.T) {
	for _, c := range []*Line{
		{ID: "e1", XLabel: "time (s)", YLabel: "latency (ms)"},
		{ID: "e2", XLabel: "time (s)", YLabel: "latency (ms)", Series: []Series{{Name: "a", Color: "#000"}}},
		{ID: "e3", XLabel: "latency (ms)", YLabel: "p (%)", XLog: true, Series: []Series{{Name: "a", Points: []Point{Pt(math.NaN(), 1)}}}},
	} {
		svg := c.SVG()
		for _, want := range []string{"<svg", "no data", "time (s)", "latency (ms)", "</svg>"} {
			if c.ID == "e3" && want == "time (s)" {
				continue
			}
			if !strings.Contains(svg, want) {
				t.Errorf("%s: SVG lacks %q", c.ID, want)
			}
		}
		if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
			t.Errorf("%s: SVG contains NaN/Inf coordinates", c.ID)
		}
	}
}

func TestLineChartGapsMarkersLegend(t *testing.T) {
	c := &Line{ID: "g", XLabel: "time since start (s)", YLabel: "latency (ms)",
		Series: []Series{
			{Name: "cloud p50", Color: "#f28e2b", Points: []Point{Pt(0, 120), Pt(1, 121), Pt(2, math.NaN()), Pt(3, 119), Pt(4, 118)}},
			{Name: "cloud errors/s", Color: "#f28e2b", Style: StyleBars, BarWidth: 1, Points: []Point{Pt(2.5, 100)}},
		},
		Markers: []Marker{{X: 10, Label: "partition cloud"}, {X: 11, Label: "heal"}, {X: 20, Label: "kill edge", Failed: true}},
		Bands:   []Band{{X0: 0, X1: 2, Label: "warm-up"}},
		XMin:    Fp(0), XMax: Fp(30),
	}
	svg := c.SVG()
	// A NaN splits the line into two sub-paths instead of drawing a zero.
	i := strings.Index(svg, `<path d="`)
	if i < 0 {
		t.Fatal("no path")
	}
	d := svg[i+9 : i+9+strings.Index(svg[i+9:], `"`)]
	if n := strings.Count(d, "M"); n != 2 {
		t.Errorf("path has %d sub-paths, want 2: %s", n, d)
	}
	for _, want := range []string{"partition cloud", "heal", "kill edge", "#c62828", "warm-up", "cloud p50", "cloud errors/s", `class="band"`, "<rect"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// "partition cloud" at 10 s and "heal" at 11 s overlap on one row, so they get two.
	xs := []float64{300, 330, 600}
	rows, n := markerRows(c.Markers, xs, 864)
	if n != 2 || rows[0] == rows[1] || rows[2] != 0 {
		t.Errorf("marker rows = %v (%d rows), want the first two apart and the third on row 0", rows, n)
	}
}

func TestLineChartLogAxisAndErrorBars(t *testing.T) {
	c := &Line{ID: "l", XLabel: "latency (ms)", YLabel: "percentile (%)", XLog: true, YMax: Fp(100),
		Series: []Series{{Name: "edge", Color: "#4e79a7", Points: []Point{Pt(1, 0), Pt(20, 50), Pt(2000, 100), Pt(0, 10)}}}}
	svg := c.SVG()
	for _, want := range []string{">1<", ">10<", ">100<", ">1000<", ">10k<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("log axis lacks tick label %q", want)
		}
	}
	e := &Line{ID: "e", XLabel: "rate", YLabel: "p99 (ms)", XCategories: []string{"50ms", "100ms"}, Series: []Series{{
		Name: "edge", ShowPoints: true, Points: []Point{{X: 0, Y: 10, Lo: 8, Hi: 12}, {X: 1, Y: 20, Lo: 15, Hi: 25}}}}}
	svg = e.SVG()
	if n := strings.Count(svg, `class="errbar"`); n != 2 {
		t.Errorf("%d error bars, want 2", n)
	}
	for _, want := range []string{">50ms<", ">100ms<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("categorical axis lacks %q", want)
		}
	}
}

func TestStackedBarChart(t *testing.T) {
	c := &StackedBars{XLabel: "node", YLabel: "energy (J)", Unit: "J", Categories: []string{"edge", "cloud"},
		Stacks: []Stack{{Name: "idle", Color: "#ccc", Values: []float64{100, 200}}, {Name: "app (dynamic)", Color: "#f00", Values: []float64{50, math.NaN()}}}}
	svg := c.SVG()
	for _, want := range []string{"150 J", "200 J", "idle", "app (dynamic)", "energy (J)", ">edge<", ">cloud<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	empty := (&StackedBars{XLabel: "node", YLabel: "energy (J)"}).SVG()
	if !strings.Contains(empty, "no data") || strings.Contains(empty, "NaN") {
		t.Errorf("empty bar chart: %s", empty)
	}
}

func TestFormatNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 3000: "3000", 20.184: "20.18", 121.54: "121.5", 0.0123: "0.0123", 30: "30"} {
		if got := FormatNum(v); got != want {
			t.Errorf("formatNum(%v) = %q, want %q", v, got, want)
		}
	}
	if got := FormatNum(math.NaN()); got != "–" {
		t.Errorf("formatNum(NaN) = %q", got)
	}
}
