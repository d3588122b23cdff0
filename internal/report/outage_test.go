package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

// Runs with a fault get the availability part: each series' seconds without a success on a
// timeline with the fault window shaded, the table, and the longest gap as a headline at the
// top of the page. The quickstart fixture's cloud series fails from 10 s to 20 s (the partition)
// and its edge series never does.
func TestOutageUnderFaults(t *testing.T) {
	res, err := Load(filepath.Join("testdata", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	sec := outageSection(res)
	if sec == nil {
		t.Fatal("no availability section for a run with a partition")
	}
	rows := map[string][]string{}
	for _, r := range sec.Tables[0].Rows {
		rows[r[1]] = r // run, series, gaps, longest, ...: nothing swept, no setup column
	}
	if r := rows["load/cloud"]; r == nil || r[2] != "1" || r[3] != "10" {
		t.Errorf("load/cloud row = %q, want one gap of 10 s", r)
	}
	if r := rows["load/edge"]; r == nil || r[2] != "0" {
		t.Errorf("load/edge row = %q, want no gap", r)
	}
	if len(sec.Headlines) != 1 || !sec.Headlines[0].Bad || !strings.Contains(sec.Headlines[0].Text, "load/cloud: run 001: 10 s") {
		t.Errorf("headlines = %+v, want the cloud series' 10 s, marked bad", sec.Headlines)
	}
	svg := string(sec.Figures[0].SVG)
	for _, want := range []string{`class="band"`, "partition cloud (10–20 s)", "nothing got through from 10 s to 20 s", ">no gap<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	p := buildPage(res)
	if len(p.Headlines) == 0 || p.Headlines[0].Section != "outage" {
		t.Errorf("page headlines = %+v, want the outage first", p.Headlines)
	}

	for _, r := range res.Runs {
		r.Events = nil
	}
	if outageSection(res) != nil {
		t.Error("an availability section for runs without faults")
	}
}

// A gap is counted from the series' first success, and a second missing from the file is a gap.
func TestSeriesGaps(t *testing.T) {
	w := &Workload{}
	for _, p := range []struct{ t, ok float64 }{{0, 0}, {1, 0}, {2, 5}, {3, 0}, {4, 5}, {7, 5}, {8, 0}} {
		w.Timeseries = append(w.Timeseries, TimePoint{T: p.t, Series: "s", OK: p.ok})
	}
	gaps, seen := seriesGaps(w, "s")
	want := []gap{{3, 4}, {5, 7}, {8, 9}}
	if !seen || len(gaps) != len(want) {
		t.Fatalf("gaps = %v, want %v", gaps, want)
	}
	for i := range want {
		if gaps[i] != want[i] {
			t.Errorf("gap %d = %v, want %v", i, gaps[i], want[i])
		}
	}
	if _, seen := seriesGaps(w, "other"); seen {
		t.Error("a series without rows is seen")
	}
}

// A probe whose requests wait out a partition (kv-lag: the write is visible on the other member
// only after the heal) is slowed, not down: its seconds with a median far above the one before
// the fault are found, and ordinary jitter is not.
func TestSeriesSlow(t *testing.T) {
	w := &Workload{}
	for sec, p50 := range []float64{10, 12, 900, 11, 25, 2000, 1500, 800, 11, 10} { // 900 ms before the fault is not its doing
		w.Timeseries = append(w.Timeseries, TimePoint{T: float64(sec), Series: "lag", OK: 10, P50: p50})
	}
	slow, base := seriesSlow(w, "lag", 4)
	if base != 12 {
		t.Errorf("median before the fault = %v, want 12 (10, 11, 12, 900)", base)
	}
	if len(slow) != 1 || slow[0] != (gap{5, 8}) {
		t.Errorf("slowed = %v, want [5, 8)", slow)
	}
	if s, _ := seriesSlow(w, "lag", 0); s != nil {
		t.Errorf("no second before the fault, yet slowed = %v", s)
	}
}

// The kv partition, as a reader wants it at a glance: per store, how long each probe's writes
// did not get through. etcd's YCSB updates fail while its client's member is cut off (5 s to
// 10 s); continuum kv keeps serving, and its lag probe only waits out the partition.
func TestOutageComparesStores(t *testing.T) {
	mk := func(id, store string, failFrom, failTo float64, lagSlow bool) *Run {
		r := &Run{Run: results.Run{ID: id, Params: results.Params{"components": "[" + store + "]"}, Labels: map[string]string{"components": store},
			Repeat: 1, DurationS: 15}}
		r.Events = []Event{{T: 5.002, Action: "partition", Status: "ok"}, {T: 10.001, Action: "heal", Status: "ok"}}
		ycsb, lag := &Workload{Name: "ycsb", Series: []string{"update"}}, &Workload{Name: "lag", Series: []string{"lag"}}
		for s := 0.0; s < 15; s++ {
			ok := 1000.0
			if s >= failFrom && s < failTo {
				ok = 0
			}
			ycsb.Timeseries = append(ycsb.Timeseries, TimePoint{T: s, Series: "update", OK: ok, P50: 2})
			p50 := 12.0
			if lagSlow && s >= 5 && s < 10 {
				p50 = 1000 * (10 - s)
			}
			lag.Timeseries = append(lag.Timeseries, TimePoint{T: s, Series: "lag", OK: 10, P50: p50})
		}
		r.Workloads = []*Workload{lag, ycsb}
		return r
	}
	res := &Results{Runs: []*Run{mk("001", "continuum kv", 0, 0, true), mk("002", "etcd", 5, 10, false)}}
	res.Summary.Groups = []results.Group{
		{Params: res.Runs[0].Params, Labels: res.Runs[0].Labels, Runs: []string{"001"}},
		{Params: res.Runs[1].Params, Labels: res.Runs[1].Labels, Runs: []string{"002"}},
	}
	sec := outageSection(res)
	if sec == nil {
		t.Fatal("no availability section")
	}
	if len(sec.Headlines) != 1 || sec.Headlines[0].Text != "Longest stretch without a successful request, ycsb/update: continuum kv: 0 s; etcd: 5 s" {
		t.Errorf("headlines = %+v", sec.Headlines)
	}
	svg := string(sec.Figures[0].SVG)
	for _, want := range []string{">continuum kv · lag<", ">etcd · ycsb/update<", "etcd, ycsb/update: nothing got through from 5 s to 10 s",
		"continuum kv, lag: slowed from 5 s to 10 s", `fill-opacity="0.35"`, "partition (5.00–10.00 s)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
}
