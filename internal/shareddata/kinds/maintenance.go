// Package kinds registers the shared data platform's experiment kinds and its report section:
// the PACE producer/consumer workload (pace), the maintenance loop that runs next to an etcd or
// kv member (seeds/000's compaction + defragmentation every τ, with a probe that measures the
// defrag downtime a client sees), and the freshness probe (staleness and write outage after a
// fault).
package kinds

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/results"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/shareddata/maintain"
	"github.com/continuum-project/continuum/internal/shareddata/shareddatacmd"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[MaintenanceConfig]{
		Name:     "shareddata-maintenance",
		System:   "shareddata",
		OldNames: []string{"maintenance"},
		Role:     kind.RoleWorkload,
		Summary:  "compaction + defragmentation of one etcd or kv member every period (0: probe only), timing both and the defrag downtime a client sees",
		Defaults: func() *MaintenanceConfig {
			return &MaintenanceConfig{ProbeInterval: spec.Duration{Duration: maintain.DefaultProbeInterval}}
		},
		Validate: (*MaintenanceConfig).validate,
		Command:  maintenanceCommand,
		Overrun:  func(*MaintenanceConfig) time.Duration { return time.Minute },
		Metrics:  maintenanceMetrics,
		// Its rounds and summary; it measures no requests (no stats.json or time series).
		Outputs: []string{maintain.RoundsFile, maintain.SummaryFile},
	})
}

// MaintenanceConfig is the `config:` of a maintenance workload; place it on its member's node.
type MaintenanceConfig struct {
	// Component is the etcd or kv member it maintains and probes.
	Component string `yaml:"component"`
	Port      int    `yaml:"port,omitempty"`
	// Period is τ (0: no maintenance, only the probe: the baseline downtime).
	Period        spec.Duration `yaml:"period"`
	ProbeInterval spec.Duration `yaml:"probe_interval"` // default 10ms
}

// validate reports every problem at once, each with its key and the `continuum shareddata
// maintain` flag it becomes; maintain.Config.Validate then checks what the keys render.
func (c *MaintenanceConfig) validate() error {
	var errs kind.FieldErrors
	if c.Component == "" {
		errs.Add("component", "--endpoint", "required: name the etcd or kv member to maintain")
	}
	if c.Port < 0 || c.Port > 65535 {
		errs.Add("port", "--endpoint", "%d: must be between 1 and 65535 (0: the member's client port)", c.Port)
	}
	if p := c.Period.Duration; p < 0 || p > 0 && p < 100*time.Millisecond {
		errs.Add("period", "--period", "%v: at least 100ms (0: probe only)", c.Period)
	}
	if c.ProbeInterval.Duration < 0 {
		errs.Add("probe_interval", "--probe-interval", "%v: must be >= 0 (0: %v)", c.ProbeInterval, maintain.DefaultProbeInterval)
	}
	if len(errs) > 0 {
		return errs.Err()
	}
	cfg := maintain.Config{Endpoint: "x", Period: c.Period.Duration, ProbeInterval: c.ProbeInterval.Duration, Duration: time.Second}
	return cfg.Validate()
}

func maintenanceCommand(env kind.Env, c *MaintenanceConfig) (kind.Command, error) {
	node, ep, err := env.Endpoint(c.Component, c.Port, kind.ProtocolEtcdV3)
	if err != nil {
		return kind.Command{}, fmt.Errorf("maintenance %s: %w", env.Instance, err)
	}
	f := shareddatacmd.DefaultMaintainFlags()
	f.Endpoint = "http://" + net.JoinHostPort(node, strconv.Itoa(ep.Port))
	f.Period, f.ProbeInterval = c.Period.Duration, c.ProbeInterval.Duration
	f.Duration, f.Warmup, f.OutDir = env.Duration, env.Warmup, env.OutDir
	return kind.Command{Args: append([]string{env.Binary, "shareddata", "maintain"},
		cli.Args(shareddatacmd.DefaultMaintainFlags(), f)...)}, nil
}

// maintenanceMetrics reads each instance's maintenance.json: maintenance/<instance>.
func maintenanceMetrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var s maintain.Summary
		if results.ReadJSON(filepath.Join(in.OutDir, maintain.SummaryFile), &s) != nil {
			continue
		}
		const mib = 1 << 20
		m["maintenance/"+in.Name] = map[string]float64{
			"period_s": s.PeriodS, "rounds": float64(s.Rounds), "failed": float64(s.Failed),
			"compact_ms_p50": s.CompactMSP50, "defrag_ms_p50": s.DefragMSP50, "defrag_ms_max": s.DefragMSMax,
			"downtime_ms_p50": s.DowntimeMSP50, "downtime_ms_max": s.DowntimeMSMax,
			"db_before_mib_max": float64(s.DBBeforeMax) / mib, "db_after_mib_min": float64(s.DBAfterMin) / mib,
			"probes": float64(s.Probes), "probe_failures": float64(s.ProbeFailures), "probe_max_ms": s.ProbeMaxMS,
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
