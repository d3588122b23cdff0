package loadgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// Run statuses (stats.json "status", the done line's "status").
const (
	StatusOK          = "ok"
	StatusInterrupted = "interrupted"
)

// Result is what a run measured; Run also writes it to Config.OutDir.
type Result struct {
	Stats results.Stats
	// Elapsed is the time from t0 to the end of sending (Duration unless interrupted).
	Elapsed time.Duration

	countSeries []string // Config.CountSeries, for Failure
}

// drainGrace is how long Run waits, after cancelling requests that outlived their timeout, for
// their goroutines to return (targets that ignore cancellation are abandoned after it).
const drainGrace = time.Second

// Run drives the series as cfg says, writes the outputs and returns the statistics. Cancelling
// ctx stops the run early with status "interrupted" and a nil error; errors are reserved for
// bad configuration and failures to write outputs.
func Run(ctx context.Context, cfg Config, series []Series) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateSeries(series); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.OutDir != "" {
		if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("create output directory: %w", err)
		}
	}

	t0 := time.Now()
	reqBase, giveUp := context.WithCancel(context.WithoutCancel(ctx))
	defer giveUp()
	st := &runState{cfg: cfg, t0: t0, stop: ctx, reqBase: reqBase, giveUp: giveUp}
	var recs []*recorder
	scheds := make([]*schedule, len(series))
	for i, s := range series {
		sc := newSchedule(s, t0, cfg)
		scheds[i] = sc
		recs = append(recs, sc.recs...)
		if cfg.Clients > 0 {
			for range cfg.Clients {
				st.work.Add(1)
				st.sched.Add(1)
				go st.closedLoop(sc)
			}
		} else {
			st.work.Add(1)
			st.sched.Add(1)
			go st.openLoop(sc)
		}
	}
	exhausted := allExhausted(&st.sched, scheds)
	prog := newProgress(cfg.Progress, recs, t0, cfg.CountSeries)
	progDone := make(chan struct{})
	progStop := make(chan struct{})
	go func() {
		defer close(progDone)
		prog.loop(cfg.ProgressInterval, progStop)
	}()

	status := StatusOK
	end := cfg.Duration
	timer := time.NewTimer(time.Until(t0.Add(cfg.Duration)))
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		status = StatusInterrupted
		end = min(time.Since(t0), cfg.Duration)
	case <-exhausted:
		timer.Stop()
		end = min(time.Since(t0), cfg.Duration)
	}
	waitFor(&st.work, cfg.Timeout+100*time.Millisecond)
	giveUp()
	waitFor(&st.work, drainGrace)
	close(progStop)
	<-progDone
	for _, r := range recs {
		r.finish(end)
	}

	res := &Result{Stats: computeStats(recs, cfg, end, status), Elapsed: end, countSeries: cfg.CountSeries}
	status = res.Stats.Status
	statsFile := ""
	if cfg.OutDir != "" {
		if err := writeOutputs(cfg.OutDir, t0, recs, res.Stats); err != nil {
			return res, err
		}
		statsFile = filepath.Join(cfg.OutDir, results.StatsFile)
	}
	if err := prog.done(res.Stats, status, statsFile); err != nil {
		return res, fmt.Errorf("write done line: %w", err)
	}
	return res, nil
}

// waitFor waits for wg up to d; the waiter goroutine lingers if d passes, which only happens
// for targets that ignore their context.
func waitFor(wg interface{ Wait() }, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// RunOne runs a single series against t and returns its statistics: what a benchmark that
// compares paths one step at a time wants. A canceled ctx is an error.
func RunOne(ctx context.Context, cfg Config, t Target) (results.SeriesStats, error) {
	r, err := Run(ctx, cfg, []Series{{Name: "req", Target: t}})
	if err != nil {
		return results.SeriesStats{}, err
	}
	if ctx.Err() != nil {
		return results.SeriesStats{}, ctx.Err()
	}
	return r.Stats.Series["req"], nil
}
