// Package freshness measures two things seeds/000 §6.2.2 trades off: staleness (a write
// acknowledged by one instance until it is visible on another: a follower, a replica, another
// kv member) and failover (how long writes fail after the instance that orders them is lost).
//
// A writer writes an increasing counter to one key every Interval through its instance;
// readers poll the other instances for it. The staleness of write s on a reader is the time
// from s's acknowledgment until the reader first returns s or a later value (0 when it did so
// before the acknowledgment arrived). Writes are timed as operations; the longest time between
// two acknowledged writes after the warm-up is the write outage, whose part beyond Interval is
// the failover duration when a fault was injected. Each write also appends its number to a log
// in the same atomic step (an etcd/kv Txn, a Redis MULTI on one slot); at the end the log is
// read back through the write path, and every acknowledged number missing from it is an
// acknowledged write the store lost. (A counter alone cannot show it: the next acknowledged
// write overwrites the evidence.)
//
// For etcd, the writer first moves leadership to Leader (so the scenario knows which node
// holds it); for Redis Cluster it picks a key whose slot's master is at Leader. continuum kv
// has no leader: every member accepts writes.
package freshness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/results"
)

// Config is one freshness probe.
type Config struct {
	// Backend is kv, etcd or redis-cluster.
	Backend string
	// Write is the endpoint the writer writes through (etcd/kv: client URL; Redis Cluster: a
	// member's host:port). Read are the endpoints readers poll (etcd/kv: each member's URL;
	// Redis Cluster: the other members, which the client also learns the cluster from when
	// Write's member is lost; the key's replica is read).
	Write string
	Read  []string
	// Leader is where the ordering instance should be (see the package doc); empty: wherever
	// it is.
	Leader string
	// Interval between writes (default DefaultInterval); Poll between a reader's reads (default
	// DefaultPoll).
	Interval, Poll time.Duration
	// Timeout bounds one write (default DefaultTimeout).
	Timeout          time.Duration
	Duration, Warmup time.Duration
	OutDir           string
	Progress         io.Writer
	// OnStart, if set, is called once the probe measures (its connections are set up and
	// the key chosen), so a caller can time a fault from it.
	OnStart func()
}

// Backends a probe supports.
const (
	BackendKV           = "kv"
	BackendEtcd         = "etcd"
	BackendRedisCluster = "redis-cluster"
)

// Defaults of Config: a write every 100 ms, each reader polling every 2 ms (the staleness
// resolution), a second per write.
const (
	DefaultInterval = 100 * time.Millisecond
	DefaultPoll     = 2 * time.Millisecond
	DefaultTimeout  = time.Second
)

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	switch c.Backend {
	case BackendKV, BackendEtcd:
		if len(c.Read) == 0 {
			return fmt.Errorf("freshness on %s: no instances to read from", c.Backend)
		}
	case BackendRedisCluster:
	default:
		return fmt.Errorf("freshness backend %q: want kv, etcd or redis-cluster", c.Backend)
	}
	switch {
	case c.Write == "":
		return errors.New("freshness: no endpoint to write through")
	case c.Interval < 0 || c.Poll < 0 || c.Timeout < 0:
		return errors.New("freshness: interval, poll and timeout must be >= 0")
	case c.Duration <= 0 || c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("duration %v, warmup %v: want duration > 0 and 0 <= warmup < duration", c.Duration, c.Warmup)
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return nil
}

// store is what the probe needs of a backend: write the counter through the write instance,
// and a reader per instance to poll.
type store interface {
	write(ctx context.Context, v int64) error
	// logged reads, through the write path (etcd: a linearizable read; Redis: the key's
	// master), the numbers of the writes the store kept.
	logged(ctx context.Context) ([]int64, error)
	readers() []reader
	close()
}

type reader struct {
	name string
	read func(ctx context.Context) (int64, error) // the counter as this instance has it (0: none yet)
}

// Report is freshness.json.
type Report struct {
	Backend string `json:"backend"`
	Key     string `json:"key"`
	// Writes acknowledged and failed after the warm-up.
	Writes      int64 `json:"writes"`
	WriteErrors int64 `json:"write_errors"`
	// LongestGapMS is the longest time between two acknowledged writes after the warm-up,
	// GapStartS when it began (from the probe's start); OutageMS is LongestGapMS minus the
	// write interval (the failover duration when a fault was injected), at least 0.
	LongestGapMS float64 `json:"longest_gap_ms"`
	GapStartS    float64 `json:"gap_start_s"`
	OutageMS     float64 `json:"outage_ms"`
	// Readers are the series names of the staleness measurements (stale_<reader>); PollMS is
	// their resolution.
	Readers []string `json:"readers"`
	PollMS  float64  `json:"poll_ms"`
	// EndedInOutage is true when the run ended with writes still failing (the longest gap
	// then runs to the end of the run).
	EndedInOutage bool `json:"ended_in_outage"`
	// LostAcknowledged counts acknowledged writes missing from the store's log at the end (a
	// Redis master cut off or lost before it replicated them); FinalCheck is false when the
	// log could not be read, and then nothing was counted.
	LostAcknowledged int64 `json:"lost_acknowledged"`
	FinalCheck       bool  `json:"final_check"`
}

