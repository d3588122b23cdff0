package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/shareddata/maintain"
)

func init() { commands = append(commands, newSharedDataCmd) }

func newSharedDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shareddata",
		Short: "The NPM platform's tools: maintenance of etcd/kv members",
	}
	cmd.AddCommand(newMaintainCmd())
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
