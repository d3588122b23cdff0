package loadgen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// Session measures operations that its caller starts itself instead of Run's schedulers: a
// consumer that reacts to notifications, a producer on its own period. It writes Run's
// outputs (one series per operation type, stats.json, timeseries.csv, latency.hlog, ...) and
// progress lines. An operation is attributed to the second it began, as a closed-loop
// request is: its intended time is its start.
type Session struct {
	cfg  Config
	t0   time.Time
	recs map[string]*recorder
	all  []*recorder
	prog *progress

	progStop, progDone chan struct{}
	closeOnce          sync.Once
	res                *Result
	err                error
}

// NewSession starts measuring now, for cfg.Duration (Rate, Clients, MaxInflight, ThinkTime
// and Timeout do not apply: the caller bounds its own operations). ops names the operation
// types, each a series.
func NewSession(cfg Config, ops []string) (*Session, error) {
	switch {
	case cfg.Duration <= 0:
		return nil, fmt.Errorf("duration %v: must be > 0", cfg.Duration)
	case cfg.Warmup < 0 || cfg.Warmup >= cfg.Duration:
		return nil, fmt.Errorf("warmup %v: must be >= 0 and shorter than duration %v", cfg.Warmup, cfg.Duration)
	case len(ops) == 0:
		return nil, errors.New("no operation types to measure")
	}
	cfg.Clients, cfg.Rate = 1, 0 // closed-loop attribution
	cfg = cfg.withDefaults()
	if cfg.OutDir != "" {
		if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("create output directory: %w", err)
		}
	}
	s := &Session{cfg: cfg, t0: time.Now(), recs: map[string]*recorder{},
		progStop: make(chan struct{}), progDone: make(chan struct{})}
	for _, op := range ops {
		if err := CheckSeriesName(op); err != nil {
			return nil, err
		}
		if s.recs[op] != nil {
			return nil, fmt.Errorf("operation type %q: named twice", op)
		}
		r := newRecorder(op, s.t0, cfg)
		s.recs[op] = r
		s.all = append(s.all, r)
	}
	s.prog = newProgress(cfg.Progress, s.all, s.t0, cfg.CountSeries)
	go func() {
		defer close(s.progDone)
		s.prog.loop(cfg.ProgressInterval, s.progStop)
	}()
	return s, nil
}

// T0 is when the session began.
func (s *Session) T0() time.Time { return s.t0 }

// Over reports whether the session's duration has passed.
func (s *Session) Over() bool { return time.Since(s.t0) >= s.cfg.Duration }

// Op is an operation under way; End records it.
type Op struct {
	r        *recorder
	intended time.Duration
	start    time.Time
}

// Begin starts timing an operation of type op. ok is false (and the operation is not
// counted) once the session's duration has passed or after Close. It panics on an operation
// type not given to NewSession (a programming error).
func (s *Session) Begin(op string) (o Op, ok bool) {
	r := s.recorder(op)
	intended, ok := r.begin(s.cfg.Duration)
	return Op{r: r, intended: intended, start: time.Now()}, ok
}

// BeginAt starts timing an operation of type op that was due at `at` (an open-loop request
// the caller scheduled itself): its latency runs from `at`, not from now, so a late start
// counts against it, and it is attributed to `at`. ok is false after Close, or when it was
// due after the session's duration (or before its start).
func (s *Session) BeginAt(op string, at time.Time) (o Op, ok bool) {
	r := s.recorder(op)
	d := at.Sub(s.t0)
	if d < 0 {
		return Op{}, false
	}
	intended, ok := r.beginAt(s.cfg.Duration, d)
	return Op{r: r, intended: intended, start: at}, ok
}

// End records the operation: its latency from Begin (or BeginAt's due time), or its error type.
func (o Op) End(err error) {
	if o.r == nil {
		return
	}
	o.r.record(o.intended, time.Since(o.start), ClassifyError(err), "")
}

// EndWith records the operation with a latency measured elsewhere (e.g. the time a server
// reports it spent), attributed to when the operation began.
func (o Op) EndWith(latency time.Duration) {
	if o.r == nil {
		return
	}
	o.r.record(o.intended, latency, "", "")
}

// Observe records a latency measured elsewhere (e.g. from a publication's timestamp to its
// delivery), as an operation of type op that began now.
func (s *Session) Observe(op string, latency time.Duration, err error) {
	r := s.recorder(op)
	if intended, ok := r.begin(s.cfg.Duration); ok {
		r.record(intended, latency, ClassifyError(err), "")
	}
}

func (s *Session) recorder(op string) *recorder {
	r := s.recs[op]
	if r == nil {
		panic(fmt.Sprintf("loadgen.Session: operation type %q was not declared", op))
	}
	return r
}

// Close ends the session (status StatusOK, or StatusInterrupted when it ends before its
// duration), counts operations still under way as canceled, writes the outputs and the done
// progress line, and returns the statistics. Later calls return the same.
func (s *Session) Close(interrupted bool) (*Result, error) {
	s.closeOnce.Do(func() {
		status := StatusOK
		end := min(time.Since(s.t0), s.cfg.Duration)
		if interrupted && end < s.cfg.Duration {
			status = StatusInterrupted
		}
		close(s.progStop)
		<-s.progDone
		for _, r := range s.all {
			r.finish(end)
		}
		s.res = &Result{Stats: computeStats(s.all, s.cfg, end, status), Elapsed: end, countSeries: s.cfg.CountSeries}
		status = s.res.Stats.Status
		statsFile := ""
		if s.cfg.OutDir != "" {
			if s.err = writeOutputs(s.cfg.OutDir, s.t0, s.all, s.res.Stats); s.err != nil {
				return
			}
			statsFile = filepath.Join(s.cfg.OutDir, results.StatsFile)
		}
		if err := s.prog.done(s.res.Stats, status, statsFile); err != nil {
			s.err = fmt.Errorf("write done line: %w", err)
		}
	})
	return s.res, s.err
}
