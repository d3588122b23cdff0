// Package maintain is the maintenance loop seeds/000 runs next to every etcd member: every
// period τ it compacts the member's history up to its current revision and defragments it,
// recording how long each step took and the member's database size before compaction and
// after defragmentation. Beside it, a probe asks the member for a key every few milliseconds,
// so that the defrag downtime is measured as a client sees it: the longest time a request to
// that member waited (or failed) while a defragmentation ran. With no period the loop only
// probes, which gives the baseline: what a client sees without maintenance.
//
// It speaks etcd's v3 API, so it maintains etcd and continuum kv alike; Redis defragments
// itself (activedefrag) and has no such loop.
package maintain

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/netcheck"
	"github.com/continuum-project/continuum/internal/results"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Config is one member's maintenance loop.
type Config struct {
	// Endpoint is the member's client URL; the loop and the probe talk to it alone.
	Endpoint string
	// Period is τ: a compaction and a defragmentation every Period (0: probe only).
	Period time.Duration
	// ProbeInterval is how often the probe reads (default DefaultProbeInterval).
	ProbeInterval time.Duration
	// Timeout bounds one probe request and one maintenance call (default 60 s for
	// maintenance, 5 s for a probe).
	Timeout time.Duration
	// Duration is how long the loop runs; probes in its first Warmup are not counted in the
	// probe's whole-run figures (connections being set up). OutDir receives maintenance.csv
	// and maintenance.json.
	Duration time.Duration
	Warmup   time.Duration
	OutDir   string
}

// DefaultProbeInterval is Config.ProbeInterval's default: the probe reads every 10 ms.
const DefaultProbeInterval = 10 * time.Millisecond

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	switch {
	case c.Endpoint == "":
		return errors.New("maintenance: no member endpoint")
	case c.Period < 0:
		return fmt.Errorf("period %v: must be >= 0 (0: probe only)", c.Period)
	case c.Period > 0 && c.Period < 100*time.Millisecond:
		return fmt.Errorf("period %v: at least 100ms", c.Period)
	case c.ProbeInterval < 0 || c.Duration <= 0:
		return fmt.Errorf("probe interval %v, duration %v: want >= 0 and > 0", c.ProbeInterval, c.Duration)
	case c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("warmup %v: want >= 0 and shorter than duration %v", c.Warmup, c.Duration)
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	return nil
}

// Round is one maintenance round.
type Round struct {
	At time.Duration // from the loop's start
	// Revision compacted to; DBBefore is the database size before the compaction, DBAfter
	// after the defragmentation (etcd's Status dbSize: the file it would defragment).
	Revision  int64
	DBBefore  int64
	DBAfter   int64
	CompactMS float64
	DefragMS  float64
	// DowntimeMS is the longest a probe request waited while this defragmentation ran (a
	// failed request counts for the time until it failed).
	DowntimeMS float64
	Error      string
}

// Summary is maintenance.json: the rounds' figures and the probe's over the whole run.
type Summary struct {
	Endpoint string  `json:"endpoint"`
	PeriodS  float64 `json:"period_s"`
	Rounds   int     `json:"rounds"`
	Failed   int     `json:"failed"`
	// Per round: medians and maxima.
	CompactMSP50  float64 `json:"compact_ms_p50"`
	DefragMSP50   float64 `json:"defrag_ms_p50"`
	DefragMSMax   float64 `json:"defrag_ms_max"`
	DowntimeMSP50 float64 `json:"downtime_ms_p50"`
	DowntimeMSMax float64 `json:"downtime_ms_max"`
	DBBeforeMax   int64   `json:"db_before_bytes_max"`
	DBAfterMin    int64   `json:"db_after_bytes_min"`
	// The probe over the whole run: requests, failures, and its longest request.
	Probes        int64   `json:"probes"`
	ProbeFailures int64   `json:"probe_failures"`
	ProbeMaxMS    float64 `json:"probe_max_ms"`
}

// Files written to OutDir.
const (
	RoundsFile  = "maintenance.csv"
	SummaryFile = "maintenance.json"
)

// probe is the client-side view of the member: every request's start and how long it took.
type probe struct {
	mu       sync.Mutex
	inflight map[int64]time.Time // requests under way, by sequence number
	done     []sample
	// Whole-run figures, over the requests that started after from.
	from    time.Time
	n, fail int64
	max     time.Duration
}

type sample struct {
	start time.Time
	took  time.Duration
}

// worst is the longest time a request overlapping [from, to] waited: finished ones by their
// latency, those still under way by how long they have waited so far.
func (p *probe) worst(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var w time.Duration
	for _, s := range p.done {
		if s.start.Before(to) && s.start.Add(s.took).After(from) {
			w = max(w, s.took)
		}
	}
	now := time.Now()
	for _, start := range p.inflight {
		if start.Before(to) {
			w = max(w, now.Sub(start))
		}
	}
	return w
}

// forget drops finished samples that ended before t.
func (p *probe) forget(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.done[:0]
	for _, s := range p.done {
		if s.start.Add(s.took).After(t) {
			keep = append(keep, s)
		}
	}
	p.done = keep
}

