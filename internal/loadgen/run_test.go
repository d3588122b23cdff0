package loadgen

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/testenv"
)

func testConfig() Config {
	c := DefaultConfig()
	c.Duration = time.Second
	c.Timeout = time.Second
	return c
}

func ok(context.Context) error { return nil }

func TestOpenLoopCountsAndWarmup(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 100
	cfg.Warmup = 500 * time.Millisecond
	cfg.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg, []Series{{"a", TargetFunc(ok)}, {"b", TargetFunc(ok)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		s := res.Stats.Series[name]
		// Intended times 0, 10 ms, ... 990 ms: exactly 50 after the 500 ms warm-up.
		if s.Sent != 50 || s.OK != 50 || s.Errors != 0 || s.Latency.Count != 50 {
			t.Errorf("series %s: sent=%d ok=%d errors=%d count=%d, want 50/50/0/50", name, s.Sent, s.OK, s.Errors, s.Latency.Count)
		}
		if s.ThroughputRPS < 90 || s.ThroughputRPS > 110 {
			t.Errorf("series %s: throughput %v, want ~100", name, s.ThroughputRPS)
		}
	}
	if res.Stats.Status != StatusOK {
		t.Errorf("status %q", res.Stats.Status)
	}
	// The time series keeps the warm-up: all 100 requests per series.
	rows := readCSV(t, cfg.OutDir, results.TimeseriesFile, results.TimeseriesHeader)
	sent := map[string]int{}
	for _, r := range rows {
		sent[r[1]] += atoiT(t, r[2])
	}
	if sent["a"] != 100 || sent["b"] != 100 {
		t.Errorf("timeseries sent = %v, want 100 per series", sent)
	}
}

// A server that stalls once for 300 ms with one request allowed in flight delays every request
// scheduled behind it; those delays must show up in the latencies (no coordinated omission).
func TestOpenLoopNoCoordinatedOmission(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 100
	cfg.MaxInflight = 1
	var first atomic.Bool
	stall := TargetFunc(func(ctx context.Context) error {
		if first.CompareAndSwap(false, true) {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	res, err := Run(context.Background(), cfg, []Series{{"s", stall}})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["s"]
	if s.Sent != 100 || s.OK != 100 {
		t.Fatalf("sent=%d ok=%d, want 100/100", s.Sent, s.OK)
	}
	// Requests intended at 0, 10, ..., 290 ms all complete at ~300 ms: latencies 300, 290, ...,
	// so the top 10% are >= ~200 ms. Measuring from the actual send would give one slow request.
	if s.Latency.Max < 300 || s.Latency.P90 < 150 {
		t.Errorf("max=%v p90=%v ms: queueing behind the stall is not charged", s.Latency.Max, s.Latency.P90)
	}
}

func TestOpenLoopSlotTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 50
	cfg.MaxInflight = 1
	cfg.Timeout = 200 * time.Millisecond
	block := TargetFunc(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	res, err := Run(context.Background(), cfg, []Series{{"s", block}})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["s"]
	if s.Sent != 50 || s.Errors != 50 || s.ErrorsByType[ErrTimeout] != 50 {
		t.Errorf("sent=%d errors=%v, want 50 timeouts", s.Sent, s.ErrorsByType)
	}
}

func TestClosedLoop(t *testing.T) {
	cfg := testConfig()
	cfg.Rate, cfg.Clients = 0, 3
	cfg.ThinkTime = 20 * time.Millisecond
	cfg.Duration = 500 * time.Millisecond
	var calls atomic.Int64
	count := TargetFunc(func(context.Context) error { calls.Add(1); return nil })
	res, err := Run(context.Background(), cfg, []Series{{"c", count}})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["c"]
	// 3 clients, one request per >= 20 ms for 500 ms: ~75, at most 3*26 (fewer on a loaded machine).
	if s.Sent != calls.Load() || s.OK != s.Sent || s.Sent < 10 || s.Sent > 78 {
		t.Errorf("sent=%d ok=%d calls=%d, want ~75", s.Sent, s.OK, calls.Load())
	}
}

func TestErrorsByType(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 100
	cfg.Duration = 500 * time.Millisecond
	cfg.OutDir = t.TempDir()
	var n atomic.Int64
	flaky := TargetFunc(func(context.Context) error {
		if n.Add(1)%5 == 0 {
			return typedErr(ErrHTTP5xx)
		}
		return nil
	})
	res, err := Run(context.Background(), cfg, []Series{{"f", flaky}})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["f"]
	if s.Sent != 50 || s.Errors != 10 || s.ErrorsByType[ErrHTTP5xx] != 10 || s.OK != 40 {
		t.Errorf("sent=%d ok=%d errors=%v", s.Sent, s.OK, s.ErrorsByType)
	}
	rows := readCSV(t, cfg.OutDir, results.ErrorsFile, results.ErrorsHeader)
	if len(rows) != 1 || strings.Join(rows[0], ",") != "f,http_5xx,10" {
		t.Errorf("errors.csv rows %v", rows)
	}
}

// Cancelling the context stops sending, lets requests in flight end within the timeout, and
// still writes every output with status "interrupted".
func TestInterrupt(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 100
	cfg.Duration = time.Minute
	cfg.Timeout = 300 * time.Millisecond
	cfg.ProgressInterval = 100 * time.Millisecond
	cfg.OutDir = t.TempDir()
	prog := &testenv.SyncBuffer{}
	cfg.Progress = prog
	var n atomic.Int64
	slowSometimes := TargetFunc(func(ctx context.Context) error {
		if n.Add(1)%10 == 0 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var res *Result
	var err error
	go func() { res, err = Run(ctx, cfg, []Series{{"s", slowSometimes}}); close(done) }()
	testenv.Eventually(t, 30*time.Second, "50 requests", func() bool { return n.Load() >= 50 })
	cancel()
	stopped := time.Now()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if wait := time.Since(stopped); wait > cfg.Timeout+drainGrace {
		t.Errorf("Run took %v to stop", wait)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stats.Series["s"]
	if res.Stats.Status != StatusInterrupted || s.Sent < 50 || s.OK+s.Errors != s.Sent {
		t.Errorf("status=%s sent=%d ok=%d errors=%d", res.Stats.Status, s.Sent, s.OK, s.Errors)
	}
	var st results.Stats
	readJSON(t, cfg.OutDir, results.StatsFile, &st)
	if st.Status != StatusInterrupted || st.Series["s"].Sent != s.Sent {
		t.Errorf("stats.json: %+v", st)
	}
	lines := prog.Lines()
	var last ProgressLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Type != "done" || last.Status != StatusInterrupted {
		t.Errorf("last line %s", lines[len(lines)-1])
	}
}

func TestProgressLineShape(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 200
	cfg.Duration = 1200 * time.Millisecond
	cfg.ProgressInterval = 300 * time.Millisecond
	cfg.OutDir = t.TempDir()
	prog := &testenv.SyncBuffer{}
	cfg.Progress = prog
	if _, err := Run(context.Background(), cfg, []Series{{"edge", TargetFunc(ok)}, {"cloud", TargetFunc(ok)}}); err != nil {
		t.Fatal(err)
	}
	lines := prog.Lines()
	if len(lines) < 4 {
		t.Fatalf("got %d lines, want >= 4 progress + done:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	topKeys := "errors,ok,sent,series,t_s,throughput_rps,type"
	seriesKeys := "errors,ok,p50_ms,p99_ms,sent,throughput_rps"
	var prevSent float64
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		want := topKeys
		wantType := "progress"
		if i == len(lines)-1 {
			want, wantType = "errors,ok,sent,series,stats_file,status,t_s,throughput_rps,type", "done"
		}
		if got := keys(m); got != want || m["type"] != wantType {
			t.Errorf("line %d keys %s type %v, want %s type %s", i, got, m["type"], want, wantType)
		}
		series := m["series"].(map[string]any)
		if keys(series) != "cloud,edge" {
			t.Errorf("line %d series %s", i, keys(series))
		}
		for name, v := range series {
			if got := keys(v.(map[string]any)); got != seriesKeys {
				t.Errorf("line %d series %s keys %s, want %s", i, name, got, seriesKeys)
			}
		}
		if sent := m["sent"].(float64); sent < prevSent {
			t.Errorf("line %d: cumulative sent went down", i)
		} else {
			prevSent = sent
		}
	}
	var done ProgressLine
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &done)
	if done.Sent != 480 || done.Status != StatusOK || !strings.HasSuffix(done.StatsFile, "/stats.json") {
		t.Errorf("done line %+v", done)
	}
}

func keys(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func TestRunRejectsBadInput(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 0
	if _, err := Run(context.Background(), cfg, []Series{{"a", TargetFunc(ok)}}); err == nil {
		t.Error("no rate and no clients: want error")
	}
	cfg = testConfig()
	if _, err := Run(context.Background(), cfg, nil); err == nil {
		t.Error("no series: want error")
	}
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not an integer: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}
