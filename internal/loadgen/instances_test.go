package loadgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// roundRobin answers from instances a, b, c in turn; every fourth request fails without an
// instance (as a balancer with nothing to route to would).
type roundRobin struct{ n atomic.Int64 }

func (r *roundRobin) Do(ctx context.Context) error { _, err := r.DoInstance(ctx); return err }

func (r *roundRobin) DoInstance(context.Context) (string, error) {
	i := r.n.Add(1) - 1
	if i%4 == 3 {
		return "", errors.New("no instance available")
	}
	return []string{"a", "b", "c"}[i%4], nil
}

func TestInstancesCounted(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 200
	cfg.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg, []Series{{"lb", &roundRobin{}}, {"plain", TargetFunc(ok)}})
	if err != nil {
		t.Fatal(err)
	}
	// 200 requests: a/b/c 50 each and 50 without an instance (the target's own order).
	inst := res.Stats.Series["lb"].Instances
	for _, name := range []string{"a", "b", "c", results.NoInstance} {
		c := inst[name]
		if c.Requests != 50 || c.Share != 0.25 {
			t.Errorf("instance %s: %+v, want 50 requests, share 0.25", name, c)
		}
	}
	if inst[results.NoInstance].Errors != 50 || inst["a"].OK != 50 {
		t.Errorf("errors/ok: %+v", inst)
	}
	if res.Stats.Series["plain"].Instances != nil {
		t.Errorf("a plain target has instances: %+v", res.Stats.Series["plain"].Instances)
	}
	// instances.csv: every request of the run (warm-up included), per second and instance.
	rows := readCSV(t, cfg.OutDir, results.InstancesFile, results.InstancesHeader)
	total := map[string]int{}
	for _, r := range rows {
		if r[1] != "lb" {
			t.Fatalf("row of series %s: only lb has instances", r[1])
		}
		total[r[2]] += atoiT(t, r[3])
	}
	if total["a"] != 50 || total[results.NoInstance] != 50 || len(total) != 4 {
		t.Errorf("instances.csv totals %v, want 50 per instance", total)
	}
}

// stats.json counts only requests intended after the warm-up; instances.csv has them all.
func TestInstancesAfterWarmup(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 200
	cfg.Warmup = 500 * time.Millisecond
	cfg.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg, []Series{{"lb", &roundRobin{}}})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	var share float64
	for _, c := range res.Stats.Series["lb"].Instances {
		n += c.Requests
		share += c.Share
	}
	if n != 100 || share < 0.999 || share > 1.001 {
		t.Errorf("after the warm-up: %d requests, shares summing to %v; want 100 and 1", n, share)
	}
	total := 0
	for _, r := range readCSV(t, cfg.OutDir, results.InstancesFile, results.InstancesHeader) {
		total += atoiT(t, r[3])
	}
	if total != 200 {
		t.Errorf("instances.csv counts %d requests, want all 200", total)
	}
}

func TestNoInstancesFileWithoutLabels(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 20
	cfg.OutDir = t.TempDir()
	if _, err := Run(context.Background(), cfg, []Series{{"plain", TargetFunc(ok)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.OutDir, results.InstancesFile)); !os.IsNotExist(err) {
		t.Errorf("instances.csv written without instance labels (%v)", err)
	}
}

// Requests are within the QoS latency if they succeed within it; errors are misses.
func TestQoSLatency(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 100
	cfg.QoSLatency = 20 * time.Millisecond
	cfg.LatencyBounds = []time.Duration{5 * time.Millisecond, 12500 * time.Microsecond, 20 * time.Millisecond, 30 * time.Millisecond}
	cfg.OutDir = t.TempDir()
	var n atomic.Int64
	target := TargetFunc(func(ctx context.Context) error {
		switch n.Add(1) % 10 {
		case 0: // 10%: slower than the QoS latency
			select {
			case <-time.After(60 * time.Millisecond):
			case <-ctx.Done():
			}
		case 1: // 10%: errors
			return errors.New("boom")
		}
		return nil
	})
	res, err := Run(context.Background(), cfg, []Series{{"s", target}})
	if err != nil {
		t.Fatal(err)
	}
	q := res.Stats.Series["s"].QoS
	if q == nil || q.Total != 100 || q.LatencyMS != 20 {
		t.Fatalf("qos = %+v, want total 100 at 20 ms", q)
	}
	// Scheduling noise may push a fast request past 20 ms on a busy machine; never the slow ones in.
	if q.Within > 80 || q.Within < 75 || q.WithinPct != float64(q.Within) {
		t.Errorf("qos = %+v, want about 80 of 100 within", q)
	}
	// Ranges at 5, 12.5, 20 and 30 ms: the fast requests are within all, the slow in none.
	if len(q.Below) != 4 || q.Below[0].LatencyMS != 5 || q.Below[3].LatencyMS != 30 || q.Below[2].Count != q.Within ||
		q.Below[3].Count != q.Within || q.Below[0].Count > q.Within {
		t.Errorf("qos ranges = %+v, want bounds 5/12.5/20/30 ms, the 20 ms one = within (%d)", q.Below, q.Within)
	}
	var within int
	for _, r := range readCSV(t, cfg.OutDir, results.TimeseriesFile, results.TimeseriesHeader) {
		within += atoiT(t, r[9])
	}
	if int64(within) != q.Within {
		t.Errorf("timeseries within_qos sums to %d, stats say %d", within, q.Within)
	}
}

func TestQoSLatencyValidate(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 1
	cfg.QoSLatency = -time.Millisecond
	if cfg.Validate() == nil {
		t.Error("negative qos latency accepted")
	}
	cfg.QoSLatency = 2 * maxLatency
	if cfg.Validate() == nil {
		t.Error("qos latency beyond the histogram range accepted")
	}
	cfg.QoSLatency = 0
	cfg.LatencyBounds = []time.Duration{time.Millisecond}
	if cfg.Validate() == nil {
		t.Error("latency bounds without a qos latency accepted")
	}
	cfg.QoSLatency = 80 * time.Millisecond
	for _, b := range [][]time.Duration{{2 * time.Millisecond, time.Millisecond}, {0}, {time.Millisecond, time.Millisecond}} {
		cfg.LatencyBounds = b
		if cfg.Validate() == nil {
			t.Errorf("latency bounds %v accepted", b)
		}
	}
	cfg.LatencyBounds = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond}
	if err := cfg.Validate(); err != nil {
		t.Errorf("ascending bounds: %v", err)
	}
}