// Run runs the loop and the probe for cfg.Duration (or until ctx ends) and writes the outputs.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := netcheck.Listening(ctx, []string{cfg.Endpoint}, netcheck.DefaultTimeout); err != nil {
		return nil, fmt.Errorf("maintenance: %w (is an etcd or continuum kv member there?)", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{cfg.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("maintenance client for %s: %w", cfg.Endpoint, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	t0 := time.Now()
	p := &probe{inflight: map[int64]time.Time{}, from: t0.Add(cfg.Warmup)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.run(ctx, cli, cfg.ProbeInterval) }()

	var rounds []Round
	if cfg.Period > 0 {
		tick := time.NewTicker(cfg.Period)
		for done := false; !done; {
			select {
			case <-ctx.Done():
				done = true
			case <-tick.C:
				r := round(ctx, cli, cfg, p)
				r.At = time.Since(t0).Round(time.Millisecond)
				if ctx.Err() == nil || r.Error == "" {
					rounds = append(rounds, r)
				}
				p.forget(time.Now().Add(-time.Minute))
			}
		}
		tick.Stop()
	} else {
		<-ctx.Done()
	}
	wg.Wait()
	sum := summarize(cfg, rounds, p)
	if cfg.OutDir != "" {
		if err := write(cfg.OutDir, rounds, sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// round compacts to the current revision and defragments, timing both and the probe's worst
// wait during the defragmentation.
func round(ctx context.Context, cli *clientv3.Client, cfg Config, p *probe) Round {
	var r Round
	fail := func(step string, err error) Round {
		r.Error = step + ": " + err.Error()
		return r
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	st, err := cli.Status(cctx, cfg.Endpoint)
	if err != nil {
		return fail("status", err)
	}
	r.Revision, r.DBBefore = st.Header.Revision, st.DbSize
	start := time.Now()
	// Nothing written since the last round: the revision is compacted already, and the
	// round goes on to defragment.
	if _, err := cli.Compact(cctx, r.Revision, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fail("compact", err)
	}
	r.CompactMS = results.Millis(time.Since(start))
	start = time.Now()
	_, err = cli.Defragment(cctx, cfg.Endpoint)
	end := time.Now()
	r.DefragMS = results.Millis(end.Sub(start))
	// Requests that were answered just after the defragmentation waited through it: let the
	// probe's in-flight requests finish (a few intervals) before reading its worst wait.
	time.Sleep(3 * cfg.ProbeInterval)
	r.DowntimeMS = results.Millis(p.worst(start, end))
	if err != nil {
		return fail("defragment", err)
	}
	if st, err = cli.Status(cctx, cfg.Endpoint); err != nil {
		return fail("status", err)
	}
	r.DBAfter = st.DbSize
	return r
}

// run reads a key every interval, each read on its own goroutine so that a blocked member
// does not stop the probe from noticing how long it blocks.
func (p *probe) run(ctx context.Context, cli *clientv3.Client, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for seq := int64(0); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		p.mu.Lock()
		p.inflight[seq] = start
		p.mu.Unlock()
		wg.Add(1)
		go func(seq int64) {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, err := cli.Get(rctx, "/maintenance-probe", clientv3.WithSerializable())
			cancel()
			took := time.Since(start)
			p.mu.Lock()
			delete(p.inflight, seq)
			p.done = append(p.done, sample{start, took})
			if start.After(p.from) {
				p.n++
				if err != nil {
					p.fail++
				}
				p.max = max(p.max, took)
			}
			p.mu.Unlock()
		}(seq)
	}
}

func summarize(cfg Config, rounds []Round, p *probe) *Summary {
	s := &Summary{Endpoint: cfg.Endpoint, PeriodS: cfg.Period.Seconds()}
	var compact, defrag, down []float64
	for _, r := range rounds {
		if r.Error != "" {
			s.Failed++
			continue
		}
		s.Rounds++
		compact, defrag, down = append(compact, r.CompactMS), append(defrag, r.DefragMS), append(down, r.DowntimeMS)
		s.DBBeforeMax = max(s.DBBeforeMax, r.DBBefore)
		if s.DBAfterMin == 0 || r.DBAfter < s.DBAfterMin {
			s.DBAfterMin = r.DBAfter
		}
	}
	s.CompactMSP50, _ = median(compact)
	s.DefragMSP50, s.DefragMSMax = median(defrag)
	s.DowntimeMSP50, s.DowntimeMSMax = median(down)
	p.mu.Lock()
	s.Probes, s.ProbeFailures, s.ProbeMaxMS = p.n, p.fail, results.Millis(p.max)
	p.mu.Unlock()
	return s
}

// median returns the median and the maximum (0, 0 for none).
func median(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return math.Round(m*1000) / 1000, s[len(s)-1]
}

func write(dir string, rounds []Round, sum *Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, RoundsFile))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"t_s", "revision", "db_before_bytes", "db_after_bytes", "compact_ms", "defrag_ms", "downtime_ms", "error"})
	for _, r := range rounds {
		_ = w.Write([]string{strconv.FormatFloat(r.At.Seconds(), 'f', 3, 64), strconv.FormatInt(r.Revision, 10),
			strconv.FormatInt(r.DBBefore, 10), strconv.FormatInt(r.DBAfter, 10),
			strconv.FormatFloat(r.CompactMS, 'f', 3, 64), strconv.FormatFloat(r.DefragMS, 'f', 3, 64),
			strconv.FormatFloat(r.DowntimeMS, 'f', 3, 64), r.Error})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return err
	}
	return results.WriteJSON(filepath.Join(dir, SummaryFile), sum)
}
