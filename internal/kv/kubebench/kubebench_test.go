package kubebench

import (
	"bufio"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLatencyOf(t *testing.T) {
	var samples []float64
	for i := 100; i >= 1; i-- {
		samples = append(samples, float64(i))
	}
	l := latencyOf(samples, 2, errors.New("boom\nsecond line"))
	if l.N != 100 || l.Errors != 2 || l.P50 != 50 || l.P99 != 99 || l.Max != 100 {
		t.Fatalf("latencyOf = %+v, want n 100, errors 2, p50 50, p99 99, max 100", l)
	}
	if l.Error != "boom second line" {
		t.Fatalf("error %q: want it on one line", l.Error)
	}
	if z := latencyOf(nil, 0, nil); z.N != 0 || z.P50 != 0 || z.Error != "" {
		t.Fatalf("latencyOf(nil) = %+v, want zeros", z)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig(false).Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := DefaultConfig(true).Validate(); err != nil {
		t.Fatalf("quick config: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Stores = []string{"redis"} }, `store "redis": want kv or etcd`},
		{func(c *Config) { c.Stores = []string{"kv", "kv"} }, "named twice"},
		{func(c *Config) { c.Repeats = 0 }, "repeats 0"},
		{func(c *Config) { c.PageSize = 0 }, "page size 0"},
		{func(c *Config) { c.RaceMembers = 4 }, "race members 4: want 2 or 3"},
		{func(c *Config) { c.RestartDowns = []time.Duration{-time.Second} }, "want durations >= 0"},
	} {
		c := DefaultConfig(false)
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}

// sample is a result of two repeats with known figures: kv's p50s are twice etcd's in repeat 1
// and equal in repeat 2.
func sample() *Result {
	op := func(p50, p99 float64) map[string]OpLatency {
		return map[string]OpLatency{OpCreate: {N: 10, P50: p50, P99: p99}, OpGet: {N: 10, P50: p50 / 2, P99: p99 / 2}}
	}
	cfg := DefaultConfig(false)
	cfg.Repeats = 2
	cfg.RestartDowns = []time.Duration{0, 10 * time.Second}
	return &Result{Config: cfg,
		Runs: []StoreRun{
			{Store: StoreKV, Repeat: 1, Ops: op(4, 40), StoreDisk: 10 << 20, StoreRSS: 100 << 20, APIServerRSS: 300 << 20, StoreVersion: "3.6.0",
				Restarts: []Restart{{StoreReadyS: 1, ReadyzS: 1.5, CreateS: 1.2}, {DownS: 10, StoreReadyS: 1, ReadyzS: 7, CreateS: 6, ReadyzFailed: true,
					Checks: []string{"HTTP N: [-]etcd failed"}, Log: []string{"3× W [logging.go:N] grpc: connect failed"}}}},
			{Store: StoreEtcd, Repeat: 1, Ops: op(2, 20), StoreDisk: 120 << 20, StoreRSS: 50 << 20, APIServerRSS: 280 << 20,
				Restarts: []Restart{{StoreReadyS: 1, ReadyzS: 1.4, CreateS: 1.1}, {DownS: 10, Error: "/readyz not 200"}}},
			{Store: StoreKV, Repeat: 2, Ops: op(3, 30), StoreDisk: 12 << 20},
			{Store: StoreEtcd, Repeat: 2, Ops: op(3, 30), StoreDisk: 124 << 20, Error: "kube-apiserver: exited"},
		},
		Races: []RaceRun{
			{Setting: RaceKVTwoMembers, Repeat: 1, Successes: 200, Conflicts: 50, Final: 180, Lost: 20, Agreed: true},
			{Setting: RaceKVTwoMembers, Repeat: 2, Successes: 200, Conflicts: 70, Final: 195, Lost: 5, Agreed: true},
			{Setting: RaceKVOneMember, Repeat: 1, Successes: 200, Conflicts: 90, Final: 200, Agreed: true},
			{Setting: RaceEtcd, Repeat: 1, Successes: 200, Conflicts: 80, Final: 200, Agreed: true},
			{Setting: RaceEtcd, Repeat: 2, Error: "kube-apiserver 2: exited"},
		}}
}

func TestSummaries(t *testing.T) {
	r := sample()
	if s := r.OpSpread(StoreKV, OpCreate, 0.5); s.N != 2 || s.Median != 3.5 || s.Min != 3 || s.Max != 4 {
		t.Errorf("kv create p50 spread = %+v, want median 3.5 of 3 and 4", s)
	}
	if s := r.OpSpread(StoreEtcd, OpCreate, 0.99); s.Median != 25 {
		t.Errorf("etcd create p99 median = %v, want 25", s.Median)
	}
	// Ratios pair the repeats: 4/2 and 3/3.
	if s := r.Ratio(OpFigure(OpCreate, 0.5)); s.N != 2 || s.Median != 1.5 || s.Max != 2 || s.Min != 1 {
		t.Errorf("create p50 ratio = %+v, want 2 and 1 (median 1.5)", s)
	}
	if s := r.Ratio(OpFigure(OpList, 0.5)); s.N != 0 {
		t.Errorf("list ratio = %+v, want none (not measured)", s)
	}
	// Figures: zero is "not measured"; a restart with an error has no figures.
	if s := r.FigureSpread(StoreKV, "store_rss"); s.N != 1 {
		t.Errorf("kv store_rss = %+v, want one value (repeat 2 has none)", s)
	}
	if v, ok := r.Runs[0].Figure("restart_readyz@1"); !ok || v != 7 {
		t.Errorf("kv restart_readyz@1 = %v, %v; want 7", v, ok)
	}
	if v, ok := r.Runs[0].Figure("restart_readyz"); !ok || v != 1.5 {
		t.Errorf("kv restart_readyz = %v, %v; want the first restart's 1.5", v, ok)
	}
	if _, ok := r.Runs[1].Figure("restart_readyz@1"); ok {
		t.Error("etcd restart_readyz@1: a failed restart has no figure")
	}
	if _, ok := r.Runs[0].Figure("restart_readyz@7"); ok {
		t.Error("restart_readyz@7: no such restart")
	}
	tot, lost := r.RaceTotals(RaceKVTwoMembers)
	if tot.Repeat != 2 || tot.Successes != 400 || tot.Lost != 25 || tot.Conflicts != 120 || len(lost) != 2 || lost[0] != 20 {
		t.Errorf("two-member totals = %+v %v, want 2 repeats, 400 acknowledged, 25 lost (20, 5), 120 conflicts", tot, lost)
	}
	if tot, _ := r.RaceTotals(RaceEtcd); tot.Repeat != 1 {
		t.Errorf("etcd totals count %d repeats, want 1 (the failed one left out)", tot.Repeat)
	}
}

func TestMarkdown(t *testing.T) {
	md := Markdown(sample())
	for _, want := range []string{
		"# kube-apiserver on continuum kv and on etcd",
		"continuum kv (3.6.0)",
		"- Request latency, p50 kv/etcd: create 1.50, get 1.50",
		"- Lost updates, kv, apiservers on different members: 25 of 400 acknowledged updates over 2 repeats (per repeat: 20, 5)",
		"| create | 3.5 (3.0–4.0) | 2.5 (2.0–3.0) | 1.50 (1.00–2.00) |",
		"| list | – | – | – |",
		"| store data directory (MiB) | 11 (10–12) | 122 (120–124) |",
		"| 10s | kv | 1.0 | 7.0 | 6.0 | 1 of 1 runs |",
		"| 10s | etcd | – | – | – | 0 of 1 runs |",
		"| kv, apiservers on different members | 2 | 400 | 120 | 0 | 375 | 25 | 20, 5 |",
		"- /readyz: HTTP N: [-]etcd failed",
		"- log: `3× W [logging.go:N] grpc: connect failed`",
		"**The safe setting is one writer member**",
		"## Errors",
		"- etcd, repeat 1, restart after 10s down: /readyz not 200",
		"- etcd, both apiservers, repeat 2: kube-apiserver 2: exited",
		"raw results (JSON)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "reconnection backoff") {
		t.Error("Markdown states a restart trend without etcd's figures")
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestRestartTrend(t *testing.T) {
	r := sample()
	r.Runs[1].Restarts[1] = Restart{DownS: 10, StoreReadyS: 1, ReadyzS: 6.5, CreateS: 6}
	if got := restartTrend(r); !strings.Contains(got, "/readyz 1.5 s after a restart at once, 7.0 s after 10s down on kv; 1.4 and 6.5 s on etcd") {
		t.Errorf("restartTrend = %q, want the growth on both stores", got)
	}
	r.Runs[1].Restarts[1].ReadyzS = 20 // etcd much slower: not "alike"
	if got := restartTrend(r); got != "" {
		t.Errorf("restartTrend = %q, want nothing when the stores differ", got)
	}
}

func TestSummarizeLog(t *testing.T) {
	log := strings.Join([]string{
		"I1126 22:53:07.000001   12 server.go:1] started",
		"W1126 22:53:07.000002   12 logging.go:55] grpc: connect to 127.0.0.1:2379 failed",
		"E1126 22:53:08.000003   12 status.go:71] apiserver received an error",
		"W1126 22:53:09.000004   12 logging.go:55] grpc: connect to 127.0.0.1:2380 failed",
		"not a klog line",
	}, "\n")
	got := summarizeLog(bufio.NewScanner(strings.NewReader(log)), 5)
	want := []string{
		"2× W [logging.go:N] grpc: connect to N.N.N.N:N failed",
		"1× E [status.go:N] apiserver received an error",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("summarizeLog =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := summarizeLog(bufio.NewScanner(strings.NewReader(log)), 1); len(got) != 1 {
		t.Fatalf("summarizeLog with n 1 kept %d lines", len(got))
	}
}
