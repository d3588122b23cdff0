// PACE as an experiment workload: the pace kind, one process per
// producer or consumer, placed on a node and pointed at the store components (etcd, kv, redis)
// it shares data through.

package kinds

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/continuum-project/continuum/internal/results"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/shareddata"
	"github.com/continuum-project/continuum/internal/shareddata/pace"
	"github.com/continuum-project/continuum/internal/shareddata/shareddatacmd"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[Config]{
		Name:     "shareddata-pace",
		System:   "shareddata",
		OldNames: []string{"pace"},
		Role:     kind.RoleWorkload,
		Summary:  "PACE producer or consumer (Calagna et al.) over etcd, kv or redis components; one series per operation type",
		Defaults: func() *Config {
			d := pace.DefaultConfig()
			return &Config{Class: pace.DefaultClass, StateSize: spec.Bytes(d.StateSize), ControlSize: spec.Bytes(d.ControlSize),
				Inference: spec.Duration{Duration: d.Inference}, Mode: d.Mode, Consistency: d.Consistency,
				Timeout: spec.Duration{Duration: d.Timeout}}
		},
		Validate: (*Config).validate,
		Command:  command,
		Overrun:  func(c *Config) time.Duration { return c.Timeout.Duration + time.Minute },
		Metrics:  metrics,
		Progress: paceProgress,
	})
}

// Config is the `config:` of a pace workload.
type Config struct {
	Role  string `yaml:"role"` // producer or consumer
	Group string `yaml:"group"`
	// ID names the producer or consumer (default: the instance's name).
	ID string `yaml:"id,omitempty"`
	// Components are the store instances it talks to: one etcd, kv or redis component (its
	// own node's, or the only one), or several members of one etcd or kv cluster (the client
	// balances over them). A member of a Redis Cluster leads the client to the whole cluster.
	// Port picks the endpoint when a component serves several.
	Components []string `yaml:"components"`
	Port       int      `yaml:"port,omitempty"`
	// Backend overrides the backend derived from the components' kind (e.g. redis-cluster).
	Backend string `yaml:"backend,omitempty"`

	Class       string        `yaml:"class"`        // pulse, ping, burst or wave
	MetricsSize spec.Bytes    `yaml:"metrics_size"` // default: the class's
	Period      spec.Duration `yaml:"period"`       // default: the class's
	StateSize   spec.Bytes    `yaml:"state_size"`   // consumer; default 1MB
	ControlSize spec.Bytes    `yaml:"control_size"` // consumer; default 1kB
	Inference   spec.Duration `yaml:"inference"`    // consumer; default 50ms
	Mode        string        `yaml:"mode"`         // consumer: pace (default) or atomic
	Consistency string        `yaml:"consistency"`  // consumer: linearizable (default), serializable, both
	Timeout     spec.Duration `yaml:"timeout"`      // per operation; default 5s
}

// validate reports every problem at once, each with its key and the `continuum pace` flag it
// becomes (the role is its subcommand); the whole-config check runs once those hold.
func (c *Config) validate() error {
	var errs kind.FieldErrors
	if c.Role != pace.RoleProducer && c.Role != pace.RoleConsumer {
		errs.Add("role", "continuum pace producer|consumer", "%q: want producer or consumer", c.Role)
	}
	errs.AddErr("group", "--group", shareddata.ValidName("group", c.Group))
	if c.ID != "" {
		errs.AddErr("id", "--id", shareddata.ValidName("id", c.ID))
	}
	if len(c.Components) == 0 {
		errs.Add("components", "--endpoints", "name the store instances (etcd, kv or redis) it talks to")
	}
	if c.Backend != "" {
		cfg := shareddata.Config{Backend: c.Backend, Endpoints: []string{"x"}}
		errs.AddErr("backend", "--backend", cfg.Validate())
	}
	if _, err := pace.LookupClass(c.Class); err != nil {
		errs.AddErr("class", "--class", err)
	}
	if len(errs) > 0 {
		return errs.Err()
	}
	cfg := c.paceConfig("check")
	cfg.Store = shareddata.Config{Backend: shareddata.BackendKV, Endpoints: []string{"x"}}
	cfg.Duration = time.Minute
	return cfg.Validate()
}

// paceConfig is the pace.Config the process gets (without store, duration and outputs).
func (c *Config) paceConfig(instance string) pace.Config {
	class, _ := pace.LookupClass(c.Class)
	cfg := pace.DefaultConfig()
	cfg.Role, cfg.Group, cfg.ID = c.Role, c.Group, c.ID
	if cfg.ID == "" {
		cfg.ID = instance
	}
	cfg.MetricsSize, cfg.Period = class.MetricsSize, class.Period
	if c.MetricsSize > 0 {
		cfg.MetricsSize = int(c.MetricsSize)
	}
	if c.Period.Duration > 0 {
		cfg.Period = c.Period.Duration
	}
	cfg.StateSize, cfg.ControlSize = int(c.StateSize), int(c.ControlSize)
	cfg.Inference, cfg.Mode, cfg.Consistency, cfg.Timeout = c.Inference.Duration, c.Mode, c.Consistency, c.Timeout.Duration
	return cfg
}

// store resolves the components into a backend and its endpoints.
func (c *Config) store(env kind.Env) (shareddata.Config, error) {
	var sc shareddata.Config
	for _, name := range c.Components {
		hostPort, backend, err := backendFor(env, name, c.Port)
		if err != nil {
			return sc, err
		}
		if sc.Backend != "" && sc.Backend != backend {
			return sc, fmt.Errorf("components mix %s and %s: a PACE process talks to one store", sc.Backend, backend)
		}
		sc.Backend = backend
		sc.Endpoints = append(sc.Endpoints, hostPort)
	}
	if c.Backend != "" {
		sc.Backend = c.Backend
	}
	return sc, sc.Validate()
}

func command(env kind.Env, c *Config) (kind.Command, error) {
	sc, err := c.store(env)
	if err != nil {
		return kind.Command{}, fmt.Errorf("pace %s: %w", env.Instance, err)
	}
	p := c.paceConfig(env.Instance)
	f := shareddatacmd.DefaultPaceFlags(p.Role)
	store := f.Store // the store's flags the kind does not set keep their defaults
	store.Backend, store.Endpoints = sc.Backend, sc.Endpoints
	f.Config, f.Class = p, c.Class
	f.Store, f.Duration, f.Warmup, f.OutDir = store, env.Duration, env.Warmup, env.OutDir
	flags, err := f.Args()
	if err != nil {
		return kind.Command{}, fmt.Errorf("pace %s: %w", env.Instance, err)
	}
	return kind.Command{Args: append([]string{env.Binary, "pace", p.Role}, flags...)}, nil
}

// metrics reads every instance's pace.json: pace/<instance> with what it counted.
func metrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var r pace.Report
		if results.ReadJSON(filepath.Join(in.OutDir, pace.ReportFile), &r) != nil {
			continue
		}
		m["pace/"+in.Name] = map[string]float64{
			"published": float64(r.Published), "delivered": float64(r.Delivered), "processed": float64(r.Processed),
			"control_delivered": float64(r.ControlDelivered), "gaps": float64(r.Gaps),
			"reconnects": float64(r.Reconnects), "bad_values": float64(r.BadValues),
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
