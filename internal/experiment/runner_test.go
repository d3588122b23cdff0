package experiment

// Tests of Execute with the real kinds on a real testbed: the scenarios in testdata/e2e fire
// every kind of event from the timeline and the assertions read their effect back from the
// results directory (timeseries.csv, events.csv, samples.csv, run.json, summary.json).
//
// Time bases: events.csv and samples.csv count from the runner's t0, taken just before the
// workloads start; timeseries.csv rows are seconds of the workload's own t0, a little later. A
// workload second s therefore covers runner time [s+δ, s+1+δ) with a small δ > 0, and the
// scenarios leave at least 0.3 s between an event and the first row whose content it decides.

import (
	"github.com/continuum-project/continuum/internal/testenv"

	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
)

// continuumBin is the binary that components and workloads run inside nodes.
var continuumBin string

func TestMain(m *testing.M) {
	if testbed.IsLauncher() {
		testbed.LauncherMain() // never returns
	}
	flag.Parse() // for testing.Short
	cleanup := func() {}
	if os.Getenv("CONTINUUM_BIN") != "" || (os.Geteuid() == 0 && !testing.Short()) {
		var err error
		if continuumBin, cleanup, err = testenv.Binary(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func requireRootE2E(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
}

const e2eDir = "testdata/e2e"

// executeE2E runs a scenario of testdata/e2e with its own state and results dirs and checks,
// at cleanup, that no testbed of it is left.
func executeE2E(t *testing.T, file string, opts Options) *Result {
	t.Helper()
	requireRootE2E(t)
	if testing.Short() {
		t.Skip("runs a real experiment")
	}
	stateDir := t.TempDir()
	opts.Platform = testbed.Provider{StateDir: stateDir}
	opts.Out = t.TempDir()
	opts.Binary = continuumBin
	if opts.SampleInterval == 0 {
		opts.SampleInterval = 500 * time.Millisecond
	}
	t.Cleanup(func() {
		if names, err := testbed.DestroyAll(stateDir); err != nil || len(names) > 0 {
			t.Errorf("testbeds left after Execute: %v (%v)", names, err)
		}
		prefix := fmt.Sprintf("ctm-run%d-", os.Getpid()%100000)
		if m, _ := filepath.Glob("/run/netns/" + prefix + "*"); len(m) > 0 {
			t.Errorf("namespaces left after Execute: %v", m)
		}
	})
	start := time.Now()
	res, err := Execute(context.Background(), filepath.Join(e2eDir, file), opts)
	if err != nil {
		t.Fatalf("Execute %s: %v", file, err)
	}
	t.Logf("%s: %d run(s) in %v, results in %s", file, res.Runs, time.Since(start).Round(time.Millisecond), res.Dir)
	if res.Failed != 0 {
		t.Fatalf("%d runs failed", res.Failed)
	}
	if _, err := os.Stat(res.Report); err != nil {
		t.Errorf("report: %v", err)
	}
	return res
}

// readCSV returns the rows of a CSV file as maps from header to cell.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s: empty (no header)", path)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// tsRow is one second of one series of timeseries.csv.
type tsRow struct {
	sec              int
	sent, ok, errors int
	p50              float64 // NaN for a second without successes
}

// timeseries returns workload w's timeseries of run id by series, indexed by second.
func timeseries(t *testing.T, res *Result, id, w string) map[string][]tsRow {
	t.Helper()
	out := map[string][]tsRow{}
	for _, r := range readCSV(t, filepath.Join(res.Dir, "runs", id, "workloads", w, "timeseries.csv")) {
		row := tsRow{sec: int(atof(t, r["t_s"])), sent: int(atof(t, r["sent"])), ok: int(atof(t, r["ok"])),
			errors: int(atof(t, r["errors"])), p50: math.NaN()}
		if r["p50_ms"] != "" {
			row.p50 = atof(t, r["p50_ms"])
		}
		s := out[r["series"]]
		if row.sec != len(s) {
			t.Fatalf("timeseries %s: series %s second %d after %d rows", w, r["series"], row.sec, len(s))
		}
		out[r["series"]] = append(s, row)
	}
	return out
}

// rowsFrom returns the rows of seconds [from, to) (to < 0: to the end), failing if there are none.
func rowsFrom(t *testing.T, rows []tsRow, from, to int) []tsRow {
	t.Helper()
	if to < 0 || to > len(rows) {
		to = len(rows)
	}
	if from >= to {
		t.Fatalf("timeseries has %d seconds; want seconds [%d, %d)", len(rows), from, to)
	}
	return rows[from:to]
}

// event is one row of events.csv.
type event struct {
	t                              float64
	action, target, detail, status string
}

func events(t *testing.T, res *Result, id string) []event {
	t.Helper()
	var out []event
	for _, r := range readCSV(t, filepath.Join(res.Dir, "runs", id, "events.csv")) {
		out = append(out, event{atof(t, r["t_s"]), r["action"], r["target"], r["detail"], r["status"]})
	}
	return out
}

// eventsOK checks that events.csv has exactly the wanted actions with status ok and returns
// them by action (the test scenarios use each action at most once).
func eventsOK(t *testing.T, res *Result, id string, want ...string) map[string]event {
	t.Helper()
	evs := events(t, res, id)
	by := map[string]event{}
	for _, e := range evs {
		if e.status != "ok" {
			t.Errorf("event %s %s at %.3fs: status %q", e.action, e.target, e.t, e.status)
		}
		by[e.action] = e
	}
	if len(evs) != len(want) {
		t.Errorf("events.csv has %d events %+v, want %v", len(evs), evs, want)
	}
	for _, a := range want {
		if _, ok := by[a]; !ok {
			t.Errorf("events.csv lacks %s: %+v", a, evs)
		}
	}
	return by
}

// checkScheduled checks that an `at` event fired close to its time.
func checkScheduled(t *testing.T, e event, at float64) {
	t.Helper()
	if e.t < at || e.t > at+0.3 {
		t.Errorf("event %s fired at %.3fs, scheduled at %.1fs", e.action, e.t, at)
	}
}

// summaryFile mirrors summary.json.
type summaryFile struct {
	Schema   int    `json:"schema"`
	Scenario string `json:"scenario"`
	Runs     []struct {
		ID      string                        `json:"id"`
		Params  map[string]string             `json:"params"`
		Repeat  int                           `json:"repeat"`
		Status  string                        `json:"status"`
		Metrics map[string]map[string]float64 `json:"metrics"`
	} `json:"runs"`
	Groups []struct {
		Params  map[string]string                        `json:"params"`
		Runs    []string                                 `json:"runs"`
		Metrics map[string]map[string]*aggregateFromFile `json:"metrics"`
	} `json:"groups"`
}

type aggregateFromFile struct {
	N    int        `json:"n"`
	Mean float64    `json:"mean"`
	CI95 [2]float64 `json:"ci95"`
}

func readSummary(t *testing.T, res *Result) summaryFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summaryFile
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	return s
}

// checkSingleRunSummary checks summary.json of a one-run experiment that measured the series.
func checkSingleRunSummary(t *testing.T, res *Result, scenario string, metrics ...string) {
	t.Helper()
	s := readSummary(t, res)
	if s.Schema != 1 || s.Scenario != scenario || len(s.Runs) != 1 || len(s.Groups) != 1 {
		t.Fatalf("summary.json: schema %d scenario %q, %d runs, %d groups; want 1, %q, 1, 1",
			s.Schema, s.Scenario, len(s.Runs), len(s.Groups), scenario)
	}
	if s.Runs[0].Status != "ok" || len(s.Groups[0].Runs) != 1 {
		t.Errorf("summary.json run %+v, group runs %v", s.Runs[0].Status, s.Groups[0].Runs)
	}
	for _, m := range metrics {
		if _, ok := s.Runs[0].Metrics[m]; !ok {
			t.Errorf("summary.json run lacks metric %s (has %v)", m, keys(s.Runs[0].Metrics))
		}
		if _, ok := s.Groups[0].Metrics[m]; !ok {
			t.Errorf("summary.json group lacks metric %s", m)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestExecuteNetworkEvents: partition + heal, a link delay change and a run-time `set` of an
// http-echo's delay, all from the timeline.
func TestExecuteNetworkEvents(t *testing.T) {
	res := executeE2E(t, "network.yaml", Options{})
	ev := eventsOK(t, res, "001", "partition", "heal", "link", "set")
	checkScheduled(t, ev["partition"], 1.5)
	checkScheduled(t, ev["link"], 2.5)
	checkScheduled(t, ev["heal"], 4)
	checkScheduled(t, ev["set"], 6)
	if ev["partition"].target != "s1" || ev["link"].target != "client-s2" || ev["set"].target != "e1" {
		t.Errorf("event targets: %+v", ev)
	}
	ts := timeseries(t, res, "001", "load")
	p, d := ts["p"], ts["d"]
	if len(p) != 8 || len(d) != 8 {
		t.Fatalf("timeseries: %d and %d seconds, want 8", len(p), len(d))
	}
	t.Logf("series p: %+v", p)
	t.Logf("series d: %+v", d)

	// Partition of s1 during [1.5 s, 4 s): no errors before; second 2 (+ timeout 0.5 s) lies
	// inside it, so nothing succeeds; from a second after the heal on, no errors again.
	for _, r := range rowsFrom(t, p, 0, 1) {
		if r.errors != 0 || r.ok == 0 {
			t.Errorf("p second %d (before the partition): %+v, want successes only", r.sec, r)
		}
	}
	if r := p[2]; r.ok != 0 || r.errors == 0 {
		t.Errorf("p second 2 (partitioned): %+v, want errors only", r)
	}
	for _, r := range rowsFrom(t, p, 5, -1) {
		if r.errors != 0 || r.ok == 0 {
			t.Errorf("p second %d (healed at 4 s): %+v, want successes only", r.sec, r)
		}
	}
	// set delay 40ms at 6 s: ~10 ms round trips before, ~50 ms after.
	if r := p[5]; !(r.p50 < 25) {
		t.Errorf("p second 5 (before set): p50 %.1f ms, want ~10 ms", r.p50)
	}
	if r := p[7]; !(r.p50 >= 48 && r.p50 < 70) {
		t.Errorf("p second 7 (after set delay 40ms): p50 %.1f ms, want ~50 ms", r.p50)
	}

	// The client-s2 link goes from 5 ms to 30 ms at 2.5 s: RTT 10 ms -> 60 ms. The partition of
	// s1 does not touch s2.
	for _, r := range d {
		if r.errors != 0 || r.ok == 0 {
			t.Errorf("d second %d: %+v, want successes only (only the link delay changes)", r.sec, r)
		}
	}
	for _, r := range rowsFrom(t, d, 0, 2) {
		if !(r.p50 >= 9.5 && r.p50 < 25) {
			t.Errorf("d second %d (5 ms link): p50 %.1f ms, want ~10 ms", r.sec, r.p50)
		}
	}
	for _, r := range rowsFrom(t, d, 3, -1) {
		if !(r.p50 >= 59.5 && r.p50 < 80) {
			t.Errorf("d second %d (30 ms link): p50 %.1f ms, want ~60 ms", r.sec, r.p50)
		}
	}
	checkSingleRunSummary(t, res, "e2e-network", "load/p/latency_ms", "load/d/latency_ms", "load/p/errors")
}

// TestExecuteProcessEvents: kill of a node, pause/resume of a node, restart of a component.
func TestExecuteProcessEvents(t *testing.T) {
	res := executeE2E(t, "process.yaml", Options{})
	ev := eventsOK(t, res, "001", "pause", "kill", "restart", "resume")
	checkScheduled(t, ev["pause"], 2)
	checkScheduled(t, ev["kill"], 2.5)
	checkScheduled(t, ev["restart"], 3)
	checkScheduled(t, ev["resume"], 5.8)
	ts := timeseries(t, res, "001", "load")
	k, p, r := ts["k"], ts["p"], ts["r"]
	if len(k) != 8 || len(p) != 8 || len(r) != 8 {
		t.Fatalf("timeseries: %d, %d, %d seconds, want 8", len(k), len(p), len(r))
	}
	t.Logf("k: %+v", k)
	t.Logf("p: %+v", p)
	t.Logf("r: %+v", r)
	// Before the first event (pause at 2 s; second 1 of p reaches into it): all well.
	for name, rows := range ts {
		end := 2
		if name == "p" {
			end = 1
		}
		for _, row := range rowsFrom(t, rows, 0, end) {
			if row.errors != 0 || row.ok == 0 {
				t.Errorf("%s second %d (before its event): %+v, want successes only", name, row.sec, row)
			}
		}
	}
	// Node k killed at 2.5 s: its echo is gone for good.
	for _, row := range rowsFrom(t, k, 3, -1) {
		if row.ok != 0 || row.errors == 0 {
			t.Errorf("k second %d (killed at 2.5 s): %+v, want errors only", row.sec, row)
		}
	}
	// Node p paused in [2 s, 5.8 s): requests of seconds 3 and 4 time out (0.5 s) before the
	// resume; from second 6 on everything succeeds again.
	for _, row := range rowsFrom(t, p, 3, 5) {
		if row.ok != 0 || row.errors == 0 {
			t.Errorf("p second %d (paused): %+v, want no successes", row.sec, row)
		}
	}
	for _, row := range rowsFrom(t, p, 6, -1) {
		if row.errors != 0 || row.ok == 0 {
			t.Errorf("p second %d (resumed at 5.8 s): %+v, want successes only", row.sec, row)
		}
	}
	// er restarted at 3 s: serving again right after.
	for _, row := range rowsFrom(t, r, 4, -1) {
		if row.errors != 0 || row.ok == 0 {
			t.Errorf("r second %d (restarted at 3 s): %+v, want successes only", row.sec, row)
		}
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "runs", "001", "logs", "r.er.stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "echo server listening"); n != 2 {
		t.Errorf("er started %d times, want 2 (a restart):\n%s", n, b)
	}
	checkSingleRunSummary(t, res, "e2e-process", "load/k/errors", "load/p/errors", "load/r/errors")
}

// TestExecuteCPUAndAfterRequests: a cpu quota change bounds the node's measured CPU use, and an
// after_requests event fires once the workload has sent that many requests.
func TestExecuteCPUAndAfterRequests(t *testing.T) {
	res := executeE2E(t, "cpu.yaml", Options{})
	ev := eventsOK(t, res, "001", "cpu", "link")
	checkScheduled(t, ev["cpu"], 3)
	if ev["cpu"].target != "c" {
		t.Errorf("cpu event target %q", ev["cpu"].target)
	}

	// The CPU-bound echo wants 0.6 cores; after the quota of 0.2 cores it gets at most that.
	// CFS enforces the quota per 100 ms period, so only samples over a whole interval (0.5 s)
	// are compared with it: the sampler's last row, taken when the run stops, may cover a few
	// milliseconds in which the echo legitimately ran at a full core.
	var before, after []float64
	prev := math.NaN()
	for _, r := range readCSV(t, filepath.Join(res.Dir, "runs", "001", "samples.csv")) {
		if r["node"] != "c" || r["component"] != "" {
			continue
		}
		ts, util := atof(t, r["t_s"]), atof(t, r["cpu_util"])
		dt := ts - prev
		prev = ts
		if !(dt >= 0.4) {
			if ts > 0 {
				t.Logf("sample at %.3fs covers %.3fs only: cpu_util %.3f not checked", ts, dt, util)
			}
			continue
		}
		switch {
		case ts >= 1.5 && ts <= ev["cpu"].t:
			before = append(before, util)
		case ts >= ev["cpu"].t+0.7: // the whole 0.5 s sample interval after the change
			after = append(after, util)
		}
	}
	t.Logf("node c cpu_util before the quota: %v, after: %v", before, after)
	if len(before) == 0 || len(after) < 3 {
		t.Fatalf("samples: %d before and %d after the cpu event", len(before), len(after))
	}
	if m := maxOf(before); m < 0.35 {
		t.Errorf("node c used at most %.2f cores before the quota, want >= 0.35 (is the echo CPU-bound?)", m)
	}
	for _, u := range after {
		if u > 0.2*1.25+0.02 {
			t.Errorf("node c used %.3f cores under a 0.2 core quota (all after: %v)", u, after)
			break
		}
	}

	// after_requests: 60 at 50 requests/s: the runner sees the count through the workload's
	// once-a-second progress lines and extrapolates between them at the send rate, so the event
	// fires when about 60 have been sent (t = 1.2 s), not at the next line (t = 2 s).
	link := ev["link"]
	if link.target != "client-c" {
		t.Errorf("after_requests event target %q", link.target)
	}
	rows := timeseries(t, res, "001", "load")["b"]
	cum := func(secs int) int {
		n := 0
		for _, r := range rows[:min(secs, len(rows))] {
			n += r.sent
		}
		return n
	}
	// The workload's clock starts a little after the runner's, so by the event's time at most the
	// requests intended in [0, t) can have been sent: that bound must reach 60 (not too early).
	whole := int(math.Floor(link.t))
	if whole >= len(rows) {
		t.Fatalf("after_requests event at %.3fs, after the workload's %d seconds", link.t, len(rows))
	}
	intended := float64(cum(whole)) + (link.t-float64(whole))*float64(rows[whole].sent)
	if intended < 60 {
		t.Errorf("after_requests 60 fired at %.3fs, when at most %.0f requests had been sent (rows %+v)", link.t, intended, rows)
	}
	// Progress lines come every second: had 60 been sent a whole second earlier, it is late.
	if whole >= 1 && cum(whole-1) >= 60 {
		t.Errorf("after_requests 60 fired late, at %.3fs: %d requests were sent a second earlier", link.t, cum(whole-1))
	}
	// Extrapolated between lines: well before the second line (2 s), with room for a slow start.
	if link.t > 1.7 {
		t.Errorf("after_requests 60 at 50 requests/s fired at %.3fs, want about 1.2 s", link.t)
	}
	checkSingleRunSummary(t, res, "e2e-cpu", "load/b/latency_ms", "resources/busy", "resources")
	// The echo burns 12 ms of CPU per request at 50 requests/s: it used CPU, and the workload's
	// own is not counted as a component's.
	run := readSummary(t, res).Runs[0].Metrics
	if busy := run["resources/busy"]; busy["cpu_pct"] <= 0 || busy["cpu_seconds"] <= 0 || busy["rss_mib_max"] <= 0 {
		t.Errorf("resources/busy %v: want CPU and memory used", busy)
	}
	if _, ok := run["resources/load"]; ok {
		t.Error("resources/load: a workload counted as a component")
	}
	if total := run["resources"]; total["instances"] != 1 || total["cpu_pct"] != run["resources/busy"]["cpu_pct"] {
		t.Errorf("resources %v: want the one component's", total)
	}
	// 50 requests/s cross the fabric between the nodes: at least a request and a response each.
	if f := run["fabric"]; f["packets_per_s"] < 50 || f["mbit_s"] <= 0 {
		t.Errorf("fabric %v: want at least 50 packets/s", f)
	}
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestExecuteSweepRepeats: 2 swept values x 2 repeats = 4 runs with their params and seeds in
// run.json, and summary.json groups of n = 2 with confidence intervals.
func TestExecuteSweepRepeats(t *testing.T) {
	res := executeE2E(t, "sweep.yaml", Options{})
	if res.Runs != 4 {
		t.Fatalf("Execute ran %d runs, want 4", res.Runs)
	}
	const path = "workloads.load.config.rate"
	wantRate := map[string]string{"001": "10", "002": "10", "003": "20", "004": "20"}
	for i, id := range []string{"001", "002", "003", "004"} {
		b, err := os.ReadFile(filepath.Join(res.Dir, "runs", id, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			ID     string            `json:"id"`
			Params map[string]string `json:"params"`
			Repeat int               `json:"repeat"`
			Status string            `json:"status"`
			Seed   int64             `json:"seed"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		if rec.ID != id || rec.Status != "ok" || rec.Params[path] != wantRate[id] || len(rec.Params) != 1 ||
			rec.Repeat != i%2+1 || rec.Seed != int64(100+i) {
			t.Errorf("run %s: run.json %+v; want params {%s: %s}, repeat %d, seed %d, status ok",
				id, rec, path, wantRate[id], i%2+1, 100+i)
		}
		if _, err := os.Stat(filepath.Join(res.Dir, "runs", id, "workloads", "load", "stats.json")); err != nil {
			t.Errorf("run %s: %v", id, err)
		}
	}
	s := readSummary(t, res)
	defer func() {
		if t.Failed() {
			for _, r := range s.Runs {
				t.Logf("run %s %v: %s %v", r.ID, r.Params, r.Status, r.Metrics)
			}
			for _, id := range []string{"001", "002", "003", "004"} {
				b, _ := os.ReadFile(filepath.Join(res.Dir, "runs", id, "workloads", "load", "timeseries.csv"))
				e, _ := os.ReadFile(filepath.Join(res.Dir, "runs", id, "logs", "client.load.stderr.log"))
				t.Logf("run %s timeseries:\n%s\nload stderr:\n%s", id, b, e)
			}
		}
	}()
	if len(s.Runs) != 4 || len(s.Groups) != 2 {
		t.Fatalf("summary.json: %d runs, %d groups; want 4 and 2", len(s.Runs), len(s.Groups))
	}
	for _, g := range s.Groups {
		rate := g.Params[path]
		if len(g.Runs) != 2 || (rate != "10" && rate != "20") {
			t.Errorf("group %v: runs %v", g.Params, g.Runs)
			continue
		}
		agg := g.Metrics["load/e/throughput_rps"]["value"]
		if agg == nil {
			t.Errorf("group %v: no load/e/throughput_rps (has %v)", g.Params, keys(g.Metrics))
			continue
		}
		want := atof(t, rate)
		if agg.N != 2 || math.Abs(agg.Mean-want) > 0.2*want {
			t.Errorf("group rate %s: throughput %+v, want n 2 and mean ~%v", rate, agg, want)
		}
		if !(agg.CI95[0] <= agg.Mean && agg.Mean <= agg.CI95[1]) {
			t.Errorf("group rate %s: ci95 %v does not contain the mean %v", rate, agg.CI95, agg.Mean)
		}
		lat := g.Metrics["load/e/latency_ms"]["p50"]
		if lat == nil || lat.N != 2 || !(lat.CI95[0] <= lat.Mean && lat.Mean <= lat.CI95[1]) {
			t.Errorf("group rate %s: latency p50 aggregate %+v, want n 2 and an interval around the mean", rate, lat)
		}
	}
}
