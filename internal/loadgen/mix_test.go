package loadgen

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// countMix alternates a, a, a, b and runs out after limit requests (0: never).
type countMix struct {
	mu    sync.Mutex
	n     int
	limit int
}

func (m *countMix) Ops() []string { return []string{"a", "b"} }

func (m *countMix) Next() (int, Target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit > 0 && m.n >= m.limit {
		return 0, nil, false
	}
	m.n++
	if m.n%4 == 0 {
		return 1, TargetFunc(ok), true
	}
	return 0, TargetFunc(ok), true
}

func TestYCSBMixOpenLoopSplitsSeries(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 200
	cfg.OutDir = t.TempDir()
	res, err := Run(context.Background(), cfg, []Series{{"ycsb", MixTarget(&countMix{})}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.Stats.Series["a"], res.Stats.Series["b"]
	if a.Sent != 150 || b.Sent != 50 || a.OK != 150 || b.OK != 50 {
		t.Errorf("a sent/ok %d/%d, b %d/%d; want 150/150 and 50/50", a.Sent, a.OK, b.Sent, b.OK)
	}
	if _, ok := res.Stats.Series["ycsb"]; ok {
		t.Error("the schedule name must not be a series")
	}
	rows := readCSV(t, cfg.OutDir, results.TimeseriesFile, results.TimeseriesHeader)
	sent := map[string]int{}
	for _, r := range rows {
		sent[r[1]] += atoiT(t, r[2])
	}
	if sent["a"] != 150 || sent["b"] != 50 {
		t.Errorf("timeseries sent %v", sent)
	}
}

func TestYCSBMixExhaustedEndsRunEarly(t *testing.T) {
	for _, closed := range []bool{false, true} {
		cfg := testConfig()
		cfg.Duration = time.Minute
		if closed {
			cfg.Rate, cfg.Clients = 0, 4
		} else {
			cfg.Rate = 1000
		}
		start := time.Now()
		res, err := Run(context.Background(), cfg, []Series{{"ycsb", MixTarget(&countMix{limit: 100})}})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("closed=%v: run took %v, want an early end", closed, el)
		}
		got := res.Stats.Series["a"].OK + res.Stats.Series["b"].OK
		if got != 100 || res.Stats.Status != StatusOK {
			t.Errorf("closed=%v: ok %d status %q, want 100 ok", closed, got, res.Stats.Status)
		}
	}
}

func TestYCSBMixSeriesNamesChecked(t *testing.T) {
	err := ValidateSeries([]Series{{"ycsb", MixTarget(&countMix{})}, {"a", TargetFunc(ok)}})
	if err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("duplicate output name: %v", err)
	}
}
