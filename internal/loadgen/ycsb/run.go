package ycsb

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// Phases (YCSB's -load and -t).
const (
	PhaseLoad = "load"
	PhaseRun  = "run"
	PhaseBoth = "both"
)

// Config is one YCSB invocation: the workload, which phases, and how loadgen drives the run
// phase (open loop at Run.Rate or closed loop with Run.Clients; outputs go to Run.OutDir).
type Config struct {
	Workload Workload
	// Phase is load, run or both (the default).
	Phase string
	// Run drives the run phase. Run.Duration may be 0 when Workload.OperationCount is set: the
	// phase then ends when the operations are done.
	Run loadgen.Config
	// LoadClients is the number of closed-loop clients inserting during the load phase
	// (default 32). The load phase uses Run.Timeout per request and writes its outputs, when
	// Run.OutDir is set, to Run.OutDir/load.
	LoadClients int
	// Seed makes the operation, key and value sequence reproducible.
	Seed int64
	// Log receives one line per finished phase (nil: none).
	Log io.Writer
}

// DefaultConfig is workload A against a 1000-record key space, 30 s open loop at 1000 ops/s.
func DefaultConfig() Config {
	w, _ := Preset("a")
	run := loadgen.DefaultConfig()
	run.Rate = 1000
	return Config{Workload: w, Phase: PhaseBoth, Run: run, LoadClients: 32, Seed: 1}
}

// untilDone stands for "no duration" when operationcount bounds the run phase.
const untilDone = 24 * time.Hour

// Validate checks the config; errors name the field.
func (c Config) Validate() error {
	if err := c.Workload.Validate(); err != nil {
		return err
	}
	switch c.Phase {
	case PhaseLoad, PhaseRun, PhaseBoth, "":
	default:
		return fmt.Errorf("phase %q: want load, run or both", c.Phase)
	}
	if c.LoadClients < 0 || c.LoadClients > 10000 {
		return fmt.Errorf("load_clients %d: must be between 1 and 10000 (0: 32)", c.LoadClients)
	}
	run := c.Run
	if c.Phase == PhaseLoad {
		// Only the request timeout of Run applies to the load phase.
		if run.Timeout <= 0 || run.Timeout > time.Minute {
			return fmt.Errorf("timeout %v: must be > 0 and <= 1m", run.Timeout)
		}
		return nil
	}
	if run.Duration == 0 && c.Workload.OperationCount > 0 {
		run.Duration = untilDone
	}
	if run.Duration == 0 {
		return fmt.Errorf("duration: give a duration, or an operationcount to run until it is done")
	}
	return run.Validate()
}

// Result is what the phases measured; a phase not run is nil.
type Result struct {
	Load        *loadgen.Result
	LoadElapsed time.Duration
	Run         *loadgen.Result
}

// Run executes the phases against db. Cancelling ctx interrupts the phase in progress (its
// outputs are still written, see loadgen.Run); a load phase with failed inserts is an error,
// since the run phase would then measure misses.
func Run(ctx context.Context, cfg Config, db DB) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Phase == "" {
		cfg.Phase = PhaseBoth
	}
	if cfg.LoadClients == 0 {
		cfg.LoadClients = 32
	}
	res := &Result{}
	if cfg.Phase != PhaseRun {
		lc := loadgen.Config{Clients: cfg.LoadClients, Duration: untilDone, Timeout: cfg.Run.Timeout, ProgressInterval: time.Second}
		if cfg.Run.OutDir != "" {
			lc.OutDir = filepath.Join(cfg.Run.OutDir, "load")
		}
		start := time.Now()
		lr, err := loadgen.Run(ctx, lc, []loadgen.Series{{Name: "load", Target: loadgen.MixTarget(newLoadMix(cfg.Workload, db, cfg.Seed))}})
		res.Load, res.LoadElapsed = lr, time.Since(start)
		if err != nil {
			return res, fmt.Errorf("load phase: %w", err)
		}
		s := lr.Stats.Series[OpInsert]
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "ycsb load phase: %d records in %.1f s (%.0f inserts/s, p50 %.2f ms, p99 %.2f ms)\n",
				s.OK, res.LoadElapsed.Seconds(), float64(s.OK)/res.LoadElapsed.Seconds(), s.Latency.P50, s.Latency.P99)
		}
		if lr.Stats.Status != loadgen.StatusOK {
			return res, fmt.Errorf("load phase %s after %d of %d records", lr.Stats.Status, s.OK, cfg.Workload.RecordCount)
		}
		if s.Errors > 0 {
			return res, fmt.Errorf("load phase: %d of %d inserts failed (%s)", s.Errors, cfg.Workload.RecordCount, formatErrors(s.ErrorsByType))
		}
	}
	if cfg.Phase == PhaseLoad || ctx.Err() != nil {
		return res, nil
	}
	rc := cfg.Run
	if rc.Duration == 0 {
		rc.Duration = untilDone
	}
	expected := cfg.Workload.RecordCount
	if rc.Rate > 0 && rc.Duration < untilDone {
		expected = int64(rc.Rate * rc.Duration.Seconds())
	}
	mix := newRunMix(cfg.Workload, db, cfg.Seed, expected)
	rr, err := loadgen.Run(ctx, rc, []loadgen.Series{{Name: "ycsb", Target: loadgen.MixTarget(mix)}})
	res.Run = rr
	if err != nil {
		return res, fmt.Errorf("run phase: %w", err)
	}
	return res, nil
}

func formatErrors(m map[string]int64) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
