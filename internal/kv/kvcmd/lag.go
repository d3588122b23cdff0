package kvcmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

func init() { cli.Register("load", newLoadKVLagCmd) }

// LagFlags are `continuum load kv-lag`'s flags; the kv-lag kind renders its command line from
// the same struct.
type LagFlags struct {
	Config kvtarget.LagConfig
}

// DefaultLagFlags are the defaults of `continuum load kv-lag`: the load engine's.
func DefaultLagFlags() LagFlags {
	return LagFlags{Config: kvtarget.LagConfig{Load: loadgen.DefaultConfig()}}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *LagFlags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringVar(&cfg.Writer, "writer", cfg.Writer, "client URL of the member written to (http://HOST:PORT)")
	fs.StringVar(&cfg.Reader, "reader", cfg.Reader, "client URL of the member watched (http://HOST:PORT)")
	fs.Float64Var(&cfg.Load.Rate, "rate", cfg.Load.Rate, "probes/s")
	fs.DurationVar(&cfg.Load.Duration, "duration", cfg.Load.Duration, "run duration, warm-up included")
	fs.DurationVar(&cfg.Load.Warmup, "warmup", cfg.Load.Warmup, "leading part of the run excluded from stats.json")
	fs.DurationVar(&cfg.Load.Timeout, "timeout", cfg.Load.Timeout, "how long a write may take to become visible on the reader")
	fs.StringVar(&cfg.Load.OutDir, "out", cfg.Load.OutDir, "directory for the results files (none written if empty)")
}

func newLoadKVLagCmd() *cobra.Command {
	flags := DefaultLagFlags()
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
			cfg := flags.Config
			cfg.Load.Progress = cmd.OutOrStdout()
			_, err := kvtarget.RunLag(cmd.Context(), cfg)
			return err
		},
	}
	flags.Bind(cmd.Flags())
	_ = cmd.MarkFlagRequired("writer")
	_ = cmd.MarkFlagRequired("reader")
	return cmd
}
