package kinds

import (
	"errors"
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

func (c *LagConfig) validate() error {
	switch {
	case c.Writer == "" || c.Reader == "":
		return errors.New("writer and reader are required: the kv or etcd components to write to and to watch")
	case c.Writer == c.Reader:
		return fmt.Errorf("writer and reader are both %q: lag is measured between two members", c.Writer)
	case c.Rate <= 0 || c.Rate > 100000:
		return fmt.Errorf("rate %g: must be in (0, 100000] probes/s", c.Rate)
	case c.Timeout.Duration <= 0:
		return fmt.Errorf("timeout %v: must be > 0", c.Timeout)
	}
	return nil
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
