package shareddatacmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/shareddata"
	"github.com/continuum-project/continuum/internal/shareddata/pace"
)

func init() { cli.Register(cli.Top, newPaceCmd) }

func newPaceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pace",
		Short: "PACE (seeds/000): NPM producers and consumers over the shared data platform, measured per operation",
		Long: `One PACE producer or consumer. A producer publishes metrics of --class size every period for
its --group and measures its puts, the control it receives (ctrl_notify) and the whole control loop
(loop: its metrics published until the control answering them arrives). A consumer reacts to every
metrics publication of its group: --mode pace runs the seed's seven steps (read the queue's indices,
delete the oldest entry, put the new one, put the indices, read the whole state, infer, put control),
each a separate round trip; --mode atomic replaces the first five with one atomic push. The state
queue holds --state-size / metrics size entries and is filled before measuring starts.

Writes stats.json, timeseries.csv, percentiles.csv, latency.hlog, errors.csv and pace.json to --out,
and one JSON progress line per second on stdout.`,
		Example: `  continuum pace consumer --backend etcd --endpoints http://127.0.0.1:2379 --group g1 --id c1 --class wave --out /tmp/c1
  continuum pace producer --backend etcd --endpoints http://127.0.0.1:2379 --group g1 --id p1 --class wave --out /tmp/p1
  continuum pace consumer --backend redis-cluster --endpoints 10.0.0.2:7000,10.0.0.3:7000 --group g1 --id c1 --mode atomic --out /tmp/c1`,
	}
	cmd.AddCommand(newPaceRoleCmd(pace.RoleProducer), newPaceRoleCmd(pace.RoleConsumer))
	return cmd
}

func newPaceRoleCmd(role string) *cobra.Command {
	cfg := pace.DefaultConfig()
	cfg.Role = role
	var class string
	cmd := &cobra.Command{
		Use:   role,
		Short: "Run one PACE " + role,
		Example: "  continuum pace " + role + " --backend etcd --endpoints http://127.0.0.1:2379 --group g1 --id " + role[:1] + "1 --class wave --duration 60s --out /tmp/" + role[:1] + "1\n" +
			"  continuum pace " + role + " --backend redis --endpoints 127.0.0.1:6379 --group g1 --id " + role[:1] + "1 --class pulse --out /tmp/" + role[:1] + "1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := pace.LookupClass(class)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("metrics-size") {
				cfg.MetricsSize = c.MetricsSize
			}
			if !cmd.Flags().Changed("period") {
				cfg.Period = c.Period
			}
			cfg.Progress = cmd.OutOrStdout()
			_, err = pace.Run(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	storeFlags(f, &cfg.Store)
	f.StringVar(&cfg.Group, "group", "", "the group of producers and consumers")
	f.StringVar(&cfg.ID, "id", "", "this "+role+"'s name")
	f.StringVar(&class, "class", "pulse", "traffic class: pulse (1 kB, 1 s), ping (1 kB, 100 ms), burst (100 kB, 1 s), wave (100 kB, 100 ms)")
	f.IntVar(&cfg.MetricsSize, "metrics-size", cfg.MetricsSize, "metrics size in bytes (default: the class's)")
	f.DurationVar(&cfg.Period, "period", cfg.Period, "producer: metrics period (default: the class's)")
	if role == pace.RoleConsumer {
		f.IntVar(&cfg.StateSize, "state-size", cfg.StateSize, "state size in bytes")
		f.IntVar(&cfg.ControlSize, "control-size", cfg.ControlSize, "control size in bytes")
		f.DurationVar(&cfg.Inference, "inference", cfg.Inference, "emulated inference time")
		f.StringVar(&cfg.Mode, "mode", cfg.Mode, "pace (the seed's separate round trips) or atomic (one atomic state push)")
		f.StringVar(&cfg.Consistency, "consistency", cfg.Consistency, "reads: linearizable, serializable, or both (alternating per event)")
	}
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "run duration, warm-up included")
	f.DurationVar(&cfg.Warmup, "warmup", 0, "leading part of the run excluded from stats.json")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per-operation timeout")
	f.StringVar(&cfg.OutDir, "out", "", "directory for the results files (none written if empty)")
	_ = cmd.MarkFlagRequired("group")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

// storeFlags are the flags that say which shared data backend to use and where it is.
func storeFlags(f *pflag.FlagSet, cfg *shareddata.Config) {
	f.StringVar(&cfg.Backend, "backend", shareddata.BackendKV, "the store: "+strings.Join(shareddata.Backends, ", "))
	f.StringSliceVar(&cfg.Endpoints, "endpoints", nil, "etcd/kv client URLs (http://HOST:PORT) or Redis HOST:PORT addresses, comma-separated")
	f.Int64Var(&cfg.StreamRetention, "stream-retention", shareddata.DefaultStreamRetention, "Redis: publications a stream keeps")
	f.BoolVar(&cfg.ReadReplicas, "read-replicas", false, "Redis Cluster: serializable reads go to replicas")
}