// ReportFile is the Report's name in OutDir.
const ReportFile = "freshness.json"

// Run probes for cfg.Duration and writes the outputs.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, key, err := open(octx, cfg)
	cancel()
	if err != nil {
		return nil, err
	}
	defer st.close()
	return probe(ctx, cfg, st, key)
}

// probe runs the writer and the readers on st (cfg validated).
func probe(ctx context.Context, cfg Config, st store, key string) (*Report, error) {
	rs := st.readers()
	ops := []string{"write"}
	rep := &Report{Backend: cfg.Backend, Key: key, PollMS: results.Millis(cfg.Poll)}
	for _, r := range rs {
		ops = append(ops, "stale_"+r.name)
		rep.Readers = append(rep.Readers, "stale_"+r.name)
	}
	sess, err := loadgen.NewSession(loadgen.Config{Duration: cfg.Duration, Warmup: cfg.Warmup, OutDir: cfg.OutDir, Progress: cfg.Progress}, ops)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithDeadline(ctx, sess.T0().Add(cfg.Duration))
	defer stop()
	if cfg.OnStart != nil {
		cfg.OnStart()
	}

	// acks[s] is when write s was acknowledged; a reader that sees s reports its staleness.
	var mu sync.Mutex
	acks := map[int64]time.Time{}
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func(r reader) {
			defer wg.Done()
			poll(rctx, r, cfg.Poll, func(from, to int64, seen time.Time) {
				mu.Lock()
				defer mu.Unlock()
				for s := from; s <= to; s++ {
					ack, ok := acks[s]
					stale := time.Duration(0)
					if ok && seen.After(ack) {
						stale = seen.Sub(ack)
					}
					sess.Observe("stale_"+r.name, stale, nil)
				}
			})
		}(r)
	}

	warm := sess.T0().Add(cfg.Warmup)
	var last time.Time
	tick := time.NewTicker(cfg.Interval)
	var acked []int64 // every acknowledged write's number, in order
	seq := int64(1)
	for rctx.Err() == nil {
		op, ok := sess.Begin("write")
		if !ok {
			break
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(rctx), cfg.Timeout)
		err := st.write(wctx, seq)
		cancel()
		op.End(err)
		now := time.Now()
		if err == nil {
			acked = append(acked, seq)
			mu.Lock()
			acks[seq] = now
			delete(acks, seq-1000) // readers report within seconds; keep the map small
			mu.Unlock()
			if now.After(warm) {
				rep.Writes++
				if !last.IsZero() {
					if gap := now.Sub(last); results.Millis(gap) > rep.LongestGapMS {
						rep.LongestGapMS, rep.GapStartS = results.Millis(gap), last.Sub(sess.T0()).Seconds()
					}
				}
			}
			last = now
			seq++
		} else {
			if now.After(warm) {
				rep.WriteErrors++
			}
		}
		select {
		case <-rctx.Done():
		case <-tick.C:
		}
	}
	tick.Stop()
	if end := time.Now(); !last.IsZero() && results.Millis(end.Sub(last)) > rep.LongestGapMS {
		rep.LongestGapMS, rep.GapStartS, rep.EndedInOutage = results.Millis(end.Sub(last)), last.Sub(sess.T0()).Seconds(), true
	}
	// The log, read once the store answers again (it may still be failing over; up to 30
	// write timeouts).
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*cfg.Timeout)
	var kept []int64
	for lctx.Err() == nil {
		if kept, err = st.logged(lctx); err == nil {
			rep.FinalCheck = true
			break
		}
		select {
		case <-lctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	cancel()
	if rep.FinalCheck {
		rep.LostAcknowledged = missing(acked, kept)
	}
	stop()
	wg.Wait()
	rep.OutageMS = max(0, rep.LongestGapMS-results.Millis(cfg.Interval))
	res, err := sess.Close(ctx.Err() != nil)
	if err != nil {
		return rep, err
	}
	if cfg.OutDir != "" {
		if err := results.WriteJSON(filepath.Join(cfg.OutDir, ReportFile), rep); err != nil {
			return rep, err
		}
	}
	if err := res.Failure(); err != nil {
		return rep, err
	}
	return rep, nil
}

// poll reads r every interval until ctx ends; when the counter moves from a to b it calls
// seen(a+1, b, now).
func poll(ctx context.Context, r reader, interval time.Duration, seen func(from, to int64, at time.Time)) {
	var have int64 // the key is new to this probe: it starts absent (0)
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		// The value was there when the read that returned it began, or sooner: staleness is
		// measured to the read's start, at a resolution of the poll interval.
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		v, err := r.read(rctx)
		cancel()
		if err == nil && v > have {
			seen(have+1, v, start)
			have = v
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// missing counts the numbers of acked not in kept.
func missing(acked, kept []int64) int64 {
	have := make(map[int64]bool, len(kept))
	for _, v := range kept {
		have[v] = true
	}
	var n int64
	for _, v := range acked {
		if !have[v] {
			n++
		}
	}
	return n
}

func parseCounter(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return strconv.ParseInt(string(b), 10, 64)
}
