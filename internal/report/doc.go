// Package report turns a results directory (docs/results-format.md) into a self-contained HTML
// report (report.html) and a Markdown summary (summary.md) written next to the data.
//
// It owns reading the results files (Load), the small SVG chart engine the report draws with
// (scales, ticks, log axes, legends, event markers) and the page templates. It does not run
// experiments, compute the summary statistics (the runner writes summary.json) or reach the
// network: everything the page shows is inlined, so the report opens offline and prints.
package report
