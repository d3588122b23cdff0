// Package chart is the report's SVG chart engine: line, bar and area charts with linear, log and
// categorical axes, error bars, legends, event markers and shaded bands (Line), stacked bars
// (StackedBars), and the Figure a page shows. Charts are drawn from escaped text only, so their
// SVG can be inlined in a page; nothing is fetched, so a report opens offline and prints.
//
// It knows nothing of results directories or of any system: report sections build charts from
// their data and hand the figures to the page.
package chart
