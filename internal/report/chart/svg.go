package chart

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The chart engine: just enough SVG for line, step, bar, error-bar and stacked-bar charts with
// real axes. Geometry is in a fixed 880-wide viewBox and the page scales it to its column, so
// text sizes stay proportional on screen and in print. Hover tooltips are SVG <title>s, which
// browsers show natively: no script is needed to read a value.

const (
	chartW     = 880
	plotLeft   = 68
	plotRight  = 16
	plotHeight = 240
	charW      = 6.6 // average glyph width of the 12px sans-serif font, for layout estimates
	legendRowH = 18
)

// Point is one datum; Lo/Hi are an error bar when both are finite. Y NaN breaks a line.
type Point struct {
	X, Y   float64
	Lo, Hi float64
	Tip    string
}

// Pt is a point without an error bar.
func Pt(x, y float64) Point { return Point{X: x, Y: y, Lo: math.NaN(), Hi: math.NaN()} }

// Style is how a series is drawn.
type Style int

const (
	StyleLine Style = iota
	StyleBars       // bars centred on X, BarWidth wide in data units, side by side with other bar series
	// styleArea fills between the line and each point's Lo (y = 0 where Lo is not finite):
	// stacked areas give every layer its cumulative bounds.
	StyleArea
)

// Series is one named line, set of bars or area.
type Series struct {
	Name       string
	Color      string
	Dash       bool
	Style      Style
	BarWidth   float64
	Points     []Point
	ShowPoints bool // dots with tooltips at every point (also drawn for error bars)
	// ValueLabels prints each bar's value above it (0 included), for bars that span decades:
	// a 1 ms bar beside a 75 ms one is a sliver, its number is not.
	ValueLabels bool
}

// Marker is a vertical event line labelled above the plot.
type Marker struct {
	X      float64
	Label  string
	Failed bool
}

// Band is a shaded x range, e.g. the warm-up.
type Band struct {
	X0, X1 float64
	Label  string
}

// Line is an x/y chart of several series. Zero values give sensible defaults: the domains
// come from the data, y includes zero unless YFromData.
type Line struct {
	ID             string // unique in the page (clip path id)
	XLabel, YLabel string // axis titles, with units
	XLog           bool
	XMin, XMax     *float64 // fixed x domain (e.g. the run's duration)
	YMax           *float64
	YFromData      bool     // y domain from the data instead of from 0
	XPad           float64  // widen a data-derived x domain by this fraction each side (room for end points)
	XCategories    []string // categorical x axis: X is the index into this slice
	Series         []Series
	Markers        []Marker
	Bands          []Band
}

// Fp is a pointer to v, for the optional domain bounds.
func Fp(v float64) *float64 { return &v }

func esc(s string) string { return html.EscapeString(s) }

func textW(s string) float64 { return float64(len([]rune(s))) * charW }

// Finite reports whether v is neither NaN nor infinite.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// legendItem is drawn as a line, a dashed line, a filled square or a shaded square.
type legendItem struct {
	Name  string
	Color string
	Dash  bool
	Box   bool
	Faint bool
}

// layoutLegend wraps legend items into rows across width and returns each item's row/offset.
func layoutLegend(items []legendItem, width float64) (rows int, pos [][2]float64) {
	x, row := 0.0, 0
	for _, it := range items {
		w := 30 + textW(it.Name) + 16
		if x > 0 && x+w > width {
			row++
			x = 0
		}
		pos = append(pos, [2]float64{x, float64(row)})
		x += w
	}
	if len(items) > 0 {
		rows = row + 1
	}
	return rows, pos
}

func drawLegend(b *strings.Builder, items []legendItem, left, top, width float64) {
	_, pos := layoutLegend(items, width)
	for i, it := range items {
		x, y := left+pos[i][0], top+pos[i][1]*legendRowH
		fmt.Fprintf(b, `<g class="legend-item">`)
		switch {
		case it.Box:
			op := "1"
			if it.Faint {
				op = "0.25"
			}
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s" fill-opacity="%s"/>`, x+6, y-8, it.Color, op)
		default:
			dash := ""
			if it.Dash {
				dash = ` stroke-dasharray="5 3"`
			}
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`, x, y-3, x+24, y-3, it.Color, dash)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text></g>`, x+30, y+1, esc(it.Name))
	}
}

// markerRows assigns each marker label to the first row where it does not overlap the previous
// label, so events a few seconds apart stay legible.
func markerRows(ms []Marker, xs []float64, right float64) ([]int, int) {
	var ends []float64
	rows := make([]int, len(ms))
	for i, m := range ms {
		start := xs[i] - textW(m.Label)/2
		end := xs[i] + textW(m.Label)/2
		if end > right {
			start, end = right-textW(m.Label), right
		}
		r := 0
		for r < len(ends) && ends[r] > start-6 {
			r++
		}
		if r == len(ends) {
			ends = append(ends, 0)
		}
		ends[r] = end
		rows[i] = r
	}
	return rows, len(ends)
}

