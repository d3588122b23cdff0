package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

func group(params results.Params, labels map[string]string, p50, lo, hi float64) results.Group {
	return results.Group{Params: params, Labels: labels, Runs: []string{"x"}, Metrics: map[string]map[string]results.Aggregate{
		"ycsb/all/latency_ms":     {"p50": {N: 3, Mean: p50, CI95: [2]float64{lo, hi}}, "p99": results.One(2 * p50)},
		"ycsb/all/throughput_rps": {"value": results.One(1000)},
	}}
}

// A sweep over whole setups is drawn as grouped bars named by the values' short labels, with the
// repeats' confidence interval as error bars; a numeric (or duration) sweep stays a line.
func TestSweepFigureShapes(t *testing.T) {
	long := "[{name: m1, kind: kv, node: n1, config: {cluster: edge, client_port: 2379, peer_port: 2380}}]"
	cat := results.Summary{Groups: []results.Group{
		group(results.Params{"components": long}, map[string]string{"components": "continuum kv"}, 2, 1.5, 2.5),
		group(results.Params{"components": long + " "}, map[string]string{"components": "etcd"}, 6, 5, 7),
	}}
	figs := sweepFigures(cat)
	if len(figs) != 3 {
		t.Fatalf("%d sweep figures, want p50, p99, throughput", len(figs))
	}
	svg := string(figs[0].SVG)
	for _, want := range []string{">continuum kv<", ">etcd<", `class="errbar"`, "fill-opacity=\"0.55\""} {
		if !strings.Contains(svg, want) {
			t.Errorf("categorical sweep figure lacks %s", want)
		}
	}
	if strings.Contains(svg, "client_port") {
		t.Error("the categorical axis prints the swept YAML instead of its label")
	}
	if regexp.MustCompile(`<path d="M[^"]*L`).MatchString(svg) {
		t.Error("a categorical sweep is drawn as a line from one setup to the next")
	}

	num := results.Summary{Groups: []results.Group{
		group(results.Params{"topology.links.0.delay": "1ms"}, nil, 2, 2, 2),
		group(results.Params{"topology.links.0.delay": "25ms"}, nil, 30, 30, 30),
		group(results.Params{"topology.links.0.delay": "1s"}, nil, 1000, 1000, 1000),
	}}
	svg = string(sweepFigures(num)[0].SVG)
	if !regexp.MustCompile(`<path d="M[^"]*L`).MatchString(svg) || !strings.Contains(svg, "topology.links.0.delay (ms)") {
		t.Error("a duration sweep is not a line on a millisecond axis")
	}
	if !strings.Contains(svg, ">1000<") && !strings.Contains(svg, ">1,000<") {
		t.Errorf("1s is not placed at 1000 ms")
	}
	if regexp.MustCompile(`>-[0-9]`).MatchString(svg) {
		t.Error("the axis of a sweep over delays shows negative values")
	}
}

// Category labels wider than their band are cut, with the whole label as the tooltip.
func TestLongCategoryLabelsAreCut(t *testing.T) {
	var gs []results.Group
	for _, l := range []string{"a label far too long to fit under its bar in a row of six", "b", "c", "d", "e", "f"} {
		gs = append(gs, group(results.Params{"s": l}, nil, 1, 1, 1))
	}
	svg := string(sweepFigures(results.Summary{Groups: gs})[0].SVG)
	if !strings.Contains(svg, "<title>a label far too long to fit under its bar in a row of six</title>a label") || !strings.Contains(svg, "…") {
		t.Errorf("long category label not cut with a tooltip")
	}
}

// The kv partition sweep: etcd failed 6682 requests and kv none, and kv's p50 is 1 ms beside
// etcd's 75 ms. Failures get their own chart beside latency and throughput, and bars that span
// decades print their values, so neither the 0 nor the 1 ms vanishes.
func TestSweepShowsFailuresAndLabelsDecades(t *testing.T) {
	g := func(label string, p50, errs float64) results.Group {
		return results.Group{Params: results.Params{"components": "[" + label + "]"}, Labels: map[string]string{"components": label}, Runs: []string{"x"},
			Metrics: map[string]map[string]results.Aggregate{
				"ycsb/all/latency_ms":     {"p50": results.One(p50), "p99": results.One(2 * p50)},
				"ycsb/all/throughput_rps": {"value": results.One(1000)},
				"ycsb/all/errors":         {"value": results.One(errs)},
			}}
	}
	figs := sweepFigures(results.Summary{Groups: []results.Group{g("continuum kv", 1, 0), g("etcd", 75, 6682)}})
	byID := map[string]string{}
	for _, f := range figs {
		byID[f.ID] = string(f.SVG)
	}
	errs, ok := byID["sweep-value-errors"]
	if !ok {
		t.Fatalf("no failed-requests chart among %d sweep figures", len(figs))
	}
	for _, want := range []string{`class="value"`, ">6682<", ">0<", "failed requests"} {
		if !strings.Contains(errs, want) {
			t.Errorf("failed-requests chart lacks %s", want)
		}
	}
	if lat := byID["sweep-p50-latency_ms"]; !strings.Contains(lat, `class="value"`) || !strings.Contains(lat, ">1<") || !strings.Contains(lat, ">75<") {
		t.Error("p50 bars of 1 and 75 ms do not print their values")
	}
	if tput := byID["sweep-value-throughput_rps"]; strings.Contains(tput, `class="value"`) {
		t.Error("throughput bars of equal height print values they do not need")
	}
}
