package flcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/fl/flbench"
)

func init() { cli.Register("bench", newBenchPlanCmd) }

func newBenchPlanCmd() *cobra.Command {
	var o benchkit.Output
	cfg := flbench.DefaultConfig(false)
	c := &cobra.Command{
		Use:   "fl-plan [--out FILE.md] [--quick]",
		Short: "The FL planner's runtime at 20, 100 and 1000 clients, and its heuristic's mean KLD against the exact search",
		Long: `On random label-skewed populations (the AIoTwin deliverable's form, docs/seeds.md), times the min-kld clustering (the heuristic, and the
exact enumeration where there are few enough balanced partitions), min-cost and a replan after a client
leaves, at --clients x --aggregators, medians of --repeats; then compares the heuristic's mean KLD with the
exact one on --ratio-per-shape random instances of each shape where the exact search runs. Markdown and JSON.`,
		Example: `  make build && bin/continuum bench fl-plan --out results/fl-plan.md
  bin/continuum bench fl-plan --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Quick {
				q := flbench.DefaultConfig(true)
				f := cmd.Flags()
				if !f.Changed("clients") {
					cfg.Clients = q.Clients
				}
				if !f.Changed("aggregators") {
					cfg.Aggregators = q.Aggregators
				}
				if !f.Changed("repeats") {
					cfg.Repeats = q.Repeats
				}
				if !f.Changed("ratio-per-shape") {
					cfg.RatioShapes, cfg.RatioPerShape = q.RatioShapes, q.RatioPerShape
				}
			}
			cfg.Log, cfg.Command = cmd.ErrOrStderr(), benchkit.Invocation()
			res, err := flbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), flbench.Markdown(res), res)
		},
	}
	f := c.Flags()
	o.Flags(f, "small sizes, one repeat (smoke test)")
	f.IntSliceVar(&cfg.Clients, "clients", cfg.Clients, "client counts of the runtime table")
	f.IntSliceVar(&cfg.Aggregators, "aggregators", cfg.Aggregators, "local aggregator counts of the runtime table")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "timed repeats per cell")
	f.IntVar(&cfg.RatioPerShape, "ratio-per-shape", cfg.RatioPerShape, "random instances per (clients, aggregators) shape of the heuristic/exact comparison")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the random instances")
	return c
}
