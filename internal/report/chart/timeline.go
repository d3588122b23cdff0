package chart

import (
	"fmt"
	"math"
	"strings"
)

// Timeline draws lanes over a shared time axis, each lane a row of spans (e.g. the seconds a
// probe got no write through), with shaded bands (a partition) and event markers across all
// lanes. Lane names sit left of the plot, which widens to fit the longest (up to a third of
// the chart).
type Timeline struct {
	ID         string
	XLabel     string
	XMin, XMax *float64
	Lanes      []Lane
	Bands      []Band
	Markers    []Marker
	// Empty is written in a lane without spans ("no gap").
	Empty string
}

// Lane is one row of a timeline.
type Lane struct {
	Name  string
	Color string
	Spans []Span
}

// Span is an interval of a lane, with its tooltip; a Faint span is drawn pale (a lesser state,
// e.g. slowed rather than down) and under the others.
type Span struct {
	X0, X1 float64
	Tip    string
	Faint  bool
}

const laneH = 24

// SVG renders the timeline.
func (c *Timeline) SVG() string {
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, l := range c.Lanes {
		for _, s := range l.Spans {
			x0, x1 = math.Min(x0, s.X0), math.Max(x1, s.X1)
		}
	}
	for _, bd := range c.Bands {
		x0, x1 = math.Min(x0, bd.X0), math.Max(x1, bd.X1)
	}
	if !Finite(x0) {
		x0, x1 = 0, 1
	}
	if c.XMin != nil {
		x0 = *c.XMin
	}
	if c.XMax != nil {
		x1 = *c.XMax
	}
	xt, lo, hi := linearTicks(x0, x1, 10)
	if c.XMin == nil {
		x0 = lo
	}
	if c.XMax == nil {
		x1 = hi
	} else {
		xt = trimTicks(xt, x0, x1)
	}
	nameW := 0.0
	for _, l := range c.Lanes {
		nameW = math.Max(nameW, textW(l.Name))
	}
	left := math.Min(math.Max(nameW+16, plotLeft), chartW/3)
	right := float64(chartW - plotRight)
	xs := scale{d0: x0, d1: x1, r0: left, r1: right}
	mxs := make([]float64, len(c.Markers))
	for i, m := range c.Markers {
		mxs[i] = xs.pos(m.X)
	}
	mrows, nmrows := markerRows(c.Markers, mxs, right)
	top := 12 + float64(nmrows)*14
	bottom := top + float64(max(len(c.Lanes), 1))*laneH
	var items []legendItem
	for _, bd := range c.Bands {
		items = append(items, legendItem{Name: bd.Label, Color: "#888", Box: true, Faint: true})
	}
	lrows, _ := layoutLegend(items, right-left)
	height := bottom + 50 + float64(lrows)*legendRowH

	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %.0f" width="100%%" role="img" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" font-size="12" fill="#222">`, chartW, height)
	for _, bd := range c.Bands {
		a, z := math.Max(xs.pos(bd.X0), left), math.Min(xs.pos(bd.X1), right)
		if z > a {
			fmt.Fprintf(&b, `<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#888" fill-opacity="0.15"><title>%s</title></rect>`, a, top, z-a, bottom-top, esc(bd.Label))
		}
	}
	b.WriteString(`<g class="grid">`)
	for _, t := range xt {
		x := xs.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e3e3e3"/>`, x, x, top, bottom)
	}
	for i := 1; i < len(c.Lanes); i++ {
		y := top + float64(i)*laneH
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, left, right, y, y)
	}
	b.WriteString(`</g><g class="axis">`)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`, left, top, right-left, bottom-top)
	for _, t := range xt {
		x := xs.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#888"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, x, bottom, bottom+4, x, bottom+17, esc(t.label))
	}
	fmt.Fprintf(&b, `<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle" font-weight="600">%s</text></g>`, (left+right)/2, bottom+36, esc(c.XLabel))
	b.WriteString(`<g class="data">`)
	for i, l := range c.Lanes {
		y := top + float64(i)*laneH
		name, cut := fitText(l.Name, left-12)
		title := ""
		if cut {
			title = "<title>" + esc(l.Name) + "</title>"
		}
		fmt.Fprintf(&b, `<text class="lane" x="%.1f" y="%.1f" text-anchor="end">%s%s</text>`, left-6, y+laneH/2+4, title, esc(name))
		fmt.Fprintf(&b, `<g class="series" data-series="%s">`, esc(l.Name))
		for _, s := range l.Spans {
			a, z := math.Max(xs.pos(s.X0), left), math.Min(xs.pos(s.X1), right)
			if z <= a {
				continue
			}
			op := "1"
			if s.Faint {
				op = "0.35"
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%s"><title>%s</title></rect>`, a, y+5, math.Max(z-a, 1.5), laneH-10.0, l.Color, op, esc(s.Tip))
		}
		if len(l.Spans) == 0 && c.Empty != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#888" font-size="11">%s</text>`, left+6, y+laneH/2+4, esc(c.Empty))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</g>`)
	drawMarkers(&b, c.Markers, mxs, mrows, left, right, bottom)
	drawLegend(&b, items, left, bottom+60, right-left)
	b.WriteString(`</svg>`)
	return b.String()
}
