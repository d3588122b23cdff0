package shareddatacmd

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/shareddata/freshness"
	"github.com/continuum-project/continuum/internal/shareddata/maintain"
)

func init() { cli.RegisterSystem("shareddata", newSharedDataCmd) }

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

// MaintainFlags are `continuum shareddata maintain`'s flags: the loop's maintain.Config. The
// maintenance kind renders its command line from the same struct (cli.Args), so each flag's
// name and default is written once, in Bind and DefaultMaintainFlags.
type MaintainFlags struct {
	maintain.Config
}

// DefaultMaintainFlags are the defaults of `continuum shareddata maintain`'s flags.
func DefaultMaintainFlags() MaintainFlags {
	return MaintainFlags{maintain.Config{ProbeInterval: maintain.DefaultProbeInterval}}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *MaintainFlags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringVar(&cfg.Endpoint, "endpoint", cfg.Endpoint, "the member's client URL")
	fs.DurationVar(&cfg.Period, "period", cfg.Period, "maintenance period τ (0: probe only)")
	fs.DurationVar(&cfg.ProbeInterval, "probe-interval", cfg.ProbeInterval, "how often the probe reads")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of the run whose probes the whole-run figures leave out")
	fs.StringVar(&cfg.OutDir, "out", cfg.OutDir, "directory for maintenance.csv and maintenance.json")
}

func newMaintainCmd() *cobra.Command {
	flags := DefaultMaintainFlags()
	cmd := &cobra.Command{
		Use:   "maintain",
		Short: "Compact and defragment one etcd or kv member every --period, measuring the defrag downtime a client sees",
		Long: `Every --period, compacts the member's history to its current revision and defragments it (the NPM
platform paper's maintenance with periodicity τ; docs/seeds.md), recording both durations and the
database size before compaction and after defragmentation. A probe reads from the member every --probe-interval; the longest a
probe request waited while a defragmentation ran is that round's downtime. --period 0 only probes.
Writes maintenance.csv (one row per round) and maintenance.json to --out.`,
		Example: `  continuum shareddata maintain --endpoint http://127.0.0.1:2379 --period 10s --duration 5m --out /tmp/maint`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := maintain.Run(cmd.Context(), flags.Config)
			return err
		},
	}
	flags.Bind(cmd.Flags())
	_ = cmd.MarkFlagRequired("endpoint")
	_ = cmd.MarkFlagRequired("duration")
	return cmd
}

// FreshnessFlags are `continuum shareddata freshness`'s flags: the probe's freshness.Config.
// The freshness kind renders its command line from the same struct (cli.Args), so each flag's
// name and default is written once, in Bind and DefaultFreshnessFlags.
type FreshnessFlags struct {
	freshness.Config
}

// DefaultFreshnessFlags are the defaults of `continuum shareddata freshness`'s flags: the
// probe's, for 30 seconds.
func DefaultFreshnessFlags() FreshnessFlags {
	return FreshnessFlags{freshness.Config{Interval: freshness.DefaultInterval, Poll: freshness.DefaultPoll,
		Timeout: freshness.DefaultTimeout, Duration: 30 * time.Second}}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *FreshnessFlags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringVar(&cfg.Backend, "backend", cfg.Backend, "kv, etcd or redis-cluster")
	fs.StringVar(&cfg.Write, "write", cfg.Write, "the instance to write through")
	fs.StringSliceVar(&cfg.Read, "read", cfg.Read, "the instances to poll (comma-separated)")
	fs.StringVar(&cfg.Leader, "leader", cfg.Leader, "the instance that should order the writes")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "between writes")
	fs.DurationVar(&cfg.Poll, "poll", cfg.Poll, "between a reader's reads (the staleness resolution)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per write")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "run duration, warm-up included")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of the run excluded from the figures")
	fs.StringVar(&cfg.OutDir, "out", cfg.OutDir, "directory for the results files")
}

func newFreshnessCmd() *cobra.Command {
	flags := DefaultFreshnessFlags()
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
			cfg := flags.Config
			cfg.Progress = cmd.OutOrStdout()
			_, err := freshness.Run(cmd.Context(), cfg)
			return err
		},
	}
	flags.Bind(cmd.Flags())
	_ = cmd.MarkFlagRequired("backend")
	_ = cmd.MarkFlagRequired("write")
	return cmd
}
