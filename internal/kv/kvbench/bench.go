package kvbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/results"
)

// Config is `continuum bench kv`'s configuration.
type Config struct {
	// Stores to measure, in order: kv, etcd, redis.
	Stores []string `json:"stores"`
	// Repeats is how many times each store is measured from scratch (a new server, load, sweep,
	// closed loop). Repeats interleave the stores (kv, etcd, redis, kv, ...), so a noisy spell on
	// a shared machine hits them alike; verdicts are taken over every repeat, not one crossing.
	Repeats int `json:"repeats"`
	// Workload is the YCSB preset (a..f); RecordCount, FieldCount and FieldLength override it.
	Workload    string `json:"workload"`
	RecordCount int64  `json:"recordcount"`
	FieldCount  int    `json:"fieldcount"`
	FieldLength int    `json:"fieldlength"`
	// Rates is the open-loop sweep (operations/s, ascending); a store's sweep stops after the
	// first rate it does not sustain (see Sustained), but not before SweepAtLeast.
	Rates []float64 `json:"rates"`
	// SweepAtLeast is the rate every store's sweep reaches even when a lower one is not
	// sustained (default 5000: the goals compare p50 at 5k/s).
	SweepAtLeast float64 `json:"sweep_at_least"`
	// StepDuration and Warmup are each sweep step's length and its excluded start.
	StepDuration time.Duration `json:"step_duration"`
	Warmup       time.Duration `json:"warmup"`
	// P99Limit is the latency a sustained rate keeps every operation's p99 under.
	P99Limit time.Duration `json:"p99_limit"`
	// Timeout is the per-request timeout (from the intended send time).
	Timeout time.Duration `json:"timeout"`
	// ClosedClients and ClosedDuration size the closed-loop peak-throughput run.
	ClosedClients  int           `json:"closed_clients"`
	ClosedDuration time.Duration `json:"closed_duration"`
	// LoadClients insert the records in the load phase.
	LoadClients int `json:"load_clients"`
	// RedisFsync is Redis's appendfsync: everysec (default) or always.
	RedisFsync string `json:"redis_appendfsync"`
	// Settle is the pause after the load phase before memory and disk are read (lets Redis's
	// once-a-second AOF fsync and etcd's batched commits land).
	Settle time.Duration `json:"settle"`
	// FootprintRecords is the key count memory and disk per million keys are read at: after
	// the runs, records are inserted until the store holds this many. 0 (or no more than
	// RecordCount) reads them after the load phase and scales from RecordCount instead.
	FootprintRecords int64 `json:"footprint_records"`
	// Binaries: empty finds them (baselines.EtcdBinary, RedisBinary; kv: this executable).
	EtcdBin      string `json:"-"`
	RedisBin     string `json:"-"`
	ContinuumBin string `json:"-"`
	// Maintenance runs what an operator of an etcd-API store schedules, during every sweep step:
	// a third of the way into the measured part, a compaction of the history up to the current
	// revision, then a defragmentation (etcd's maintenance API, for kv and etcd; Redis has no
	// counterpart and runs the step without). The step's latencies then include them.
	Maintenance bool `json:"maintenance,omitempty"`
	// KVArgs are extra flags for `continuum kv` (e.g. --fsync=batch).
	KVArgs []string `json:"kv_args,omitempty"`
	// Command is the command line that regenerates the result, for its header.
	Command string `json:"-"`
	// Dir holds the servers' data and logs (default: a temporary directory, removed after).
	Dir string `json:"-"`
	// Log receives progress lines (nil: none).
	Log io.Writer `json:"-"`
}

