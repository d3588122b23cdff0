package kvcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

func init() { cli.Register("load", newLoadKVLagCmd) }

func newLoadKVLagCmd() *cobra.Command {
	def := loadgen.DefaultConfig()
	cfg := kvtarget.LagConfig{Load: def}
	cmd := &cobra.Command{
		Use:   "kv-lag",
		Short: "Measure replication lag between two members of an etcd-API cluster (write on one, visible on the other)",
		Long: `Each probe writes a unique value on --writer and completes when a watch on --reader delivers it,
so the series "lag" holds, per probe, the time from the intended write to its visibility on the
reader (open loop at --rate probes/s). A probe whose write is not visible before --timeout is a
"not_visible" error. With a timeout longer than a partition, the writes made during it complete
after the heal, and their latencies show how long the members took to converge. Results as
'continuum load http' writes them.`,
		Example: `  continuum load kv-lag --writer http://10.0.0.1:2379 --reader http://10.0.0.2:2379 --rate 100 --timeout 30s --out /tmp/lag`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Load.Progress = cmd.OutOrStdout()
			_, err := kvtarget.RunLag(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Writer, "writer", "", "client URL of the member written to (http://HOST:PORT)")
	f.StringVar(&cfg.Reader, "reader", "", "client URL of the member watched (http://HOST:PORT)")
	f.Float64Var(&cfg.Load.Rate, "rate", def.Rate, "probes/s")
	f.DurationVar(&cfg.Load.Duration, "duration", def.Duration, "run duration, warm-up included")
	f.DurationVar(&cfg.Load.Warmup, "warmup", 0, "leading part of the run excluded from stats.json")
	f.DurationVar(&cfg.Load.Timeout, "timeout", def.Timeout, "how long a write may take to become visible on the reader")
	f.StringVar(&cfg.Load.OutDir, "out", "", "directory for the results files (none written if empty)")
	_ = cmd.MarkFlagRequired("writer")
	_ = cmd.MarkFlagRequired("reader")
	return cmd
}
