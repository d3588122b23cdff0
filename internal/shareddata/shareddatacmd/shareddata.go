package shareddatacmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/shareddata/freshness"
	"github.com/continuum-project/continuum/internal/shareddata/maintain"
)

func init() { cli.Register(cli.Top, newSharedDataCmd) }

func newSharedDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shareddata",
		Short: "The NPM platform's tools: its data by hand, maintenance of etcd/kv members, staleness and failover probes",
		Example: `  continuum shareddata set --backend etcd --endpoints http://127.0.0.1:2379 app1 mode=fast
  continuum shareddata subscribe --backend redis-cluster --endpoints n1:6379 --metrics g1
  continuum shareddata maintain --endpoint http://127.0.0.1:2379 --period 10s --duration 5m --out /tmp/maint
  continuum shareddata freshness --backend etcd --write http://n2:2379 --read http://n1:2379 --duration 45s --out /tmp/fresh`,
	}
	cmd.AddCommand(newMaintainCmd(), newFreshnessCmd())
	cmd.AddCommand(sharedDataToolCmds()...)
	return cmd
}

func newMaintainCmd() *cobra.Command {
	cfg := maintain.Config{ProbeInterval: 10 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "maintain",
		Short: "Compact and defragment one etcd or kv member every --period, measuring the defrag downtime a client sees",
		Long: `Every --period, compacts the member's history to its current revision and defragments it (seeds/000's
maintenance with periodicity τ), recording both durations and the database size before compaction
and after defragmentation. A probe reads from the member every --probe-interval; the longest a
probe request waited while a defragmentation ran is that round's downtime. --period 0 only probes.
Writes maintenance.csv (one row per round) and maintenance.json to --out.`,
		Example: `  continuum shareddata maintain --endpoint http://127.0.0.1:2379 --period 10s --duration 5m --out /tmp/maint`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := maintain.Run(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Endpoint, "endpoint", "", "the member's client URL")
	f.DurationVar(&cfg.Period, "period", 0, "maintenance period τ (0: probe only)")
	f.DurationVar(&cfg.ProbeInterval, "probe-interval", cfg.ProbeInterval, "how often the probe reads")
	f.DurationVar(&cfg.Duration, "duration", 0, "how long to run")
	f.DurationVar(&cfg.Warmup, "warmup", 0, "leading part of the run whose probes the whole-run figures leave out")
	f.StringVar(&cfg.OutDir, "out", "", "directory for maintenance.csv and maintenance.json")
	_ = cmd.MarkFlagRequired("endpoint")
	_ = cmd.MarkFlagRequired("duration")
	return cmd
}

func newFreshnessCmd() *cobra.Command {
	var cfg freshness.Config
	cmd := &cobra.Command{
		Use:   "freshness",
		Short: "Measure staleness and write outages: write a counter through one instance, poll the others",
		Long: `Writes an increasing counter to a new key every --interval through the --write instance, while a
reader per --read instance polls it every --poll. The staleness of a write on a reader (series
stale_<reader>) is the time from its acknowledgment until that reader returned it. The longest time
between two acknowledged writes after the warm-up (freshness.json) is the write outage: the
failover duration when an instance was killed or cut off. For etcd, leadership is first moved to
--leader; for a Redis Cluster the key is one whose master is --leader, and its replica is read.`,
		Example: `  continuum shareddata freshness --backend etcd --write http://n2:2379 --read http://n1:2379,http://n3:2379 \
    --leader http://n1:2379 --duration 45s --out /tmp/fresh
  continuum shareddata freshness --backend redis-cluster --write n2:6379 --read n1:6379,n3:6379 --leader n1:6379 --duration 45s --out /tmp/fresh`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Progress = cmd.OutOrStdout()
			_, err := freshness.Run(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Backend, "backend", "", "kv, etcd or redis-cluster")
	f.StringVar(&cfg.Write, "write", "", "the instance to write through")
	f.StringSliceVar(&cfg.Read, "read", nil, "the instances to poll (comma-separated)")
	f.StringVar(&cfg.Leader, "leader", "", "the instance that should order the writes")
	f.DurationVar(&cfg.Interval, "interval", 100*time.Millisecond, "between writes")
	f.DurationVar(&cfg.Poll, "poll", 2*time.Millisecond, "between a reader's reads (the staleness resolution)")
	f.DurationVar(&cfg.Timeout, "timeout", time.Second, "per write")
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "run duration, warm-up included")
	f.DurationVar(&cfg.Warmup, "warmup", 0, "leading part of the run excluded from the figures")
	f.StringVar(&cfg.OutDir, "out", "", "directory for the results files")
	_ = cmd.MarkFlagRequired("backend")
	_ = cmd.MarkFlagRequired("write")
	return cmd
}
