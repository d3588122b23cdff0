package pace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/shareddata"
)

// Roles.
const (
	RoleProducer = "producer"
	RoleConsumer = "consumer"
)

// Consistencies a consumer reads with: one of them, or both alternating event by event.
const (
	ReadLinearizable = "linearizable"
	ReadSerializable = "serializable"
	ReadBoth         = "both"
)

// Config is one PACE process: a producer or a consumer.
type Config struct {
	Store shareddata.Config
	Role  string
	Group string
	ID    string
	// MetricsSize and Period are the traffic class's μ and ν (the consumer sizes its queue
	// from MetricsSize; Period is the producer's).
	MetricsSize int
	Period      time.Duration

	// Consumer only.
	StateSize   int           // bytes; the queue holds StateSize/MetricsSize entries (at least 1)
	ControlSize int           // bytes
	Inference   time.Duration // emulated inference time
	Mode        string        // ModePACE or ModeAtomic
	Consistency string        // ReadLinearizable, ReadSerializable or ReadBoth

	// Measurement.
	Duration, Warmup time.Duration
	// Timeout bounds each operation (default 5 s).
	Timeout  time.Duration
	OutDir   string
	Progress io.Writer
	// OnReady, if set, is called once the process measures and listens (a consumer has
	// filled its queue and subscribed; a producer is about to publish).
	OnReady func()
}

// DefaultConfig is a Pulse-class linearizable consumer or producer in PACE mode.
func DefaultConfig() Config {
	c := Classes[DefaultClass]
	return Config{MetricsSize: c.MetricsSize, Period: c.Period, StateSize: DefaultStateSize,
		ControlSize: DefaultControlSize, Inference: DefaultInference, Mode: ModePACE,
		Consistency: ReadLinearizable, Duration: 30 * time.Second, Timeout: 5 * time.Second}
}

// Validate checks the config; errors name the field and what is allowed.
func (c *Config) Validate() error {
	if err := c.Store.Validate(); err != nil {
		return err
	}
	if c.Role != RoleProducer && c.Role != RoleConsumer {
		return fmt.Errorf("role %q: want producer or consumer", c.Role)
	}
	if err := shareddata.ValidName("group", c.Group); err != nil {
		return err
	}
	if err := shareddata.ValidName("id", c.ID); err != nil {
		return err
	}
	switch {
	case c.MetricsSize < 32 || c.MetricsSize > 1<<20:
		return fmt.Errorf("metrics size %d: want 32 bytes to 1 MiB", c.MetricsSize)
	case c.Period < time.Millisecond:
		return fmt.Errorf("period %v: must be >= 1ms", c.Period)
	case c.Duration <= 0 || c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("duration %v, warmup %v: want duration > 0 and 0 <= warmup < duration", c.Duration, c.Warmup)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout %v: must be > 0", c.Timeout)
	}
	if c.Role == RoleProducer {
		return nil
	}
	switch {
	case c.StateSize < c.MetricsSize || c.StateSize > 64<<20:
		return fmt.Errorf("state size %d: want from the metrics size (%d) to 64 MiB", c.StateSize, c.MetricsSize)
	case c.StateSize/c.MetricsSize > shareddata.MaxStateCapacity:
		return fmt.Errorf("state size %d / metrics size %d = %d entries: at most %d", c.StateSize, c.MetricsSize,
			c.StateSize/c.MetricsSize, shareddata.MaxStateCapacity)
	case c.ControlSize < 64 || c.ControlSize > 1<<20:
		return fmt.Errorf("control size %d: want 64 bytes to 1 MiB", c.ControlSize)
	case c.Inference < 0:
		return fmt.Errorf("inference %v: must be >= 0", c.Inference)
	case c.Mode != ModePACE && c.Mode != ModeAtomic:
		return fmt.Errorf("mode %q: want pace (the seed's separate round trips) or atomic", c.Mode)
	case c.Consistency != ReadLinearizable && c.Consistency != ReadSerializable && c.Consistency != ReadBoth:
		return fmt.Errorf("consistency %q: want linearizable, serializable or both", c.Consistency)
	}
	return nil
}

