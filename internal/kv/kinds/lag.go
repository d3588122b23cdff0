package kinds

import (
	"fmt"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/kv/kvcmd"
	"github.com/continuum-project/continuum/internal/spec"
)

// The "kv-lag" workload runs `continuum load kv-lag`: replication-lag probes that write on one
// member of an etcd-API cluster (any component with an etcd-v3 endpoint: kv or etcd) and wait
// until another member shows the write (package loadgen/kvtarget, LagProbe).
func init() {
	kind.Register(kind.Def[LagConfig]{
		Name:     "kv-lag",
		System:   "kv",
		Role:     kind.RoleWorkload,
		Summary:  "replication lag: write on one kv/etcd member, time until a watch on another sees it",
		Defaults: func() *LagConfig { return &LagConfig{Rate: 100, Timeout: spec.Duration{Duration: 30 * time.Second}} },
		Validate: (*LagConfig).validate,
		Command:  lagCommand,
		// A probe written just before the end may wait its whole timeout.
		Overrun:  func(c *LagConfig) time.Duration { return c.Timeout.Duration + 15*time.Second },
		Progress: lagProgress,
	})
}

// LagConfig is the `config:` of a kv-lag workload.
type LagConfig struct {
	Writer string  `yaml:"writer"` // component written to
	Reader string  `yaml:"reader"` // component watched
	Rate   float64 `yaml:"rate"`   // probes/s (default 100)
	// Timeout is how long a write may take to become visible (default 30s: longer than the
	// partitions of the shipped scenarios, so writes made during one complete after the heal).
	Timeout spec.Duration `yaml:"timeout"`
}

// validate reports every problem at once, each with its key and the `continuum load kv-lag`
// flag it becomes.
func (c *LagConfig) validate() error {
	var errs kind.FieldErrors
	if c.Writer == "" {
		errs.Add("writer", "--writer", "required: the kv or etcd component to write to")
	}
	if c.Reader == "" {
		errs.Add("reader", "--reader", "required: the kv or etcd component to watch")
	} else if c.Reader == c.Writer {
		errs.Add("reader", "--reader", "writer and reader are both %q: lag is measured between two members", c.Writer)
	}
	if c.Rate <= 0 || c.Rate > 100000 {
		errs.Add("rate", "--rate", "%g: must be in (0, 100000] probes/s", c.Rate)
	}
	if c.Timeout.Duration <= 0 {
		errs.Add("timeout", "--timeout", "%v: must be > 0", c.Timeout)
	}
	return errs.Err()
}

func lagCommand(env kind.Env, c *LagConfig) (kind.Command, error) {
	w, err := env.Store(c.Writer, 0, kind.ProtocolEtcdV3)
	if err != nil {
		return kind.Command{}, fmt.Errorf("writer: %w", err)
	}
	r, err := env.Store(c.Reader, 0, kind.ProtocolEtcdV3)
	if err != nil {
		return kind.Command{}, fmt.Errorf("reader: %w", err)
	}
	f := kvcmd.DefaultLagFlags()
	f.Config.Writer, f.Config.Reader = w.Addr, r.Addr
	f.Config.Load.Rate, f.Config.Load.Timeout = c.Rate, c.Timeout.Duration
	f.Config.Load.Duration, f.Config.Load.Warmup, f.Config.Load.OutDir = env.Duration, env.Warmup, env.OutDir
	return kind.Command{Args: append([]string{env.Binary, "load", "kv-lag"}, cli.Args(kvcmd.DefaultLagFlags(), f)...)}, nil
}
