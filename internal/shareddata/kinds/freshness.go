package kinds

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/continuum-project/continuum/internal/results"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/shareddata"
	"github.com/continuum-project/continuum/internal/shareddata/freshness"
	"github.com/continuum-project/continuum/internal/shareddata/shareddatacmd"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[FreshnessConfig]{
		Name:     "shareddata-freshness",
		System:   "shareddata",
		OldNames: []string{"freshness"},
		Role:     kind.RoleWorkload,
		Summary:  "staleness (write acknowledged on one instance until visible on the others) and write outage (failover) of etcd, kv or Redis Cluster",
		Defaults: func() *FreshnessConfig {
			return &FreshnessConfig{Interval: spec.Duration{Duration: freshness.DefaultInterval}, Poll: spec.Duration{Duration: freshness.DefaultPoll}}
		},
		Validate: (*FreshnessConfig).validate,
		Command:  freshnessCommand,
		Overrun:  func(*FreshnessConfig) time.Duration { return time.Minute },
		Metrics:  freshnessMetrics,
	})
}

// FreshnessConfig is the `config:` of a freshness workload.
type FreshnessConfig struct {
	// Write is the component it writes through; Read the components whose copies it polls
	// (etcd, kv); for a Redis Cluster, other members the client may learn the cluster from
	// (the key's replica is read).
	Write string   `yaml:"write"`
	Read  []string `yaml:"read"`
	// Leader is the component that should order the writes: etcd's leader is moved there; for
	// a Redis Cluster the key is one whose master it is. Empty: wherever that is.
	Leader   string        `yaml:"leader,omitempty"`
	Interval spec.Duration `yaml:"interval"` // between writes; default 100ms
	Poll     spec.Duration `yaml:"poll"`     // between a reader's reads; default 2ms
}

// validate reports every problem at once, each with its key and the `continuum shareddata
// freshness` flag it becomes.
func (c *FreshnessConfig) validate() error {
	var errs kind.FieldErrors
	if c.Write == "" {
		errs.Add("write", "--write", "required: name the component to write through")
	}
	if c.Interval.Duration <= 0 {
		errs.Add("interval", "--interval", "%v: must be > 0", c.Interval)
	}
	if c.Poll.Duration <= 0 {
		errs.Add("poll", "--poll", "%v: must be > 0", c.Poll)
	}
	return errs.Err()
}

// endpoint is backendFor for the stores the probe supports (a standalone Redis has no
// replica to be stale or to fail over to).
func endpoint(env kind.Env, name string) (string, string, error) {
	addr, backend, err := backendFor(env, name, 0)
	if err == nil && backend == shareddata.BackendRedis {
		err = fmt.Errorf("component %s is a standalone Redis: freshness needs etcd, kv or a Redis Cluster member", name)
	}
	return addr, backend, err
}

func freshnessCommand(env kind.Env, c *FreshnessConfig) (kind.Command, error) {
	write, backend, err := endpoint(env, c.Write)
	if err != nil {
		return kind.Command{}, fmt.Errorf("freshness %s: %w", env.Instance, err)
	}
	f := shareddatacmd.DefaultFreshnessFlags()
	f.Backend, f.Write = backend, write
	for _, r := range c.Read {
		ep, b, err := endpoint(env, r)
		if err != nil {
			return kind.Command{}, fmt.Errorf("freshness %s: %w", env.Instance, err)
		}
		if b != backend {
			return kind.Command{}, fmt.Errorf("freshness %s: read component %s is %s, write component %s is %s", env.Instance, r, b, c.Write, backend)
		}
		f.Read = append(f.Read, ep)
	}
	if c.Leader != "" {
		ep, _, err := endpoint(env, c.Leader)
		if err != nil {
			return kind.Command{}, fmt.Errorf("freshness %s: %w", env.Instance, err)
		}
		f.Leader = ep
	}
	f.Interval, f.Poll = c.Interval.Duration, c.Poll.Duration
	f.Duration, f.Warmup, f.OutDir = env.Duration, env.Warmup, env.OutDir
	return kind.Command{Args: append([]string{env.Binary, "shareddata", "freshness"},
		cli.Args(shareddatacmd.DefaultFreshnessFlags(), f)...)}, nil
}

// freshnessMetrics reads each instance's freshness.json: freshness/<instance>.
func freshnessMetrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var r freshness.Report
		if results.ReadJSON(filepath.Join(in.OutDir, freshness.ReportFile), &r) != nil {
			continue
		}
		ended, final := 0.0, 0.0
		if r.EndedInOutage {
			ended = 1
		}
		if r.FinalCheck {
			final = 1
		}
		m["freshness/"+in.Name] = map[string]float64{
			"writes": float64(r.Writes), "write_errors": float64(r.WriteErrors), "longest_gap_ms": r.LongestGapMS,
			"outage_ms": r.OutageMS, "gap_start_s": r.GapStartS, "ended_in_outage": ended, "poll_ms": r.PollMS,
			"lost_acknowledged": float64(r.LostAcknowledged), "final_check": final,
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