// capacity is the consumer's queue length: state size / metrics size (seeds/000 §5.2).
func (c *Config) capacity() int { return max(1, c.StateSize/c.MetricsSize) }

// Report is what a PACE process counted, written to OutDir/pace.json beside the operation
// series.
type Report struct {
	Role    string `json:"role"`
	Group   string `json:"group"`
	ID      string `json:"id"`
	Backend string `json:"backend"`
	// Producer: metrics published. Consumer: metrics delivered, and processed (control
	// published for them).
	Published int64 `json:"published,omitempty"`
	Delivered int64 `json:"delivered,omitempty"`
	Processed int64 `json:"processed,omitempty"`
	// Producer: control delivered.
	ControlDelivered int64 `json:"control_delivered,omitempty"`
	// Gaps are history lost before delivery; Reconnects are subscription resumptions;
	// BadValues are deliveries without a PACE header.
	Gaps       int64 `json:"gaps"`
	Reconnects int   `json:"reconnects"`
	BadValues  int64 `json:"bad_values"`
	// Capacity is a consumer's queue length.
	Capacity int `json:"capacity,omitempty"`
}

// ReportFile is the name of the Report in OutDir.
const ReportFile = "pace.json"

// Run runs one producer or consumer for cfg.Duration (or until ctx ends) and writes its
// outputs. A consumer first fills its state queue to capacity, outside the measured time, so
// every read returns the full state as in the seed's steady state.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, err := shareddata.Open(octx, cfg.Store)
	cancel()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rep := &Report{Role: cfg.Role, Group: cfg.Group, ID: cfg.ID, Backend: cfg.Store.Backend}
	var ops []string
	var run func(ctx context.Context, sess *loadgen.Session) error
	if cfg.Role == RoleProducer {
		ops = []string{OpPut, OpCtrl, OpLoop}
		p := &producer{cfg: cfg, st: st, rep: rep}
		run = p.run
	} else {
		rep.Capacity = cfg.capacity()
		ops = []string{OpNotify, OpProcess, OpPut}
		if cfg.Mode == ModeAtomic {
			ops = append(ops, OpPush)
		} else {
			ops = append(ops, OpDel)
			if cfg.Consistency != ReadSerializable {
				ops = append(ops, OpGetLin)
			}
			if cfg.Consistency != ReadLinearizable {
				ops = append(ops, OpGetSer)
			}
		}
		c := &consumer{cfg: cfg, st: st, rep: rep}
		if err := c.fill(ctx); err != nil {
			return nil, err
		}
		run = c.run
	}
	sess, err := loadgen.NewSession(loadgen.Config{Duration: cfg.Duration, Warmup: cfg.Warmup,
		OutDir: cfg.OutDir, Progress: cfg.Progress}, ops)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithDeadline(ctx, sess.T0().Add(cfg.Duration))
	runErr := run(rctx, sess)
	stop()
	res, err := sess.Close(ctx.Err() != nil)
	if err != nil {
		return rep, err
	}
	if cfg.OutDir != "" {
		if err := results.WriteJSON(filepath.Join(cfg.OutDir, ReportFile), rep); err != nil {
			return rep, err
		}
	}
	if runErr != nil && !errors.Is(runErr, context.DeadlineExceeded) && !errors.Is(runErr, context.Canceled) {
		return rep, runErr
	}
	return rep, res.Failure()
}

// timed runs one operation of type op and records it. Like a request of loadgen.Run, an
// operation under way when the run ends may finish (within timeout), so the end of the run
// does not count as the store's failure.
func timed(ctx context.Context, sess *loadgen.Session, timeout time.Duration, op string, f func(ctx context.Context) error) error {
	o, ok := sess.Begin(op)
	if !ok {
		return context.DeadlineExceeded
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	err := f(octx)
	cancel()
	o.End(err)
	return err
}
