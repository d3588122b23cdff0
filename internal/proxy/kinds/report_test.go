package kinds

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
)

func TestShareBelow(t *testing.T) {
	pts := []report.PercentilePoint{{Percentile: 0, LatencyMS: 10}, {Percentile: 50, LatencyMS: 20}, {Percentile: 100, LatencyMS: 40}}
	for _, tt := range []struct{ x, want float64 }{{5, 0}, {10, 0}, {15, 0.25}, {20, 0.5}, {30, 0.75}, {40, 1}, {100, 1}} {
		if got := shareBelow(pts, tt.x); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("shareBelow(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
	if !math.IsNaN(shareBelow(nil, 1)) {
		t.Error("no points must give NaN")
	}
}

// The ranges add up to 100% of the requests, and the split at the requirement is stats.json's.
func TestRangeShares(t *testing.T) {
	w := &report.Workload{Percentiles: []report.PercentilePoint{
		{Series: "s", Percentile: 0, LatencyMS: 10}, {Series: "s", Percentile: 50, LatencyMS: 30},
		{Series: "s", Percentile: 90, LatencyMS: 79}, {Series: "s", Percentile: 100, LatencyMS: 200}}}
	st := results.SeriesStats{OK: 90, QoS: &results.QoSStats{LatencyMS: 80, Within: 81, Total: 100}}
	vals, ok := rangeShares(w, "s", st)
	if !ok || len(vals) != 6 {
		t.Fatalf("rangeShares = %v, %v", vals, ok)
	}
	sum := 0.0
	for _, v := range vals {
		if v < 0 {
			t.Errorf("negative range share in %v", vals)
		}
		sum += v
	}
	if math.Abs(sum-100) > 1e-9 || math.Abs(vals[0]+vals[1]+vals[2]-81) > 1e-9 || vals[5] != 10 {
		t.Errorf("ranges %v: want a sum of 100, 81 within, 10 failed", vals)
	}
	if _, ok := rangeShares(w, "s", results.SeriesStats{}); ok {
		t.Error("ranges without QoS stats")
	}
	// With loadgen's exact counts below 20, 50, 80 and 120 ms.
	var exact results.SeriesStats
	if err := json.Unmarshal([]byte(`{"ok": 90, "qos": {"latency_ms": 80, "within": 81, "total": 100,
		"below": [{"latency_ms": 20, "count": 30}, {"latency_ms": 50, "count": 60}, {"latency_ms": 80, "count": 81}, {"latency_ms": 120, "count": 85}]}}`), &exact); err != nil {
		t.Fatal(err)
	}
	vals, _ = rangeShares(w, "s", exact)
	if want := []float64{30, 30, 21, 4, 5, 10}; !slices.Equal(vals, want) {
		t.Errorf("exact ranges %v, want %v", vals, want)
	}
}

// writeQoSRun writes one run of a proxy experiment: the load's dps series through a proxy,
// with instances a and b, an event at 2 s after which only b serves.
func writeQoSRun(t *testing.T, dir, id, strategy string, withinPct float64) map[string]any {
	rdir := filepath.Join(dir, "runs", id)
	reporttest.WriteJSON(t, filepath.Join(rdir, "run.json"), map[string]any{"id": id, "params": map[string]any{"components.proxy.config.strategy": strategy},
		"repeat": 1, "started": "2026-11-22T10:15:01Z", "duration_s": 4, "warmup_s": 0, "status": "ok"})
	reporttest.WriteCSV(t, filepath.Join(rdir, "events.csv"), []string{"t_s", "action", "target", "detail", "status"},
		[][]string{{"2.000", "kill", "a", "killed a", "ok"}})
	wdir := filepath.Join(rdir, "workloads", "load")
	within := math.Round(40 * withinPct / 100) // counts are whole requests
	reporttest.WriteJSON(t, filepath.Join(wdir, "stats.json"), map[string]any{"series": map[string]any{"dps": map[string]any{
		"latency_ms": map[string]any{"count": 39, "mean": 30, "p50": 25, "p90": 60, "p99": 90, "p999": 95, "max": 95},
		"sent":       40, "ok": 39, "errors": 1, "throughput_rps": 9.75, "errors_by_type": map[string]any{"http_5xx": 1},
		"qos":       map[string]any{"latency_ms": 80, "within": within, "total": 40, "within_pct": withinPct},
		"instances": map[string]any{"a": map[string]any{"requests": 20, "ok": 20, "share": 0.5}, "b": map[string]any{"requests": 19, "ok": 19, "share": 0.475}, "(none)": map[string]any{"requests": 1, "errors": 1, "share": 0.025}},
	}}})
	reporttest.WriteCSV(t, filepath.Join(wdir, "percentiles.csv"), []string{"series", "percentile", "latency_ms", "count"},
		[][]string{{"dps", "0", "10", "1"}, {"dps", "50", "25", "20"}, {"dps", "90", "60", "35"}, {"dps", "100", "95", "39"}})
	var ts, inst [][]string
	for s := 0; s < 4; s++ {
		ts = append(ts, []string{f0(float64(s)), "dps", "10", "10", "0", "10", "25", "60", "90", f0(math.Min(10, within/4))})
		if s < 2 {
			inst = append(inst, []string{f0(float64(s)), "dps", "a", "10", "10", "0", "20"})
		} else {
			inst = append(inst, []string{f0(float64(s)), "dps", "b", "10", "10", "0", "40"})
		}
	}
	reporttest.WriteCSV(t, filepath.Join(wdir, "timeseries.csv"), []string{"t_s", "series", "sent", "ok", "errors", "throughput_rps", "p50_ms", "p99_ms", "max_ms", "within_qos"}, ts)
	reporttest.WriteCSV(t, filepath.Join(wdir, "instances.csv"), []string{"t_s", "series", "instance", "requests", "ok", "errors", "mean_ms"}, inst)
	return map[string]any{"load/dps/qos": map[string]any{"latency_ms": 80, "within_pct": withinPct, "within": within, "total": 40, "mean_ms": 30}}
}

// writeQoSResults writes a rendered results directory of a two-strategy proxy experiment (qos
// and round-robin, one run each) and returns it.
func writeQoSResults(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var runs, groups []map[string]any
	for i, s := range []struct {
		strategy string
		pct      float64
	}{{"qos", 99.5}, {"round-robin", 30}} {
		id := f0(float64(i + 1))
		id = strings.Repeat("0", 3-len(id)) + id
		m := writeQoSRun(t, dir, id, s.strategy, s.pct)
		params := map[string]any{"components.proxy.config.strategy": s.strategy}
		runs = append(runs, map[string]any{"id": id, "params": params, "repeat": 1, "status": "ok", "metrics": m})
		agg := map[string]any{}
		for f, v := range m["load/dps/qos"].(map[string]any) {
			x := toF(v)
			agg[f] = map[string]any{"n": 1, "mean": x, "ci95": []float64{x, x}}
		}
		groups = append(groups, map[string]any{"params": params, "runs": []string{id}, "metrics": map[string]any{"load/dps/qos": agg}})
	}
	reporttest.WriteJSON(t, filepath.Join(dir, "summary.json"), map[string]any{"schema": 1, "scenario": "qos-static", "runs": runs, "groups": groups})
	if err := report.Render(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// qosFigures are the figures the QoS section and its workload figures draw for writeQoSResults.
var qosFigures = []string{"qos-ranges", "qos-cdf", "instance-share", "instance-share-time", "instance-share-phases", "qos-time"}

func TestRenderQoS(t *testing.T) {
	dir := writeQoSResults(t)
	html, err := os.ReadFile(report.HTMLPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	// The verdict at the top, linked to the section.
	if i, j := strings.Index(page, `id="headlines"`), strings.Index(page, `<section id="environment">`); i < 0 || i > j ||
		!strings.Contains(page[i:j], "Requests within QoS (80 ms), load/dps: qos 99.50%; round-robin 30%") {
		t.Errorf("report.html lacks the within-QoS headline above the environment")
	}
	want := []string{`<section id="proxy">`, "<td>qos</td>", "<td>round-robin</td>", "<td class=\"n\">99.50</td>", "T1 kill a", "≤ 20 ms", "80–120 ms"}
	for _, k := range qosFigures {
		want = append(want, `data-chart="`+k+`"`)
	}
	for _, want := range want {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	md, err := os.ReadFile(report.MarkdownPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| qos | load/dps | 80 | 30 | 99.50 | 40 | 001 |") {
		t.Errorf("summary.md lacks the QoS row:\n%s", md)
	}
}

func toF(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return math.NaN()
}

// Results without QoS or instances get none of the QoS figures.
func TestNoQoSWithoutData(t *testing.T) {
	res, err := report.Load(filepath.Join("..", "..", "report", "testdata", "sweep"))
	if err != nil {
		t.Fatal(err)
	}
	if v := buildQoS(res, nil); v != nil {
		t.Errorf("QoS section without QoS data: %+v", v)
	}
	for _, r := range res.Runs {
		for _, w := range r.Workloads {
			if figs := instanceFigures(r, w, nil); len(figs) != 0 {
				t.Errorf("run %s: %d instance figures without instances.csv", r.ID, len(figs))
			}
		}
	}
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
