package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"

	"github.com/continuum-project/continuum/internal/report/chart"
)

// Render loads the results directory dir and writes report.html and summary.md into it.
func Render(dir string) error {
	res, err := Load(dir)
	if err != nil {
		return err
	}
	return RenderResults(res)
}

// RenderResults writes report.html and summary.md for already loaded results into res.Dir.
func RenderResults(res *Results) error {
	p := buildPage(res)
	var h bytes.Buffer
	if err := pageTmpl.Execute(&h, p); err != nil {
		return fmt.Errorf("render report.html: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(res.Dir, "report.html"), h.Bytes()); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(res.Dir, "summary.md"), []byte(markdown(p)))
}

// HTMLPath and MarkdownPath name the files Render writes into a results directory.
func HTMLPath(dir string) string     { return filepath.Join(dir, "report.html") }
func MarkdownPath(dir string) string { return filepath.Join(dir, "summary.md") }

// writeFileAtomic replaces path in one rename, so a viewer never sees half a report.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":        chart.FormatNum,
	"numericCol": func(cols []Column, i int) bool { return i < len(cols) && cols[i].Numeric },
	"statusClass": func(s string) string {
		switch s {
		case "ok":
			return "ok"
		case "interrupted":
			return "warn"
		}
		return "bad"
	},
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Scenario}} — Continuum report</title>
<style>
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #222; background: #fff; margin: 0; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; border-bottom: 2px solid #e6e6e6; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 24px 0 8px; }
.meta { color: #555; margin: 0 0 16px; }
/* A table never widens the page: it scrolls inside its own box, headers wrap, and long
   unbroken words (paths, YAML) break rather than push the column out. */
.tbl { max-width: 100%; overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 4px 10px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
th { background: #f5f6f8; font-weight: 600; max-width: 16em; }
td.n, th.n { text-align: right; }
td.n { white-space: nowrap; }
th.metric, td.metric { max-width: 22em; }
table.wide { font-size: 12.5px; }
table.wide th, table.wide td { padding: 3px 6px; }
.headlines { background: #f3f7fc; border-left: 4px solid #2f6fb3; padding: 8px 14px; margin: 14px 0; }
.headlines ul { margin: 4px 0; padding-left: 20px; }
.headlines li.bad { color: #b71c1c; font-weight: 600; }
details.all > summary { cursor: pointer; color: #2f6fb3; margin: 8px 0; }
code, figcaption, .small { overflow-wrap: break-word; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.badge.ok { background: #e3f3e6; color: #1b5e20; }
.badge.warn { background: #fff3cd; color: #7a5a00; }
.badge.bad { background: #fde2e1; color: #b71c1c; }
.missing { background: #fff8e1; border-left: 4px solid #f0b400; padding: 8px 14px; margin: 12px 0; }
.missing ul { margin: 4px 0; padding-left: 20px; }
.distorted { background: #fde2e1; border: 2px solid #b71c1c; border-radius: 6px; padding: 10px 16px; margin: 14px 0; color: #5f0f0f; }
.distorted > strong { font-size: 16px; }
.distorted ul { margin: 6px 0; padding-left: 22px; }
.distorted p { margin: 6px 0 0; }
figure.chart { margin: 18px 0 26px; break-inside: avoid; page-break-inside: avoid; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figcaption { color: #444; font-size: 13px; margin-top: 2px; max-width: 900px; }
details.run { border: 1px solid #ddd; border-radius: 6px; padding: 4px 16px; margin: 12px 0; }
details.run > summary { cursor: pointer; font-size: 17px; font-weight: 600; padding: 6px 0; }
.env td:first-child { color: #555; }
.small { color: #666; font-size: 12px; }
@media print {
  main { max-width: none; padding: 0; }
  details.run { border: none; padding: 0; }
  h2 { break-after: avoid; }
}
</style>
</head>
<body>
<main>
<header>
<h1>{{.Scenario}}</h1>
<p class="meta">Continuum experiment report · started {{or .Started "unknown"}} · finished {{or .Finished "unknown"}} · {{len .Runs}} run(s)</p>
</header>
{{with .Distortion}}<div class="distorted" id="distortion" role="alert"><strong>{{$.DistortionHead}}</strong>
{{range .}}{{with .Run}}<div>{{.}}:</div>{{end}}<ul>{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p>{{$.DistortionAdvice}}</p></div>{{end}}
{{with .Headlines}}<div class="headlines" id="headlines"><strong>At a glance</strong><ul>
{{range .}}<li{{if .Bad}} class="bad"{{end}}>{{.Text}} <a href="#{{.Section}}" class="small">({{.SectionTitle}})</a></li>
{{end}}</ul></div>{{end}}
{{with .Missing}}<div class="missing"><strong>Not everything is shown:</strong><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}

<section id="environment">
<h2>Environment</h2>
{{if .Env}}<div class="tbl"><table class="env">{{range .Env}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</table></div>
{{else}}<p class="small">environment.json is missing.</p>{{end}}
</section>

<section id="runs">
<h2>Runs</h2>
<div class="tbl"><table class="runs"><tr><th>run</th><th>parameters</th><th class="n">repeat</th><th>started</th><th class="n">duration</th><th class="n">warm-up</th><th>platform</th><th>status</th></tr>
{{range .Runs}}<tr><td>{{.ID}}</td><td>{{.Params}}</td><td class="n">{{.Repeat}}</td><td>{{.Started}}</td><td class="n">{{.Duration}}</td><td class="n">{{.Warmup}}</td><td>{{.Platform}}{{with .Links}}<br><span class="small">links: {{.}}</span>{{end}}</td><td><span class="badge {{statusClass .Status}}">{{.Status}}</span>{{if .Distorted}} <span class="badge bad">distorted</span>{{end}}{{with .Error}} {{.}}{{end}}</td></tr>
{{end}}</table></div>
</section>

<section id="summary">
<h2>Summary</h2>
<p class="small">Latencies in ms, after the warm-up. {{if gt (len .Tables) 0}}{{with index .Tables 0}}{{if gt .N 1}}Cells are the mean across repeats ± the half-width of its 95% confidence interval (Student t).{{end}}{{end}}{{end}}</p>
{{range .Compare}}<div class="tbl"><table class="summary compare"><tr><th class="metric">metric{{with .Params}}<br><span class="small">columns: {{range $i, $p := .}}{{if $i}} · {{end}}{{$p}}{{end}}</span>{{end}}</th>{{range .Columns}}<th class="n" title="runs {{.Runs}}{{if gt .N 1}}; n = {{.N}}, mean ± 95% CI{{end}}">{{range $i, $p := .Parts}}{{if $i}}<br>{{end}}{{$p}}{{end}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="metric">{{.Metric}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}
{{$h := .LatHeaders}}
{{if .Tables}}<details class="all" id="all-metrics"{{if not .Compare}} open{{end}}><summary>Every metric of each {{if .MultiRun}}combination{{else}}run{{end}} (as in summary.json; counters that are 0 everywhere but are not errors or losses are left out)</summary>
{{end}}
{{range .Tables}}
<h3>{{.Title}}{{if ne .Params "(none)"}}: {{.Params}}{{end}} <span class="small">(runs {{.Runs}}{{if gt .N 1}}; n = {{.N}}, mean ± 95% CI{{end}})</span></h3>
{{if .Latency}}<div class="tbl"><table class="summary"><tr><th class="metric">metric</th>{{range $h}}<th class="n">{{.}}</th>{{end}}</tr>
{{range .Latency}}<tr><td class="metric">{{.Metric}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}
{{if .Values}}<div class="tbl"><table class="summary values"><tr><th class="metric">metric</th><th class="n">value</th></tr>
{{range .Values}}<tr><td class="metric">{{.Metric}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}
{{else}}<p>summary.json has no runs or groups.</p>
{{end}}
{{if .Tables}}</details>{{end}}
</section>

{{range .Extra}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{with .Note}}<p class="small">{{.}}</p>{{end}}
{{range .Tables}}<div class="tbl"><table class="{{.Class}}{{if gt (len .Columns) 7}} wide{{end}}"><tr>{{range .Columns}}<th{{if .Numeric}} class="n"{{end}}{{with .Title}} title="{{.}}"{{end}}>{{.Header}}</th>{{end}}</tr>
{{$cols := .Columns}}{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if numericCol $cols $i}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}{{range .Figures}}{{template "figure" .}}{{end}}
</section>{{end}}

{{with .Sweep}}<section id="sweep">
<h2>Sweep</h2>
{{range .}}{{template "figure" .}}{{end}}
</section>{{end}}

{{range .Sections}}
{{if $.MultiRun}}<details class="run" id="run-{{.ID}}"{{if .Open}} open{{end}}><summary>{{.Title}} <span class="badge {{statusClass .Status}}">{{.Status}}</span></summary>
{{else}}<section class="run" id="run-{{.ID}}"><h2>{{.Title}} <span class="badge {{statusClass .Status}}">{{.Status}}</span></h2>
{{end}}
{{with .Missing}}<div class="missing">Missing in this run: {{range $i, $m := .}}{{if $i}}, {{end}}{{$m}}{{end}}</div>{{end}}
<h3>Events</h3>
{{if .Events}}<div class="tbl"><table class="events"><tr><th class="n">t (s)</th><th>action</th><th>target</th><th>detail</th><th>status</th></tr>
{{range .Events}}<tr><td class="n">{{.Time}}</td><td>{{.Action}}</td><td>{{.Target}}</td><td>{{.Detail}}</td><td>{{.Status}}</td></tr>
{{end}}</table></div>{{else}}<p class="small">No events.</p>{{end}}
{{range .Workloads}}
<h3>Workload {{.Name}}</h3>
{{with .Note}}<p class="small workload-note">{{.}}</p>{{end}}
{{range .Figures}}{{template "figure" .}}{{end}}
{{if .Requests}}<h4>Errors by type</h4>
{{if .Errors}}<div class="tbl"><table class="errors"><tr><th>series</th><th>type</th><th class="n">count</th></tr>
{{range .Errors}}<tr><td>{{.Series}}</td><td>{{.Type}}</td><td class="n">{{num .Count}}</td></tr>
{{end}}</table></div>{{else}}<p class="small">No errors.</p>{{end}}{{end}}
{{end}}
<h3>Nodes</h3>
{{with .NodesNote}}<p class="small">{{.}}</p>{{end}}
{{range .Nodes}}{{template "figure" .}}{{end}}
{{with .Network}}<h3>Emulated network</h3>
{{range .}}{{template "figure" .}}{{end}}{{end}}
{{if $.MultiRun}}</details>{{else}}</section>{{end}}
{{end}}
<p class="small">Generated by <code>continuum report</code> from {{.Dir}}. Hover a point for its value.</p>
</main>
<script>
// Printing should include every run, not only the ones left open on screen.
window.addEventListener("beforeprint", function () {
  document.querySelectorAll("details.run").forEach(function (d) { d.open = true; });
});
</script>
</body>
</html>
{{define "figure"}}<figure class="chart chart-{{.Kind}}" id="{{.ID}}" data-chart="{{.Kind}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}`
