package kinds

import (
	"net"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[YCSBConfig]{
		Name:    "ycsb",
		System:  "baselines",
		Doc:     "docs/scenarios.md#instances-components-workloads",
		Role:    kind.RoleWorkload,
		Summary: "YCSB core workload A-F (load then run phase) against etcd, kv or redis; one series per operation type",
		Defaults: func() *YCSBConfig {
			return &YCSBConfig{Workload: "a", RecordCount: 1000, Phase: ycsb.PhaseBoth, Timeout: spec.Duration{Duration: time.Second}}
		},
		Validate: (*YCSBConfig).validate,
		Command:  ycsbCommand,
		Overrun:  func(c *YCSBConfig) time.Duration { return c.overrun() },
		// Operations of every type, the load phase's inserts included.
		Progress: func(map[string]*YCSBConfig) kind.Progress {
			return loadgen.Follow(func(t loadgen.ProgressLine) string {
				return loadgen.CountsText(t.ThroughputRPS, t.Sent, t.Errors, "ops")
			})
		},
	})
}

// YCSBConfig is the `config:` of a ycsb workload: one target (a URL or a component) and the
// workload. The load phase runs first, before the run phase's duration starts; the runner
// allows it load_time beyond the scenario's duration.
type YCSBConfig struct {
	// Target is etcd=http://HOST:PORT, kv=http://HOST:PORT or redis=HOST:PORT; or Component
	// names an etcd, kv or redis instance (reached at its node on its port, or Port).
	Target    string `yaml:"target,omitempty"`
	Component string `yaml:"component,omitempty"`
	Port      int    `yaml:"port,omitempty"`

	Workload            string        `yaml:"workload"`    // a..f (default a)
	RecordCount         int64         `yaml:"recordcount"` // default 1000
	OperationCount      int64         `yaml:"operationcount"`
	FieldCount          int           `yaml:"fieldcount"`          // 0: the preset's (10)
	FieldLength         int           `yaml:"fieldlength"`         // 0: the preset's (100)
	RequestDistribution string        `yaml:"requestdistribution"` // empty: the preset's
	Phase               string        `yaml:"phase"`               // load, run or both (default)
	Rate                float64       `yaml:"rate"`                // open loop: operations/s
	Clients             int           `yaml:"clients"`             // closed loop
	Timeout             spec.Duration `yaml:"timeout"`             // default 1s
	MaxInflight         int           `yaml:"max_inflight"`
	LoadClients         int           `yaml:"load_clients"` // default 32
	Conns               int           `yaml:"conns"`        // client connections (default per store)
	// LoadTime is the time the load phase may take (default 20s plus 1ms per record): the
	// runner waits that much longer than the scenario's duration before it stops the workload.
	LoadTime spec.Duration `yaml:"load_time,omitempty"`
}

// overrun is the time past the run's duration the workload may need: its load phase, the last
// requests' timeout, writing its outputs.
func (c *YCSBConfig) overrun() time.Duration {
	d := c.Timeout.Duration + 15*time.Second
	if c.Phase != ycsb.PhaseRun {
		d += c.loadTime()
	}
	return d
}

func (c *YCSBConfig) loadTime() time.Duration {
	if c.LoadTime.Duration > 0 {
		return c.LoadTime.Duration
	}
	return 20*time.Second + time.Duration(c.RecordCount)*time.Millisecond
}

