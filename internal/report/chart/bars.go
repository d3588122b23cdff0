package chart

import (
	"fmt"
	"math"
	"strings"
)

// Stack is one layer of a stacked bar chart: a value per category.
type Stack struct {
	Name   string
	Color  string
	Values []float64
}

// StackedBars draws one bar per category, its stacks piled bottom-up in order.
type StackedBars struct {
	XLabel, YLabel string
	Categories     []string
	Stacks         []Stack
	Unit           string // appended to tooltip values
	// Percent: the stacks are shares of 100 (the axis ends at 100, totals are not labelled).
	Percent bool
}

// SVG renders the chart.
func (c *StackedBars) SVG() string {
	totals := make([]float64, len(c.Categories))
	for _, s := range c.Stacks {
		for i := range c.Categories {
			if i < len(s.Values) && Finite(s.Values[i]) && s.Values[i] > 0 {
				totals[i] += s.Values[i]
			}
		}
	}
	maxT := 0.0
	for _, t := range totals {
		maxT = math.Max(maxT, t)
	}
	yt, ylo, yhi := linearTicks(0, maxT*1.08, 6) // headroom for the total above the tallest bar
	if c.Percent {
		yt, ylo, yhi = linearTicks(0, 100, 6)
	}
	left, right := float64(plotLeft), float64(chartW-plotRight)
	top := 14.0
	bottom := top + plotHeight
	ys := scale{d0: ylo, d1: yhi, r0: bottom, r1: top}
	var items []legendItem
	for _, s := range c.Stacks {
		items = append(items, legendItem{Name: s.Name, Color: s.Color, Box: true})
	}
	lrows, _ := layoutLegend(items, right-left)
	height := bottom + 50 + float64(lrows)*legendRowH

	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %.0f" width="100%%" role="img" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" font-size="12" fill="#222">`, chartW, height)
	b.WriteString(`<g class="grid">`)
	for _, t := range yt {
		y := ys.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e3e3e3"/>`, left, right, y, y)
	}
	b.WriteString(`</g><g class="axis">`)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`, left, top, right-left, bottom-top)
	for _, t := range yt {
		y := ys.pos(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#888"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-4, left, y, y, left-7, y+4, esc(t.label))
	}
	n := float64(len(c.Categories))
	bandW := (right - left) / math.Max(n, 1)
	for i, cat := range c.Categories {
		x := left + bandW*(float64(i)+0.5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, bottom+17, esc(cat))
	}
	fmt.Fprintf(&b, `<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle" font-weight="600">%s</text>`, (left+right)/2, bottom+36, esc(c.XLabel))
	fmt.Fprintf(&b, `<text class="axis-title" transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" font-weight="600">%s</text></g>`, (top+bottom)/2, esc(c.YLabel))
	if maxT == 0 {
		fmt.Fprintf(&b, `<text class="no-data" x="%.1f" y="%.1f" text-anchor="middle" fill="#888" font-size="14">no data</text>`, (left+right)/2, (top+bottom)/2)
	}
	b.WriteString(`<g class="data">`)
	barW := math.Min(bandW*0.55, 120)
	for i, cat := range c.Categories {
		x := left + bandW*(float64(i)+0.5) - barW/2
		acc := 0.0
		for _, s := range c.Stacks {
			if i >= len(s.Values) || !Finite(s.Values[i]) || s.Values[i] <= 0 {
				continue
			}
			y0, y1 := ys.pos(acc), ys.pos(acc+s.Values[i])
			acc += s.Values[i]
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#fff" stroke-width="0.5"><title>%s</title></rect>`,
				x, y1, barW, y0-y1, s.Color, esc(fmt.Sprintf("%s, %s: %s %s", cat, s.Name, FormatNum(s.Values[i]), c.Unit)))
		}
		if acc > 0 && !c.Percent {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s %s</text>`, x+barW/2, ys.pos(acc)-4, FormatNum(acc), esc(c.Unit))
		}
	}
	b.WriteString(`</g>`)
	drawLegend(&b, items, left, bottom+60, right-left)
	b.WriteString(`</svg>`)
	return b.String()
}