// DefaultConfig is the documented benchmark: workload A with one 32-byte field, 100k records,
// a sweep from 2k/s, 10 s steps, p99 limit 10 ms, 64 closed-loop clients. quick shrinks it to a
// smoke test of a few seconds per store.
func DefaultConfig(quick bool) Config {
	c := Config{
		Stores: []string{kvtarget.KindKV, kvtarget.KindEtcd, kvtarget.KindRedis}, Repeats: 3, Workload: "a",
		RecordCount: 100_000, FieldCount: 1, FieldLength: 32,
		Rates:        []float64{2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12500, 15000, 20000, 25000, 30000, 40000, 50000, 60000, 80000, 100000},
		SweepAtLeast: 5000,
		StepDuration: 10 * time.Second, Warmup: 2 * time.Second, P99Limit: 10 * time.Millisecond,
		Timeout: 2 * time.Second, ClosedClients: 64, ClosedDuration: 15 * time.Second, LoadClients: 32,
		RedisFsync: baselines.RedisFsyncEverySec, Settle: 2 * time.Second, FootprintRecords: 1_000_000,
	}
	if quick {
		c.RecordCount, c.Rates = 2000, []float64{2000, 5000}
		c.StepDuration, c.Warmup = 2*time.Second, 500*time.Millisecond
		c.ClosedClients, c.ClosedDuration, c.Settle = 16, 2*time.Second, 200*time.Millisecond
		c.FootprintRecords = 0
		c.Repeats = 1
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	if len(c.Stores) == 0 {
		return errNoStores
	}
	for _, s := range c.Stores {
		if s != kvtarget.KindKV && s != kvtarget.KindEtcd && s != kvtarget.KindRedis {
			return fmt.Errorf("store %q: want kv, etcd or redis", s)
		}
	}
	if c.Repeats < 1 {
		return fmt.Errorf("repeats %d: want at least 1", c.Repeats)
	}
	if _, err := c.workload(); err != nil {
		return err
	}
	if len(c.Rates) == 0 || !slices.IsSorted(c.Rates) || c.Rates[0] <= 0 {
		return fmt.Errorf("rates %v: want ascending rates > 0", c.Rates)
	}
	switch {
	case c.StepDuration <= 0 || c.Warmup < 0 || c.Warmup >= c.StepDuration:
		return fmt.Errorf("step %v, warmup %v: want a step > 0 longer than its warm-up", c.StepDuration, c.Warmup)
	case c.P99Limit <= 0 || c.Timeout <= 0:
		return fmt.Errorf("p99 limit %v and timeout %v must be > 0", c.P99Limit, c.Timeout)
	case c.ClosedClients < 0 || (c.ClosedClients > 0 && c.ClosedDuration <= 0):
		return fmt.Errorf("closed loop: %d clients for %v", c.ClosedClients, c.ClosedDuration)
	case c.FootprintRecords < 0:
		return fmt.Errorf("footprint records %d: want 0 (scale from the loaded records) or a key count", c.FootprintRecords)
	case c.RedisFsync != baselines.RedisFsyncEverySec && c.RedisFsync != baselines.RedisFsyncAlways:
		return fmt.Errorf("redis appendfsync %q: want everysec or always", c.RedisFsync)
	}
	return nil
}

func (c Config) workload() (ycsb.Workload, error) {
	w, err := ycsb.Preset(c.Workload)
	if err != nil {
		return w, err
	}
	w.RecordCount, w.OperationCount = c.RecordCount, 0
	if c.FieldCount > 0 {
		w.FieldCount = c.FieldCount
	}
	if c.FieldLength > 0 {
		w.FieldLength = c.FieldLength
	}
	return w, w.Validate()
}

// OpStats is one operation type's outcome in a step.
type OpStats struct {
	OK           int64            `json:"ok"`
	Errors       int64            `json:"errors"`
	P50          float64          `json:"p50_ms"`
	P99          float64          `json:"p99_ms"`
	P999         float64          `json:"p999_ms"`
	Max          float64          `json:"max_ms"`
	ErrorsByType map[string]int64 `json:"errors_by_type,omitempty"`
}

// Step is one open-loop rate or the closed-loop run.
type Step struct {
	Rate          float64            `json:"rate,omitempty"`
	Clients       int                `json:"clients,omitempty"`
	ThroughputRPS float64            `json:"throughput_rps"`
	Ops           map[string]OpStats `json:"ops"`
	Errors        int64              `json:"errors"`
	// MaxP99 is the highest p99 over the operation types (ms).
	MaxP99 float64 `json:"max_p99_ms"`
	// Sustained: throughput >= 95% of the rate, no errors, every p99 within the limit
	// (benchkit.SustainRule).
	Sustained bool `json:"sustained"`
	// Maintenance is what the compaction and defragmentation run during the step took (nil:
	// none ran; see Config.Maintenance).
	Maintenance *Maintenance `json:"maintenance,omitempty"`
}

// Maintenance times one compaction + defragmentation, run during a step.
type Maintenance struct {
	// Revision is what the history was compacted to.
	Revision  int64   `json:"revision"`
	CompactMs float64 `json:"compact_ms"`
	DefragMs  float64 `json:"defrag_ms"`
	Error     string  `json:"error,omitempty"`
}

// StoreResult is everything measured on one store.
type StoreResult struct {
	Store string `json:"store"`
	// Repeat is which measurement of the store this is (1-based; see Config.Repeats).
	Repeat  int      `json:"repeat"`
	Version string   `json:"version,omitempty"`
	Args    []string `json:"args,omitempty"`
	Error   string   `json:"error,omitempty"`

	LoadSeconds   float64 `json:"load_s"`
	LoadInsertsPS float64 `json:"load_inserts_per_s"`
	RSSEmpty      int64   `json:"rss_empty_bytes"`
	RSSLoaded     int64   `json:"rss_loaded_bytes"`
	DiskEmpty     int64   `json:"disk_empty_bytes"`
	DiskLoaded    int64   `json:"disk_loaded_bytes"`
	// FootprintRecords, RSSFootprint and DiskFootprint: the key count the footprint phase grew
	// the store to and what it used then (0: no footprint phase; the per-million figures are
	// then scaled from the loaded records).
	FootprintRecords int64   `json:"footprint_records,omitempty"`
	RSSFootprint     int64   `json:"rss_footprint_bytes,omitempty"`
	DiskFootprint    int64   `json:"disk_footprint_bytes,omitempty"`
	RSSPerMillion    float64 `json:"rss_per_million_keys_bytes"`
	DiskPerMillion   float64 `json:"disk_per_million_keys_bytes"`

	Sweep []Step `json:"sweep"`
	// MaxSustained is the highest sweep rate sustained with every lower rate sustained too
	// (0: none).
	MaxSustained float64 `json:"max_sustained_rate"`
	Closed       *Step   `json:"closed,omitempty"`
	// Cost is what the server spent per request in the closed-loop run.
	Cost *RequestCost `json:"closed_cost,omitempty"`
	// Storage is kv's storage-engine writes over the whole store run (load, sweep, closed
	// loop); nil for the baselines.
	Storage *StorageIO `json:"storage,omitempty"`
	// RSSEnd is the RSS after every run (the key space may have grown with inserts).
	RSSEnd int64 `json:"rss_end_bytes"`
	// LoadAvg is the host's 1-minute load average when the store started and when it was
	// done: other processes on the machine compete with the server and the load generator.
	LoadAvg [2]float64 `json:"loadavg_1m"`
}

// RequestCost is the server's CPU and memory allocation per request, measured from the
// server process over the closed-loop run (the load generator's own costs are not in it).
type RequestCost struct {
	// CPUMicros is the server's CPU time (user + system) per request, in microseconds.
	CPUMicros float64 `json:"cpu_us_per_request"`
	// Allocs and AllocBytes are the Go heap allocations per request (go_memstats_mallocs_total
	// and go_memstats_alloc_bytes_total; 0 for a server that does not export them: Redis).
	Allocs     float64 `json:"allocs_per_request,omitempty"`
	AllocBytes float64 `json:"alloc_bytes_per_request,omitempty"`
}

// StorageIO is kv's storage-engine write counters (see mvcc.StorageIO), read from its metrics.
type StorageIO struct {
	WALBytes       float64 `json:"wal_bytes"`
	FlushedBytes   float64 `json:"flushed_bytes"`
	CompactedBytes float64 `json:"compacted_bytes"`
	Compactions    float64 `json:"compactions"`
	// WriteAmp is (WAL + flushed + compacted) / WAL.
	WriteAmp float64 `json:"write_amp"`
}

// Result is a whole benchmark.
type Result struct {
	// Header says what produced the result (command, machine, commit, when, the host's load);
	// a report rendered again from the JSON states it.
	benchkit.Header
	Config  Config        `json:"config"`
	Records int64         `json:"records"`
	Stores  []StoreResult `json:"stores"`
	// Goals are the verdicts against the goals of issues 3 and 13 (recomputed from the
	// figures when a report is rendered again).
	Goals []benchkit.Goal `json:"goals,omitempty"`
}

// Run measures every store in turn. A store that cannot start (e.g. `continuum kv` missing) is
// recorded with its error and the others still run; Run fails only on bad configuration or
// when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "continuum-bench-kv-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	w, _ := cfg.workload()
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg, Records: w.RecordCount}
	for rep := 1; rep <= cfg.Repeats; rep++ {
		for _, store := range cfg.Stores {
			rc := cfg
			rc.Dir = filepath.Join(cfg.Dir, fmt.Sprintf("r%d", rep))
			sr := runStore(ctx, rc, w, store)
			sr.Repeat = rep
			res.Stores = append(res.Stores, sr)
			res.Observe(max(sr.LoadAvg[0], sr.LoadAvg[1]))
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
	}
	res.Finish()
	res.Goals = goals(res)
	return res, nil
}

