package kubebenchcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/kv/kubebench"
)

func init() { cli.Register("bench", newBenchKubeStoreCmd) }

func newBenchKubeStoreCmd() *cobra.Command {
	var o benchkit.Output
	cfg := kubebench.DefaultConfig(false)
	c := &cobra.Command{
		Use:   "kube-store [--stores kv,etcd] [--repeats 3] [--out FILE.md] [--quick]",
		Short: "kube-apiserver on continuum kv vs etcd: request latency, footprint, store restart, lost updates with two apiservers",
		Long: `Starts continuum kv (this binary) and etcd (.tools/bin or $CONTINUUM_ETCD_BIN) on loopback, and
kube-apiserver (.tools/bin or $CONTINUUM_KUBE_BIN) on each, then measures through client-go with
--clients concurrent callers: create, get, update, paginated list (--page-size) and delete of
--objects ConfigMaps, p50 and p99 each, and the delivery of the creates to a watch; the store's data
directory and RSS and the apiserver's RSS after the load; the time until /readyz is 200 again and a
create succeeds after the store is killed with SIGKILL and restarted on its data. Then the race: two
apiservers on two members of a --race-members kv cluster, on one member, and on one etcd, each with
--race-writers goroutines making --race-increments read-modify-write increments of one ConfigMap
(Update, retried on Conflict); lost updates = successful Updates - final counter. Everything
--repeats times, the stores interleaved; medians with their range, and kv/etcd ratios taken repeat
by repeat.`,
		Example: `  continuum bench kube-store --out results/kubernetes.md
  continuum bench kube-store --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if done, err := benchkit.RenderAgain(cmd.OutOrStdout(), &o, kubebench.ReadResult, kubebench.Markdown); done {
				return err
			}
			if err := cli.NeedStacks(cmd, "kubernetes"); err != nil { // kube-apiserver, and etcd
				return err
			}
			if o.Quick {
				q := kubebench.DefaultConfig(true)
				f := cmd.Flags()
				if !f.Changed("repeats") {
					cfg.Repeats = q.Repeats
				}
				if !f.Changed("objects") {
					cfg.Objects = q.Objects
				}
				if !f.Changed("lists") {
					cfg.Lists = q.Lists
				}
				if !f.Changed("race-increments") {
					cfg.RaceIncrements = q.RaceIncrements
				}
			}
			cfg.Log, cfg.Command = cmd.ErrOrStderr(), benchkit.Invocation()
			res, err := kubebench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), kubebench.Markdown(res), res)
		},
	}
	f := c.Flags()
	o.Flags(f, "one repeat, 200 ConfigMaps, 5 increments per writer (smoke run)")
	o.FromJSONFlag(f, benchkit.FromJSONHelp)
	f.StringSliceVar(&cfg.Stores, "stores", cfg.Stores, "stores to measure, in order: kv, etcd")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "measure every store and race setting this many times, interleaved (--quick: 1)")
	f.IntVar(&cfg.Objects, "objects", cfg.Objects, "ConfigMaps created, read, updated, listed and deleted per run (--quick: 200)")
	f.IntVar(&cfg.ValueBytes, "value-bytes", cfg.ValueBytes, "bytes of data per ConfigMap")
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent client-go callers")
	f.IntVar(&cfg.PageSize, "page-size", cfg.PageSize, "list limit (ConfigMaps per page)")
	f.IntVar(&cfg.Lists, "lists", cfg.Lists, "full paginated lists per run (--quick: 8)")
	f.DurationSliceVar(&cfg.RestartDowns, "restart-downs", cfg.RestartDowns, "kill -9 the store under the apiserver and restart it after each of these times down (none: skip)")
	f.DurationVar(&cfg.RestartTimeout, "restart-timeout", cfg.RestartTimeout, "how long to wait for /readyz and a create after the store restarts")
	f.BoolVar(&cfg.Race, "race", cfg.Race, "measure lost updates with two apiservers (kv: different members, one member; etcd)")
	f.IntVar(&cfg.RaceMembers, "race-members", cfg.RaceMembers, "members of the kv cluster for the race: 2 or 3")
	f.IntVar(&cfg.RaceWriters, "race-writers", cfg.RaceWriters, "incrementing goroutines per apiserver")
	f.IntVar(&cfg.RaceIncrements, "race-increments", cfg.RaceIncrements, "successful increments per goroutine (--quick: 5)")
	f.StringVar(&cfg.EtcdBin, "etcd-bin", "", "etcd binary (default: $CONTINUUM_ETCD_BIN, .tools/bin/etcd, PATH)")
	f.StringVar(&cfg.ContinuumBin, "kv-bin", "", "continuum binary whose kv command is measured (default: this one)")
	f.StringVar(&cfg.KubeBinDir, "kube-bin-dir", "", "directory holding kube-apiserver (default: $CONTINUUM_KUBE_BIN, .tools/bin)")
	return c
}
