package report

import (
	"path/filepath"
	"strings"
	"testing"
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
		rows[r[2]] = r
	}
	if r := rows["load/cloud"]; r == nil || r[3] != "1" || r[4] != "10" {
		t.Errorf("load/cloud row = %q, want one gap of 10 s", r)
	}
	if r := rows["load/edge"]; r == nil || r[3] != "0" {
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