func (c *Line) hasData() bool {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if Finite(p.X) && Finite(p.Y) {
				return true
			}
		}
	}
	return false
}

// domains computes the x and y data ranges, including bar widths, error bars and markers.
func (c *Line) domains() (x0, x1, y0, y1 float64) {
	x0, x1, y0, y1 = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !Finite(p.X) || !Finite(p.Y) || (c.XLog && p.X <= 0) {
				continue
			}
			hw := 0.0
			if s.Style == StyleBars {
				hw = s.BarWidth / 2
			}
			x0, x1 = math.Min(x0, p.X-hw), math.Max(x1, p.X+hw)
			y0, y1 = math.Min(y0, p.Y), math.Max(y1, p.Y)
			if Finite(p.Lo) && Finite(p.Hi) {
				y0, y1 = math.Min(y0, p.Lo), math.Max(y1, p.Hi)
			}
		}
	}
	for _, m := range c.Markers {
		x0, x1 = math.Min(x0, m.X), math.Max(x1, m.X)
	}
	if !Finite(x0) {
		x0, x1 = 0, 1
	}
	if !Finite(y0) {
		y0, y1 = 0, 1
	}
	if c.XPad > 0 && !c.XLog {
		pad := (x1 - x0) * c.XPad
		if pad == 0 {
			pad = math.Abs(x0)*c.XPad + c.XPad
		}
		x0, x1 = x0-pad, x1+pad
	}
	if c.XMin != nil {
		x0 = *c.XMin
	}
	if c.XMax != nil {
		x1 = *c.XMax
	}
	if !c.YFromData && y0 > 0 {
		y0 = 0
	}
	if c.YMax != nil {
		y1 = *c.YMax
	}
	return
}

// SVG renders the chart.
func (c *Line) SVG() string {
	x0, x1, y0, y1 := c.domains()
	var xt []tick
	switch {
	case len(c.XCategories) > 0:
		x0, x1 = -0.5, float64(len(c.XCategories))-0.5
		for i, l := range c.XCategories {
			xt = append(xt, tick{v: float64(i), label: l})
		}
	case c.XLog:
		xt, x0, x1 = logTicks(x0, x1)
	default:
		var lo, hi float64
		xt, lo, hi = linearTicks(x0, x1, 10)
		if c.XMin == nil {
			x0 = lo
		}
		if c.XMax == nil {
			x1 = hi
		} else {
			xt = trimTicks(xt, x0, x1)
		}
	}
	if c.YMax == nil && y1 > y0 {
		y1 += (y1 - y0) * 0.05 // keep lines at the maximum off the frame
	}
	yt, ylo, yhi := linearTicks(y0, y1, 6)
	if c.YMax != nil {
		yhi = *c.YMax
		yt = trimTicks(yt, ylo, yhi)
	}

	left, right := float64(plotLeft), float64(chartW-plotRight)
	xs := scale{log: c.XLog && len(c.XCategories) == 0, d0: x0, d1: x1, r0: left, r1: right}
	mxs := make([]float64, len(c.Markers))
	for i, m := range c.Markers {
		mxs[i] = xs.pos(m.X)
	}
	mrows, nmrows := markerRows(c.Markers, mxs, right)
	top := 12 + float64(nmrows)*14
	bottom := top + plotHeight
	ys := scale{d0: ylo, d1: yhi, r0: bottom, r1: top}

	legend := c.legend()
	lrows, _ := layoutLegend(legend, right-left)
	height := bottom + 50 + float64(lrows)*legendRowH

	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %.0f" width="100%%" role="img" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" font-size="12" fill="#222">`, chartW, height)
	fmt.Fprintf(&b, `<defs><clipPath id="clip-%s"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath></defs>`, esc(c.ID), left, top, right-left, bottom-top)

	// Bands under everything, then gridlines, then data, then markers on top.
	for _, bd := range c.Bands {
		a, z := math.Max(xs.pos(bd.X0), left), math.Min(xs.pos(bd.X1), right)
		if z > a {
			fmt.Fprintf(&b, `<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#888" fill-opacity="0.15"><title>%s</title></rect>`, a, top, z-a, bottom-top, esc(bd.Label))
		}
	}
	b.WriteString(`<g class="grid" stroke-width="1">`)
	for _, t := range yt {
		y := ys.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e3e3e3"/>`, left, right, y, y)
	}
	for _, t := range xt {
		if len(c.XCategories) > 0 {
			break // categories are named under the axis; a line through each group's bars only clutters
		}
		x := xs.pos(t.v)
		col := "#e3e3e3"
		if t.minor {
			col = "#f2f2f2"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, x, x, top, bottom, col)
	}
	b.WriteString(`</g>`)

	// Axes and tick labels.
	fmt.Fprintf(&b, `<g class="axis"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`, left, top, right-left, bottom-top)
	for _, t := range yt {
		y := ys.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#888"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-4, left, y, y, left-7, y+4, esc(t.label))
	}
	for _, t := range xt {
		x := xs.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#888"/>`, x, x, bottom, bottom+4)
		if t.label == "" {
			continue
		}
		// A category label wider than its band would run into its neighbours: it is cut to
		// fit, and the whole label is the tooltip.
		if len(c.XCategories) > 0 {
			if short, cut := fitText(t.label, (right-left)/float64(len(c.XCategories))-8); cut {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle"><title>%s</title>%s</text>`, x, bottom+17, esc(t.label), esc(short))
				continue
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, bottom+17, esc(t.label))
	}
	fmt.Fprintf(&b, `<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle" font-weight="600">%s</text>`, (left+right)/2, bottom+36, esc(c.XLabel))
	fmt.Fprintf(&b, `<text class="axis-title" transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" font-weight="600">%s</text></g>`, (top+bottom)/2, esc(c.YLabel))

	if !c.hasData() {
		fmt.Fprintf(&b, `<text class="no-data" x="%.1f" y="%.1f" text-anchor="middle" fill="#888" font-size="14">no data</text>`, (left+right)/2, (top+bottom)/2)
	}
	fmt.Fprintf(&b, `<g class="data" clip-path="url(#clip-%s)">`, esc(c.ID))
	c.drawSeries(&b, xs, ys)
	b.WriteString(`</g>`)

	drawMarkers(&b, c.Markers, mxs, mrows, left, right, bottom)
	drawLegend(&b, legend, left, bottom+60, right-left)
	b.WriteString(`</svg>`)
	return b.String()
}

