package iot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/results"
)

type message struct {
	SensorID string   `json:"sensor_id"`
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Unit     string   `json:"unit"`
	Value    *float64 `json:"value"`
}

// ingress is a stand-in for the analytics function that checks every batch it gets.
type ingress struct {
	t       *testing.T
	mu      sync.Mutex
	batches int
	msgs    int
	invalid int
	sensors map[string]bool
	reply   func(n int) string
	delay   time.Duration
	out     string // the run's output directory
}

func (in *ingress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var batch []message
	if err := json.Unmarshal(body, &batch); err != nil {
		in.t.Errorf("batch is not a JSON array of messages: %v", err)
		http.Error(w, err.Error(), 400)
		return
	}
	types := map[string]SensorType{}
	for _, st := range SensorTypes {
		types[st.Name] = st
	}
	in.mu.Lock()
	in.batches++
	in.msgs += len(batch)
	for _, m := range batch {
		st, ok := types[m.Type]
		if !ok || m.SensorID == "" || m.Name == "" || m.Value == nil || m.Unit != st.Unit {
			in.t.Errorf("malformed message %+v", m)
			continue
		}
		if *m.Value < st.Min || *m.Value > st.Max {
			in.invalid++
		}
		in.sensors[m.SensorID] = true
	}
	in.mu.Unlock()
	if in.delay > 0 {
		time.Sleep(in.delay)
	}
	w.Header().Set(HandlerSecondsHeader, "0.004")
	reply := fmt.Sprintf(`{"received": %d}`, len(batch))
	if in.reply != nil {
		reply = in.reply(len(batch))
	}
	_, _ = w.Write([]byte(reply))
}