func runStore(ctx context.Context, cfg Config, w ycsb.Workload, store string) (sr StoreResult) {
	sr = StoreResult{Store: store}
	fail := func(err error) StoreResult {
		sr.Error = err.Error()
		benchkit.Logf(cfg.Log, "%s: %v", store, err)
		return sr
	}
	bc := baselines.Config{Dir: filepath.Join(cfg.Dir, store)}
	switch store {
	case kvtarget.KindEtcd:
		bc.Bin = cfg.EtcdBin
	case kvtarget.KindRedis:
		bc.Bin = cfg.RedisBin
	case kvtarget.KindKV:
		bc.Bin, bc.ExtraArgs = cfg.ContinuumBin, cfg.KVArgs
	}
	sr.LoadAvg[0], _ = procstat.LoadAvg1()
	defer func() { sr.LoadAvg[1], _ = procstat.LoadAvg1() }()
	benchkit.Logf(cfg.Log, "%s: starting (%s)", store, cfg.Dir)
	srv, err := baselines.Start(ctx, store, bc, cfg.RedisFsync)
	if err != nil {
		return fail(err)
	}
	defer srv.Stop()
	sr.Args, sr.Version = srv.Args, version(store, srv.Args[0])
	sr.RSSEmpty, _ = srv.RSS()
	sr.DiskEmpty, _ = srv.DiskBytes()

	maxClients := max(cfg.ClosedClients, cfg.LoadClients)
	st, err := kvtarget.Open(srv.Target, kvtarget.Options{Conns: kvtarget.DefaultConns(srv.Target.Kind, 0, maxClients)})
	if err != nil {
		return fail(err)
	}
	defer st.Close()

	base := ycsb.DefaultConfig()
	base.Workload, base.LoadClients, base.Seed = w, cfg.LoadClients, 1
	base.Run = loadgen.Config{Timeout: cfg.Timeout, ProgressInterval: time.Second}

	// Load phase.
	lc := base
	lc.Phase = ycsb.PhaseLoad
	lr, err := ycsb.Run(ctx, lc, st)
	if err != nil {
		return fail(err)
	}
	sr.LoadSeconds = lr.LoadElapsed.Seconds()
	sr.LoadInsertsPS = round(float64(w.RecordCount) / sr.LoadSeconds)
	benchkit.Logf(cfg.Log, "%s: loaded %d records in %.1f s", store, w.RecordCount, sr.LoadSeconds)
	select {
	case <-time.After(cfg.Settle):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	sr.RSSLoaded, _ = srv.RSS()
	sr.DiskLoaded, _ = srv.DiskBytes()
	scale := 1e6 / float64(w.RecordCount)
	sr.RSSPerMillion = math.Round(float64(sr.RSSLoaded-sr.RSSEmpty) * scale)
	sr.DiskPerMillion = math.Round(float64(sr.DiskLoaded-sr.DiskEmpty) * scale)

	// Open-loop sweep.
	rule := benchkit.SustainRule(cfg.P99Limit)
	sweep := benchkit.Sweep{Rates: cfg.Rates, AtLeast: cfg.SweepAtLeast, Rule: rule}
	sr.MaxSustained, err = sweep.Run(ctx, func(ctx context.Context, i int, rate float64) (benchkit.Outcome, error) {
		rc := base
		rc.Phase, rc.Seed = ycsb.PhaseRun, int64(i+2)
		rc.Run.Rate, rc.Run.Duration, rc.Run.Warmup = rate, cfg.StepDuration, cfg.Warmup
		maint := make(chan *Maintenance, 1)
		if cfg.Maintenance && store != kvtarget.KindRedis {
			go func() { maint <- maintain(ctx, srv.Target.Endpoints, cfg.Warmup+(cfg.StepDuration-cfg.Warmup)/3) }()
		} else {
			maint <- nil
		}
		rr, err := ycsb.Run(ctx, rc, st)
		m := <-maint
		if err != nil {
			return benchkit.Outcome{}, err
		}
		step := stepOf(rr.Run.Stats, rule, rate, 0)
		step.Maintenance = m
		sr.Sweep = append(sr.Sweep, step)
		benchkit.Logf(cfg.Log, "%s: %6.0f ops/s -> %8.0f ops/s, max p99 %.2f ms, errors %d, sustained %v%s",
			store, rate, step.ThroughputRPS, step.MaxP99, step.Errors, step.Sustained, m.String())
		return step.outcome(), nil
	})
	if err != nil {
		return fail(err)
	}

	// Closed-loop peak.
	if cfg.ClosedClients > 0 {
		cc := base
		cc.Phase, cc.Seed = ycsb.PhaseRun, 1000
		cc.Run.Clients, cc.Run.Duration, cc.Run.Warmup = cfg.ClosedClients, cfg.ClosedDuration, min(cfg.Warmup, cfg.ClosedDuration/4)
		before := sample(ctx, srv)
		rr, err := ycsb.Run(ctx, cc, st)
		if err != nil {
			return fail(err)
		}
		after := sample(ctx, srv)
		step := stepOf(rr.Run.Stats, benchkit.SustainRule(cfg.P99Limit), 0, cfg.ClosedClients)
		sr.Closed = &step
		sr.Cost = costOf(before, after, rr.Run.Stats)
		benchkit.Logf(cfg.Log, "%s: closed loop, %d clients: %.0f ops/s, max p99 %.2f ms", store, cfg.ClosedClients, step.ThroughputRPS, step.MaxP99)
	}
	sr.RSSEnd, _ = srv.RSS()
	if store == kvtarget.KindKV {
		sr.Storage = storageOf(sample(ctx, srv).metrics)
	}

	// Footprint: grow the store to FootprintRecords keys and read memory and disk there.
	if n := cfg.FootprintRecords - w.RecordCount; n > 0 {
		benchkit.Logf(cfg.Log, "%s: inserting %d records to measure memory and disk at %d keys", store, n, cfg.FootprintRecords)
		if err := grow(ctx, st, w, n, cfg.LoadClients); err != nil {
			return fail(err)
		}
		select {
		case <-time.After(cfg.Settle):
		case <-ctx.Done():
			return fail(ctx.Err())
		}
		sr.FootprintRecords = cfg.FootprintRecords
		sr.RSSFootprint, _ = srv.RSS()
		sr.DiskFootprint, _ = srv.DiskBytes()
		scale := 1e6 / float64(cfg.FootprintRecords)
		sr.RSSPerMillion = math.Round(float64(sr.RSSFootprint-sr.RSSEmpty) * scale)
		sr.DiskPerMillion = math.Round(float64(sr.DiskFootprint-sr.DiskEmpty) * scale)
		benchkit.Logf(cfg.Log, "%s: at %d keys: RSS %.1f MiB, disk %.1f MiB", store, cfg.FootprintRecords,
			float64(sr.RSSFootprint)/(1<<20), float64(sr.DiskFootprint)/(1<<20))
	}
	return sr
}

// stepOf condenses a run's stats; rate 0 is a closed-loop run (never "sustained").
func stepOf(st results.Stats, rule benchkit.Rule, rate float64, clients int) Step {
	s := Step{Rate: rate, Clients: clients, Ops: map[string]OpStats{}}
	for op, ss := range st.Series {
		s.Ops[op] = OpStats{OK: ss.OK, Errors: ss.Errors, P50: ss.Latency.P50, P99: ss.Latency.P99,
			P999: ss.Latency.P999, Max: ss.Latency.Max, ErrorsByType: ss.ErrorsByType}
		s.ThroughputRPS += ss.ThroughputRPS
		s.Errors += ss.Errors
		s.MaxP99 = max(s.MaxP99, ss.Latency.P99)
	}
	s.ThroughputRPS = round(s.ThroughputRPS)
	s.Sustained = rule.Sustained(s.outcome())
	return s
}

// outcome is what the sweep's sustain rule judges.
func (s Step) outcome() benchkit.Outcome {
	return benchkit.Outcome{Rate: s.Rate, Achieved: s.ThroughputRPS, Errors: s.Errors, P99Ms: s.MaxP99}
}

func round(v float64) float64 { return benchkit.Round(v, 1) }

// version asks a server binary for its version (first line); kv reports the continuum version.
func version(store, bin string) string {
	args := []string{"--version"}
	if store == kvtarget.KindKV {
		args = []string{"version"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// serverSample is a server's CPU time and metrics at one moment.
type serverSample struct {
	cpu     float64
	cpuOK   bool
	metrics map[string]float64
}

func sample(ctx context.Context, srv *baselines.Server) serverSample {
	var s serverSample
	cpu, err := srv.CPUSeconds()
	s.cpu, s.cpuOK = cpu, err == nil
	if srv.MetricsURL != "" {
		s.metrics, _ = srv.Metrics(ctx)
	}
	return s
}

// costOf divides what the server spent between two samples by the requests served in between.
// The samples bracket the whole run, warm-up included, while st counts only the measured
// window; the closed loop runs at the same pace in both, so the warm-up's requests are
// estimated as the measured count scaled by the warm-up's share of the time.
func costOf(before, after serverSample, st results.Stats) *RequestCost {
	var n float64
	for _, ss := range st.Series {
		n += float64(ss.OK + ss.Errors)
	}
	if st.MeasuredS > 0 {
		n *= (st.MeasuredS + st.WarmupS) / st.MeasuredS
	}
	if n == 0 || !before.cpuOK || !after.cpuOK {
		return nil
	}
	c := &RequestCost{CPUMicros: round((after.cpu - before.cpu) / n * 1e6)}
	delta := func(name string) float64 {
		a, okA := after.metrics[name]
		b, okB := before.metrics[name]
		if !okA || !okB {
			return 0
		}
		return (a - b) / n
	}
	c.Allocs = round(delta("go_memstats_mallocs_total"))
	c.AllocBytes = math.Round(delta("go_memstats_alloc_bytes_total"))
	return c
}

func storageOf(m map[string]float64) *StorageIO {
	wal, ok := m["continuum_kv_storage_wal_bytes_total"]
	if !ok {
		return nil
	}
	io := &StorageIO{WALBytes: wal, FlushedBytes: m["continuum_kv_storage_flushed_bytes_total"],
		CompactedBytes: m["continuum_kv_storage_compacted_bytes_total"], Compactions: m["continuum_kv_storage_compactions_total"]}
	io.WriteAmp = round(mvcc.StorageIO{WALBytes: uint64(wal), FlushedBytes: uint64(io.FlushedBytes),
		CompactedBytes: uint64(io.CompactedBytes)}.WriteAmp())
	return io
}

// ReadResult reads a result written as JSON (next to the Markdown by `continuum bench kv --out`).
func ReadResult(path string) (*Result, error) {
	var res Result
	if err := benchkit.ReadJSON(path, &res); err != nil {
		return nil, fmt.Errorf("not a bench kv result: %w", err)
	}
	if len(res.Stores) == 0 {
		return nil, fmt.Errorf("%s: no stores in this result", path)
	}
	return &res, nil
}

// maintain waits `after`, then compacts the store's history up to its current revision
// (physical: the call returns once the versions are gone, as etcdctl compact --physical) and
// defragments it, timing both, over a connection of its own.
func maintain(ctx context.Context, endpoints []string, after time.Duration) *Maintenance {
	m := &Maintenance{}
	select {
	case <-time.After(after):
	case <-ctx.Done():
		m.Error = ctx.Err().Error()
		return m
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		m.Error = err.Error()
		return m
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := cli.Status(ctx, endpoints[0])
	if err != nil {
		m.Error = err.Error()
		return m
	}
	m.Revision = st.Header.Revision
	t := time.Now()
	if _, err := cli.Compact(ctx, m.Revision, clientv3.WithCompactPhysical()); err != nil {
		m.Error = "compact: " + err.Error()
		return m
	}
	m.CompactMs = round(float64(time.Since(t).Microseconds()) / 1000)
	t = time.Now()
	if _, err := cli.Defragment(ctx, endpoints[0]); err != nil {
		m.Error = "defragment: " + err.Error()
		return m
	}
	m.DefragMs = round(float64(time.Since(t).Microseconds()) / 1000)
	return m
}

// String is the maintenance's figures for a progress line ("" when none ran).
func (m *Maintenance) String() string {
	switch {
	case m == nil:
		return ""
	case m.Error != "":
		return ", maintenance failed: " + m.Error
	}
	return fmt.Sprintf(", compacted to %d in %.1f ms, defragmented in %.1f ms", m.Revision, m.CompactMs, m.DefragMs)
}

var errNoStores = errors.New("stores: name at least one of kv, etcd, redis")