func trimTicks(ts []tick, lo, hi float64) []tick {
	out := ts[:0:0]
	eps := (hi - lo) * 1e-9
	for _, t := range ts {
		if t.v >= lo-eps && t.v <= hi+eps {
			out = append(out, t)
		}
	}
	return out
}

func (c *Line) legend() []legendItem {
	var items []legendItem
	for _, s := range c.Series {
		items = append(items, legendItem{Name: s.Name, Color: s.Color, Dash: s.Dash, Box: s.Style == StyleBars || s.Style == StyleArea})
	}
	for _, bd := range c.Bands {
		items = append(items, legendItem{Name: bd.Label, Color: "#888", Box: true, Faint: true})
	}
	return items
}

func (c *Line) drawSeries(b *strings.Builder, xs, ys scale) {
	nbars, bi := 0, 0
	for _, s := range c.Series {
		if s.Style == StyleBars {
			nbars++
		}
	}
	y0 := ys.pos(math.Max(ys.d0, 0))
	// Areas, then bars, then lines, so lines stay visible on top.
	ordered := make([]Series, 0, len(c.Series))
	for _, style := range []Style{StyleArea, StyleBars, StyleLine} {
		for _, s := range c.Series {
			if s.Style == style {
				ordered = append(ordered, s)
			}
		}
	}
	for _, s := range ordered {
		fmt.Fprintf(b, `<g class="series" data-series="%s">`, esc(s.Name))
		switch s.Style {
		case StyleArea:
			drawArea(b, s, xs, ys, y0)
		case StyleBars:
			for _, p := range s.Points {
				if !Finite(p.X) || !Finite(p.Y) {
					continue
				}
				full := xs.pos(p.X+s.BarWidth/2) - xs.pos(p.X-s.BarWidth/2)
				w := full * 0.9 / float64(nbars)
				x := xs.pos(p.X-s.BarWidth/2) + full*0.05 + float64(bi)*w
				y := ys.pos(p.Y)
				if s.ValueLabels {
					top := math.Min(y, y0)
					if Finite(p.Hi) {
						top = math.Min(top, ys.pos(p.Hi))
					}
					fmt.Fprintf(b, `<text class="value" x="%.1f" y="%.1f" text-anchor="middle" font-size="10.5" fill="#333">%s</text>`, x+w/2, top-4, esc(FormatNum(p.Y)))
				}
				if p.Y == 0 {
					continue
				}
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.55"><title>%s</title></rect>`,
					x, math.Min(y, y0), w, math.Abs(y0-y), s.Color, esc(tipOf(s, p)))
				if Finite(p.Lo) && Finite(p.Hi) {
					drawErrBar(b, x+w/2, ys.pos(p.Lo), ys.pos(p.Hi), math.Min(5, w/3), "#333")
				}
			}
			bi++
		default:
			var d strings.Builder
			pen := false
			for _, p := range s.Points {
				if !Finite(p.X) || !Finite(p.Y) || (xs.log && p.X <= 0) {
					pen = false
					continue
				}
				cmd := "L"
				if !pen {
					cmd = "M"
				}
				fmt.Fprintf(&d, "%s%.1f %.1f", cmd, xs.pos(p.X), ys.pos(p.Y))
				pen = true
			}
			dash := ""
			if s.Dash {
				dash = ` stroke-dasharray="6 4"`
			}
			if d.Len() > 0 {
				fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"%s><title>%s</title></path>`, d.String(), s.Color, dash, esc(s.Name))
			}
			for _, p := range s.Points {
				if !Finite(p.X) || !Finite(p.Y) || (xs.log && p.X <= 0) {
					continue
				}
				x, y := xs.pos(p.X), ys.pos(p.Y)
				if Finite(p.Lo) && Finite(p.Hi) {
					drawErrBar(b, x, ys.pos(p.Lo), ys.pos(p.Hi), 5, s.Color)
				}
				if s.ShowPoints || len(s.Points) <= 200 {
					r := 1.6
					if s.ShowPoints {
						r = 3.5
					}
					fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s</title></circle>`, x, y, r, s.Color, esc(tipOf(s, p)))
				}
			}
		}
		b.WriteString(`</g>`)
	}
}

// drawErrBar draws a vertical error bar at x from lo to hi (pixels) with caps half wide.
func drawErrBar(b *strings.Builder, x, lo, hi, half float64, color string) {
	fmt.Fprintf(b, `<path class="errbar" d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="1.5" fill="none"/>`,
		x, lo, x, hi, x-half, lo, x+half, lo, x-half, hi, x+half, hi, color)
}

// fitText cuts s to at most width pixels (estimated), ending in "…"; cut says whether it did.
func fitText(s string, width float64) (string, bool) {
	if textW(s) <= width {
		return s, false
	}
	r := []rune(s)
	n := max(int(width/charW)-1, 1)
	if n >= len(r) {
		return s, false
	}
	return string(r[:n]) + "…", true
}

// drawArea fills each unbroken run of finite points between the line and the points' Lo
// (the baseline y0 where Lo is not finite).
func drawArea(b *strings.Builder, s Series, xs, ys scale, y0 float64) {
	var run []Point
	flush := func() {
		if len(run) == 0 {
			return
		}
		var d strings.Builder
		for i, p := range run {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, xs.pos(p.X), ys.pos(p.Y))
		}
		for i := len(run) - 1; i >= 0; i-- {
			lo := y0
			if Finite(run[i].Lo) {
				lo = ys.pos(run[i].Lo)
			}
			fmt.Fprintf(&d, "L%.1f %.1f", xs.pos(run[i].X), lo)
		}
		fmt.Fprintf(b, `<path d="%sZ" fill="%s" fill-opacity="0.9" stroke="none"><title>%s</title></path>`, d.String(), s.Color, esc(s.Name))
		run = run[:0]
	}
	for _, p := range s.Points {
		if !Finite(p.X) || !Finite(p.Y) || (xs.log && p.X <= 0) {
			flush()
			continue
		}
		run = append(run, p)
	}
	flush()
}

func tipOf(s Series, p Point) string {
	if p.Tip != "" {
		return s.Name + ": " + p.Tip
	}
	return fmt.Sprintf("%s: x=%s y=%s", s.Name, FormatNum(p.X), FormatNum(p.Y))
}

// drawMarkers draws each event marker as a dashed vertical line from its label's row (mrows,
// from markerRows) down to bottom, its label kept inside [left, right]; failed events in red.
func drawMarkers(b *strings.Builder, markers []Marker, mxs []float64, mrows []int, left, right, bottom float64) {
	for i, m := range markers {
		col := "#444"
		if m.Failed {
			col = "#c62828"
		}
		x := mxs[i]
		ly := 10 + float64(mrows[i])*14 + 8
		anchor, lx := "middle", x
		if x+textW(m.Label)/2 > right {
			anchor, lx = "end", right
		}
		if x-textW(m.Label)/2 < left {
			anchor, lx = "start", math.Max(x, left)
		}
		fmt.Fprintf(b, `<g class="marker"><title>%s</title><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/>`, esc(m.Label), x, x, ly+3, bottom, col)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s" font-size="11.5">%s</text></g>`, lx, ly, anchor, col, esc(m.Label))
	}
}
