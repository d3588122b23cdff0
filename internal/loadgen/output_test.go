package loadgen

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/continuum-project/continuum/internal/results"
)

func readCSV(t *testing.T, dir, name string, header []string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], header) {
		t.Fatalf("%s header %v, want %v", name, recs[0], header)
	}
	return recs[1:]
}

func readJSON(t *testing.T, dir, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestOutputsParseBack(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 200
	cfg.Duration = 2 * time.Second
	cfg.OutDir = t.TempDir()
	var n int64
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	jitter := TargetFunc(func(ctx context.Context) error {
		<-mu
		n++
		d := time.Duration(n%7) * 100 * time.Microsecond
		mu <- struct{}{}
		time.Sleep(d) // a spread of latencies for the percentile distribution
		return nil
	})
	if _, err := Run(context.Background(), cfg, []Series{{"edge", jitter}, {"cloud", TargetFunc(ok)}}); err != nil {
		t.Fatal(err)
	}

	// stats.json: the documented fields, with values that add up.
	var raw map[string]map[string]map[string]any
	b, _ := os.ReadFile(filepath.Join(cfg.OutDir, results.StatsFile))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"series":`+string(top["series"])+`}`), &raw); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"edge", "cloud"} {
		s := raw["series"][name]
		for _, k := range []string{"latency_ms", "sent", "ok", "errors", "throughput_rps", "errors_by_type"} {
			if _, ok := s[k]; !ok {
				t.Errorf("stats.json series %s: no %q", name, k)
			}
		}
		lat := s["latency_ms"].(map[string]any)
		for _, k := range []string{"count", "mean", "p50", "p90", "p99", "p999", "max"} {
			if _, ok := lat[k]; !ok {
				t.Errorf("stats.json series %s latency_ms: no %q", name, k)
			}
		}
		if s["sent"].(float64) != 400 || lat["count"].(float64) != 400 {
			t.Errorf("series %s: sent %v count %v, want 400", name, s["sent"], lat["count"])
		}
	}

	ts := readCSV(t, cfg.OutDir, results.TimeseriesFile, results.TimeseriesHeader)
	if len(ts) != 4 { // 2 seconds x 2 series
		t.Fatalf("timeseries rows %v", ts)
	}
	for _, r := range ts {
		if r[2] != "200" || r[3] != "200" || r[6] == "" || r[8] == "" {
			t.Errorf("timeseries row %v", r)
		}
	}

	pc := readCSV(t, cfg.OutDir, results.PercentilesFile, results.PercentilesHeader)
	var edge [][]string
	for _, r := range pc {
		if r[0] == "edge" {
			edge = append(edge, r)
		}
	}
	if len(edge) < 20 || edge[0][1] != "0" || edge[len(edge)-1][1] != "100" || edge[len(edge)-1][3] != "400" {
		t.Errorf("edge percentiles: %d rows, first %v last %v", len(edge), edge[0], edge[len(edge)-1])
	}
	prev := -1.0
	for _, r := range edge {
		v, _ := strconv.ParseFloat(r[2], 64)
		if v < prev {
			t.Errorf("percentiles not monotonic at %v", r)
		}
		prev = v
	}

	f, err := os.Open(filepath.Join(cfg.OutDir, results.LatencyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := hdr.NewHistogramLogReader(f)
	counts := map[string]int64{}
	lines := 0
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		lines++
		counts[h.Tag()] += h.TotalCount()
	}
	if lines != 4 || counts["edge"] != 400 || counts["cloud"] != 400 {
		t.Errorf("hlog: %d intervals, counts %v", lines, counts)
	}
	if rows := readCSV(t, cfg.OutDir, results.ErrorsFile, results.ErrorsHeader); len(rows) != 0 {
		t.Errorf("errors.csv rows %v", rows)
	}
}

// BenchmarkRecord measures the per-request recording cost (the hot path every request takes).
func BenchmarkRecord(b *testing.B) {
	cfg := testConfig()
	cfg.Duration = time.Hour
	r := newRecorder("bench", time.Now(), cfg)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			intended := time.Duration(i%100) * time.Millisecond
			r.dispatch(intended, intended)
			r.record(intended, time.Duration(100+i%5000)*time.Microsecond, "", "")
			i++
		}
	})
}
