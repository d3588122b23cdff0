package shareddatacmd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"

	"github.com/continuum-project/continuum/internal/shareddata"
	"github.com/continuum-project/continuum/internal/shareddata/pace"
)

func init() { cli.RegisterSystem("shareddata", newPaceCmd) }

func newPaceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pace",
		Short: "PACE (the NPM platform paper's emulator, docs/seeds.md): NPM producers and consumers over the shared data platform, measured per operation",
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

// PaceFlags are `continuum pace producer|consumer`'s flags: the process's pace.Config (its Role
// is the subcommand, not a flag) and its traffic class. The pace kind renders its command lines
// from the same struct (Args), so each flag's name and default is written once, in Bind and
// DefaultPaceFlags.
type PaceFlags struct {
	pace.Config
	Class string
}

// DefaultPaceFlags are the defaults of `continuum pace <role>`'s flags: pace's defaults and the
// default store's.
func DefaultPaceFlags(role string) PaceFlags {
	cfg := pace.DefaultConfig()
	cfg.Role, cfg.Store = role, defaultStore()
	return PaceFlags{Config: cfg, Class: pace.DefaultClass}
}

// Bind declares the flags of f.Role's command on fs (a consumer's include the state, control,
// inference, mode and consistency), bound to f's fields, with f's values as their defaults.
func (f *PaceFlags) Bind(fs *pflag.FlagSet) {
	cfg, role := &f.Config, f.Role
	storeFlags(fs, &cfg.Store)
	fs.StringVar(&cfg.Group, "group", cfg.Group, "the group of producers and consumers")
	fs.StringVar(&cfg.ID, "id", cfg.ID, "this "+role+"'s name")
	fs.StringVar(&f.Class, "class", f.Class, "traffic class: "+classesHelp(func(c pace.Class) string {
		return fmt.Sprintf("%d B every %v", c.MetricsSize, c.Period)
	}))
	fs.IntVar(&cfg.MetricsSize, "metrics-size", cfg.MetricsSize, "metrics size in bytes (default: the --class's: "+classesHelp(func(c pace.Class) string {
		return strconv.Itoa(c.MetricsSize)
	})+")")
	fs.DurationVar(&cfg.Period, "period", cfg.Period, "producer: metrics period (default: the --class's: "+classesHelp(func(c pace.Class) string {
		return c.Period.String()
	})+")")
	if role == pace.RoleConsumer {
		fs.IntVar(&cfg.StateSize, "state-size", cfg.StateSize, "state size in bytes")
		fs.IntVar(&cfg.ControlSize, "control-size", cfg.ControlSize, "control size in bytes")
		fs.DurationVar(&cfg.Inference, "inference", cfg.Inference, "emulated inference time")
		fs.StringVar(&cfg.Mode, "mode", cfg.Mode, "pace (the seed's separate round trips) or atomic (one atomic state push)")
		fs.StringVar(&cfg.Consistency, "consistency", cfg.Consistency, "reads: linearizable, serializable, or both (alternating per event)")
	}
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "run duration, warm-up included")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of the run excluded from stats.json")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per-operation timeout")
	fs.StringVar(&cfg.OutDir, "out", cfg.OutDir, "directory for the results files (none written if empty)")
}

// Args renders f as the flags of `continuum pace <f.Role>`: those that differ from
// DefaultPaceFlags (cli.Args), and --metrics-size and --period also when they equal their
// defaults but not f.Class's, since the command gives a flag left out the class's value.
func (f PaceFlags) Args() ([]string, error) {
	class, err := pace.LookupClass(f.Class)
	if err != nil {
		return nil, err
	}
	d := DefaultPaceFlags(f.Role)
	args := cli.Args(d, f)
	if f.MetricsSize == d.MetricsSize && f.MetricsSize != class.MetricsSize {
		args = append(args, "--metrics-size", strconv.Itoa(f.MetricsSize))
	}
	if f.Period == d.Period && f.Period != class.Period {
		args = append(args, "--period", f.Period.String())
	}
	return args, nil
}

// config is the process's pace.Config: --metrics-size and --period, unless given (changed),
// are f.Class's.
func (f *PaceFlags) config(changed func(flag string) bool) (pace.Config, error) {
	class, err := pace.LookupClass(f.Class)
	if err != nil {
		return pace.Config{}, err
	}
	cfg := f.Config
	if !changed("metrics-size") {
		cfg.MetricsSize = class.MetricsSize
	}
	if !changed("period") {
		cfg.Period = class.Period
	}
	return cfg, nil
}

func newPaceRoleCmd(role string) *cobra.Command {
	flags := DefaultPaceFlags(role)
	cmd := &cobra.Command{
		Use:   role,
		Short: "Run one PACE " + role,
		Example: "  continuum pace " + role + " --backend etcd --endpoints http://127.0.0.1:2379 --group g1 --id " + role[:1] + "1 --class wave --duration 60s --out /tmp/" + role[:1] + "1\n" +
			"  continuum pace " + role + " --backend redis --endpoints 127.0.0.1:6379 --group g1 --id " + role[:1] + "1 --class pulse --out /tmp/" + role[:1] + "1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := flags.config(cmd.Flags().Changed)
			if err != nil {
				return err
			}
			cfg.Progress = cmd.OutOrStdout()
			_, err = pace.Run(cmd.Context(), cfg)
			return err
		},
	}
	flags.Bind(cmd.Flags())
	// Their defaults are the class's, which the usage lists; the bound value (the default
	// class's, which cli.Args compares against) is not what a user gets with another --class.
	for _, name := range []string{"metrics-size", "period"} {
		if fl := cmd.Flags().Lookup(name); fl != nil {
			fl.DefValue = "0"
		}
	}
	_ = cmd.MarkFlagRequired("group")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

// defaultStore is the defaults of the flags storeFlags declares.
func defaultStore() shareddata.Config {
	return shareddata.Config{Backend: shareddata.BackendKV, StreamRetention: shareddata.DefaultStreamRetention}
}

// storeFlags are the flags that say which shared data backend to use and where it is, bound to
// cfg's fields with their values as the defaults (defaultStore's for a command's own).
func storeFlags(f *pflag.FlagSet, cfg *shareddata.Config) {
	f.StringVar(&cfg.Backend, "backend", cfg.Backend, "the store: "+strings.Join(shareddata.Backends, ", "))
	f.StringSliceVar(&cfg.Endpoints, "endpoints", cfg.Endpoints, "etcd/kv client URLs (http://HOST:PORT) or Redis HOST:PORT addresses, comma-separated")
	f.Int64Var(&cfg.StreamRetention, "stream-retention", cfg.StreamRetention, "Redis: publications a stream keeps")
	f.BoolVar(&cfg.ReadReplicas, "read-replicas", cfg.ReadReplicas, "Redis Cluster: serializable reads go to replicas")
}

// classesHelp lists the traffic classes, smallest metrics first and then longest period (pulse,
// ping, burst, wave), each as "name what", from pace's table.
func classesHelp(what func(pace.Class) string) string {
	cs := make([]pace.Class, 0, len(pace.Classes))
	for _, c := range pace.Classes {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].MetricsSize != cs[j].MetricsSize {
			return cs[i].MetricsSize < cs[j].MetricsSize
		}
		return cs[i].Period > cs[j].Period
	})
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name + " " + what(c)
	}
	return strings.Join(parts, ", ")
}