// validate reports every problem at once, each with its key and the `continuum load ycsb` flag
// it becomes; the workload's own Validate then checks the preset with the keys' overrides
// (its proportions, the record's size), reported at workload.
func (c *YCSBConfig) validate() error {
	var errs kind.FieldErrors
	if (c.Target == "") == (c.Component == "") {
		errs.Add("target", "--target", "give exactly one of target (etcd=http://HOST:PORT, kv=..., redis=HOST:PORT) and component")
	} else if c.Target != "" {
		if _, err := kvtarget.ParseTarget(c.Target); err != nil {
			errs.AddErr("target", "--target", err)
		}
	}
	if c.Target != "" && c.Port != 0 {
		errs.Add("port", "--target", "port goes with component, not target")
	} else if c.Port < 0 || c.Port > 65535 {
		errs.Add("port", "--target", "%d: must be between 1 and 65535", c.Port)
	}
	errs.CheckLoad(c.Rate, c.Clients, c.Timeout.Duration, "operations/s")
	for _, n := range []struct {
		key, flag string
		v         int
	}{{"max_inflight", "--max-inflight", c.MaxInflight}, {"load_clients", "--load-clients", c.LoadClients}, {"conns", "--conns", c.Conns},
		{"fieldcount", "--fieldcount", c.FieldCount}, {"fieldlength", "--fieldlength", c.FieldLength}} {
		if n.v < 0 {
			errs.Add(n.key, n.flag, "%d: must be >= 0 (0: the default)", n.v)
		}
	}
	if c.LoadTime.Duration < 0 {
		errs.Add("load_time", "", "%v: must be > 0 (or absent: 20s plus 1ms per record)", c.LoadTime)
	}
	if c.RecordCount < 1 || c.RecordCount > 1<<40 {
		errs.Add("recordcount", "--recordcount", "%d: must be between 1 and 2^40", c.RecordCount)
	}
	if c.OperationCount < 0 {
		errs.Add("operationcount", "--operationcount", "%d: must be >= 0 (0: until the duration ends)", c.OperationCount)
	}
	switch c.RequestDistribution {
	case "", ycsb.DistUniform, ycsb.DistZipfian, ycsb.DistLatest:
	default:
		errs.Add("requestdistribution", "--requestdistribution", "%q: want uniform, zipfian or latest", c.RequestDistribution)
	}
	switch c.Phase {
	case ycsb.PhaseLoad, ycsb.PhaseRun, ycsb.PhaseBoth:
	default:
		errs.Add("phase", "--phase", "%q: want load, run or both", c.Phase)
	}
	w, err := ycsb.Preset(c.Workload)
	if err != nil {
		errs.AddErr("workload", "--workload", err)
	}
	if len(errs) > 0 {
		return errs.Err()
	}
	w.RecordCount, w.OperationCount = c.RecordCount, c.OperationCount
	if c.FieldCount != 0 {
		w.FieldCount = c.FieldCount
	}
	if c.FieldLength != 0 {
		w.FieldLength = c.FieldLength
	}
	if c.RequestDistribution != "" {
		w.RequestDistribution = c.RequestDistribution
	}
	errs.AddErr("workload", "--workload", w.Validate())
	return errs.Err()
}

// target resolves the workload's target; a component becomes etcd=http://<its node>:<port> or
// redis=<its node>:<port>, from the endpoint it serves the etcd v3 API or Redis on.
func (c *YCSBConfig) target(env kind.Env) (string, error) {
	if c.Target != "" {
		return c.Target, nil
	}
	node, ep, err := env.Endpoint(c.Component, c.Port, kind.ProtocolEtcdV3, kind.ProtocolRedis)
	if err != nil {
		return "", err
	}
	hostPort := net.JoinHostPort(node, strconv.Itoa(ep.Port))
	if ep.Protocol == kind.ProtocolRedis {
		return kvtarget.KindRedis + "=" + hostPort, nil
	}
	return kvtarget.KindEtcd + "=http://" + hostPort, nil
}

func ycsbCommand(env kind.Env, c *YCSBConfig) (kind.Command, error) {
	target, err := c.target(env)
	if err != nil {
		return kind.Command{}, err
	}
	f := kvtarget.DefaultYCSBFlags()
	f.Target, f.Workload, f.Config.YCSB.Phase = target, c.Workload, c.Phase
	w, run := &f.Config.YCSB.Workload, &f.Config.YCSB.Run
	w.RecordCount = c.RecordCount
	if c.OperationCount > 0 {
		w.OperationCount = c.OperationCount
	}
	if c.FieldCount > 0 {
		w.FieldCount = c.FieldCount
	}
	if c.FieldLength > 0 {
		w.FieldLength = c.FieldLength
	}
	w.RequestDistribution = c.RequestDistribution
	if c.Clients > 0 {
		run.Clients = c.Clients // without --rate: the closed loop
	} else {
		run.Rate = c.Rate
	}
	run.Timeout = c.Timeout.Duration
	if c.MaxInflight > 0 {
		run.MaxInflight = c.MaxInflight
	}
	if c.LoadClients > 0 {
		f.Config.YCSB.LoadClients = c.LoadClients
	}
	f.Config.Conns = c.Conns
	f.Duration, run.Warmup, run.OutDir, f.Config.YCSB.Seed = env.Duration, env.Warmup, env.OutDir, env.Seed
	args := append([]string{env.Binary, "load", "ycsb"}, cli.Args(kvtarget.DefaultYCSBFlags(), f)...)
	return kind.Command{Args: args}, nil
}
