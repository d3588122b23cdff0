package kvcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/kv/kvbench"
)

func init() { cli.Register("bench", newBenchKVCmd) }

func newBenchKVCmd() *cobra.Command {
	var o benchkit.Output
	cfg := kvbench.DefaultConfig(false)
	c := &cobra.Command{
		Use:   "kv [--stores kv,etcd,redis] [--workload a] [--rates 2000,5000,...] [--out FILE.md] [--quick]",
		Short: "YCSB against continuum kv, etcd and Redis started here: rate sweep until p99 > 10 ms, closed-loop peak, memory and disk per key",
		Long: `Starts each store itself on loopback (etcd from .tools/bin or $CONTINUUM_ETCD_BIN with its default
fsync, Redis with AOF appendfsync everysec unless --redis-appendfsync always, continuum kv from this
binary), loads --recordcount records, sweeps open-loop rates upward until a rate is not sustained (p99 of
an operation above --p99-limit, errors, or under 95% of the rate), runs --closed-clients closed-loop
clients for peak throughput, then grows the store to --footprint-records keys and reads RSS and
data-directory growth per million keys there; all of it --repeats times, the stores interleaved, with
rates compared repeat by repeat and other figures by their median. A store that does
not start is reported as not measured. Writes Markdown with the command, machine, tables, the verdict
against the store's goals (docs/kv.md) and the raw JSON.`,
		Example: `  continuum bench kv --out results/kv-single-node.md
  continuum bench kv --stores etcd,redis --workload b --rates 2000,5000,10000 --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if done, err := benchkit.RenderAgain(cmd.OutOrStdout(), &o, kvbench.ReadResult, kvbench.Markdown); done {
				return err
			}
			for _, s := range cfg.Stores {
				if s == "etcd" || s == "redis" { // the third-party stores are the baselines stack's
					if err := cli.NeedStacks(cmd, "baselines"); err != nil {
						return err
					}
					break
				}
			}
			if o.Quick {
				q := kvbench.DefaultConfig(true)
				f := cmd.Flags()
				if !f.Changed("recordcount") {
					cfg.RecordCount = q.RecordCount
				}
				if !f.Changed("rates") {
					cfg.Rates = q.Rates
				}
				if !f.Changed("step") {
					cfg.StepDuration, cfg.Warmup = q.StepDuration, q.Warmup
				}
				if !f.Changed("closed-clients") {
					cfg.ClosedClients = q.ClosedClients
				}
				if !f.Changed("closed-duration") {
					cfg.ClosedDuration = q.ClosedDuration
				}
				if !f.Changed("footprint-records") {
					cfg.FootprintRecords = q.FootprintRecords
				}
				if !f.Changed("repeats") {
					cfg.Repeats = q.Repeats
				}
				cfg.Settle = q.Settle
			}
			cfg.Log, cfg.Command = cmd.ErrOrStderr(), benchkit.Invocation()
			res, err := kvbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), kvbench.Markdown(res), res)
		},
	}
	f := c.Flags()
	o.Flags(f, "small key space, two short steps (smoke test)")
	f.BoolVar(&cfg.Maintenance, "maintenance", false, "compact the history and defragment during every sweep step (kv and etcd), and measure the step with it")
	o.FromJSONFlag(f, benchkit.FromJSONHelp)
	f.StringSliceVar(&cfg.Stores, "stores", cfg.Stores, "stores to measure, in order: kv, etcd, redis")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "measure every store this many times, each from scratch, the stores interleaved; verdicts hold over all repeats (--quick: 1)")
	f.StringVar(&cfg.Workload, "workload", cfg.Workload, "YCSB workload preset a..f")
	f.Int64Var(&cfg.RecordCount, "recordcount", cfg.RecordCount, "records loaded into each store")
	f.IntVar(&cfg.FieldCount, "fieldcount", cfg.FieldCount, "fields per record")
	f.IntVar(&cfg.FieldLength, "fieldlength", cfg.FieldLength, "bytes per field")
	cli.Float64sVar(f, &cfg.Rates, "rates", cfg.Rates, "open-loop rates (ops/s), ascending")
	f.DurationVar(&cfg.StepDuration, "step", cfg.StepDuration, "duration of each sweep step")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of each step excluded from the statistics")
	f.DurationVar(&cfg.P99Limit, "p99-limit", cfg.P99Limit, "p99 a sustained rate stays within")
	f.Int64Var(&cfg.FootprintRecords, "footprint-records", cfg.FootprintRecords, "after the runs, grow each store to this many keys and read memory and disk per key there (0: read them after loading --recordcount and scale)")
	f.IntVar(&cfg.ClosedClients, "closed-clients", cfg.ClosedClients, "closed-loop clients for the peak run (0: skip)")
	f.DurationVar(&cfg.ClosedDuration, "closed-duration", cfg.ClosedDuration, "duration of the closed-loop run")
	f.StringVar(&cfg.RedisFsync, "redis-appendfsync", cfg.RedisFsync, "Redis AOF fsync policy: everysec or always")
	f.StringVar(&cfg.EtcdBin, "etcd-bin", "", "etcd binary (default: $CONTINUUM_ETCD_BIN, .tools/bin/etcd, PATH)")
	f.StringVar(&cfg.ContinuumBin, "kv-bin", "", "continuum binary whose kv command is measured (default: this one)")
	f.StringArrayVar(&cfg.KVArgs, "kv-arg", nil, "an extra `FLAG` for continuum kv (repeatable), e.g. --kv-arg=--fsync=batch")
	return c
}