func run(t *testing.T, in *ingress, cfg Config) *Report {
	t.Helper()
	rep, err := runErr(t, in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// runErr is run for a run that may get nothing through.
func runErr(t *testing.T, in *ingress, cfg Config) (*Report, error) {
	t.Helper()
	in.t, in.sensors = t, map[string]bool{}
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	in.out = t.TempDir()
	cfg.Target, cfg.OutDir = srv.URL, in.out
	return Run(context.Background(), cfg)
}

func TestBatchesAsScheduled(t *testing.T) {
	in := &ingress{}
	// 3 gateways x 20 devices at 10 msg/s = 200 msg/s each; batches of 50: one every 250 ms
	// per gateway, due from 250 ms after the start: 7 in 2 s each.
	cfg := Config{Gateways: 3, Devices: 60, Rate: 10, Batch: 50, Duration: 2 * time.Second, Invalid: 0.1, Seed: 1}
	rep := run(t, in, cfg)
	if cfg.Interval() != 250*time.Millisecond || rep.IntervalMS != 250 {
		t.Errorf("interval %v (report %g ms), want 250 ms", cfg.Interval(), rep.IntervalMS)
	}
	if rep.BatchesDue != 21 || rep.BatchesSent != 21 || rep.BatchesOK != 21 || in.batches != 21 {
		t.Errorf("report %+v, ingress saw %d batches: want 21 due, sent, answered", rep, in.batches)
	}
	if in.msgs != 21*50 || rep.MessagesSent != 21*50 || rep.BadReplies != 0 || rep.BatchesDropped != 0 {
		t.Errorf("messages %d (report %d), bad %d, dropped %d", in.msgs, rep.MessagesSent, rep.BadReplies, rep.BatchesDropped)
	}
	// Every device sent (round robin) and about a tenth of the readings are out of range.
	if len(in.sensors) != 60 {
		t.Errorf("%d distinct sensors, want 60", len(in.sensors))
	}
	if in.invalid < 60 || in.invalid > 180 {
		t.Errorf("%d invalid of %d messages, want about 10%%", in.invalid, in.msgs)
	}
}

func TestOutputsAndExecutionTime(t *testing.T) {
	in := &ingress{}
	srv := httptest.NewServer(in)
	defer srv.Close()
	in.t, in.sensors = t, map[string]bool{}
	out := t.TempDir()
	if _, err := Run(context.Background(), Config{Target: srv.URL, Gateways: 1, Devices: 10, Rate: 100, Batch: 100,
		Duration: time.Second, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	var st results.Stats
	if err := results.ReadJSON(filepath.Join(out, results.StatsFile), &st); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := results.ReadJSON(filepath.Join(out, ReportFile), &rep); err != nil || rep.BatchesOK != 9 {
		t.Fatalf("iot.json: %+v %v", rep, err)
	}
	ex, rr := st.Series[SeriesEx], st.Series[SeriesRR]
	if ex.OK != 9 || rr.OK != 9 || ex.Latency.P50 < 3.9 || ex.Latency.P50 > 4.1 {
		t.Errorf("t_ex %+v, t_rr %+v: want 9 each (due at 100, 200, ... 900 ms), t_ex 4 ms as reported", ex, rr)
	}
}

func TestTimeoutsAndBadReplies(t *testing.T) {
	in := &ingress{delay: 300 * time.Millisecond}
	var prog bytes.Buffer
	rep, err := runErr(t, in, Config{Gateways: 1, Devices: 10, Rate: 100, Batch: 100, Duration: time.Second,
		Timeout: 100 * time.Millisecond, Progress: &prog})
	// Every batch timed out: the run says so, counting batches (not t_rr and t_ex twice).
	var nt *loadgen.NothingThroughError
	if !errors.As(err, &nt) || !strings.Contains(err.Error(), "all 9 requests failed") || !strings.Contains(err.Error(), "timeout: 9") {
		t.Errorf("Run: %v; want nothing through: all 9 requests failed (timeout: 9)", err)
	}
	lines := strings.Split(strings.TrimSpace(prog.String()), "\n")
	var done loadgen.ProgressLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil || done.Sent != 9 || done.Errors != 9 || done.Status != loadgen.StatusFailed {
		t.Errorf("done line %s: want sent 9, errors 9 (batches, not series), status failed", lines[len(lines)-1])
	}
	if rep.BatchesSent != 9 || rep.BatchesOK != 0 {
		t.Errorf("with a 300 ms ingress and a 100 ms timeout: %+v, want 9 sent, none answered in time", rep)
	}
	var st results.Stats
	if err := results.ReadJSON(filepath.Join(in.out, results.StatsFile), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Series[SeriesRR].ErrorsByType["timeout"]; got != 9 {
		t.Errorf("timeouts %d (%+v), want 9", got, st.Series[SeriesRR].ErrorsByType)
	}
	in = &ingress{reply: func(n int) string { return fmt.Sprintf(`{"received": %d}`, n-1) }}
	rep = run(t, in, Config{Gateways: 1, Devices: 10, Rate: 100, Batch: 100, Duration: time.Second})
	if rep.BadReplies != 9 {
		t.Errorf("replies that miscount the batch: %d bad, want 9", rep.BadReplies)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Target: "http://x/", Gateways: 1, Devices: 1, Rate: 1, Batch: 1, Duration: time.Second}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Target = "x:80" }, "want an http:// URL"},
		{func(c *Config) { c.Gateways = 0 }, "gateways 0"},
		{func(c *Config) { c.Devices, c.Gateways = 2, 3 }, "at least one per gateway"},
		{func(c *Config) { c.Rate = 0 }, "rate 0"},
		{func(c *Config) { c.Batch = 0 }, "batch 0"},
		{func(c *Config) { c.Invalid = 2 }, "invalid 2"},
		{func(c *Config) { c.Warmup = c.Duration }, "warmup"},
	} {
		cfg := ok
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// BenchmarkBatch: generating one batch of the seed's largest size.
func BenchmarkBatch(b *testing.B) {
	g := newGateway(0, 1000, 1, 0)
	buf := make([]byte, 0, 8<<20)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = g.batch(64000, buf[:0])
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64000, "ns/msg")
}
