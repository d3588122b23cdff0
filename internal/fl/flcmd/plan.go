package flcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/fl/plan"
)

func init() { cli.Register(Group, newPlanCmd) }

// planFlags are `continuum fl plan`'s flags.
type planFlags struct {
	topology string
	strategy string
	budget   plan.Budget
	opt      plan.Options
	remove   []string
	add      string
	json     bool
}

func newPlanCmd() *cobra.Command {
	f := planFlags{strategy: string(plan.MinKLD), budget: plan.DefaultBudget(), opt: plan.DefaultOptions()}
	c := &cobra.Command{
		Use:   "plan --topology FILE.csv|scenario.yaml [--strategy min-kld] [--remove n9] [--add FILE]",
		Short: "The configuration the orchestrator picks for a topology (clusters, KLD, cost per epoch, epochs, local rounds), and its reconfiguration decision",
		Long: `Reads the nodes' features, from the seed's CSV (id,role,"peer:cost,...","class:count,...") or from
the node labels of a scenario's topology (fl/type=client|aggregator|global_aggregator,
comm/<peer>=cost per MB, data/<class>=samples), and prints the configuration of --strategy:
  centralized  every client trains against the global aggregator
  min-kld      balanced clusters, one per local aggregator, of minimal mean KLD between the
               clusters' label distributions and the global one (the seed's)
  min-cost     each client to its cheapest local aggregator, balanced within --cost-slack
then the seed's budget rule: the smallest epochs, and then local rounds, whose communication cost
per client epoch ((global + local rounds * local) / (local rounds * epochs), model of --model-mb)
is within --budget.
With --remove and/or --add (a CSV or YAML of nodes that join), it then replans: keeping the
clusters with the least change or re-optimising, whichever is worth its moves (--min-gain), and
prints the decision, what moves and the new configuration.`,
		Example: `  continuum fl plan --topology scenarios/fl/seed-topology.csv
  continuum fl plan --topology scenarios/fl/seed-topology.csv --remove n9 --min-gain 0
  continuum fl plan --topology scenarios/fl/seed-topology.csv --strategy min-cost --budget 800 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.OutOrStdout(), f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.topology, "topology", "", "node features: a CSV (seed's Fig. 11 form) or a scenario/topology YAML with fl/ node labels (required)")
	fs.StringVar(&f.strategy, "strategy", f.strategy, "centralized, min-kld or min-cost")
	fs.Float64Var(&f.budget.ModelMB, "model-mb", f.budget.ModelMB, "model size in MB")
	fs.Float64Var(&f.budget.PerEpoch, "budget", f.budget.PerEpoch, "communication budget per client epoch (cost units)")
	fs.IntVar(&f.budget.MaxEpochs, "max-epochs", f.budget.MaxEpochs, "largest epochs the budget rule may pick")
	fs.IntVar(&f.budget.MaxLocalRounds, "max-local-rounds", f.budget.MaxLocalRounds, "largest local rounds the budget rule may pick")
	fs.IntVar(&f.opt.Classes, "classes", f.opt.Classes, "classes of the data set (0: 10, or more if a client has a higher label)")
	fs.IntVar(&f.opt.CostSlack, "cost-slack", f.opt.CostSlack, "min-cost: clients an aggregator may hold beyond ceil(clients/aggregators)")
	fs.Float64Var(&f.opt.ExactMaxPartitions, "exact-max-partitions", f.opt.ExactMaxPartitions, "min-kld: enumerate when there are at most this many balanced partitions, else the heuristic (negative: always the heuristic)")
	fs.Uint64Var(&f.opt.Seed, "seed", f.opt.Seed, "seed of the heuristic's restarts")
	fs.Float64Var(&f.opt.MinGain, "min-gain", f.opt.MinGain, "replan (min-kld): mean-KLD gain each extra moved client must buy for a re-optimisation")
	fs.Float64Var(&f.opt.MoveCost, "move-cost", f.opt.MoveCost, "replan (min-cost): cost per epoch each extra moved client must save")
	fs.StringSliceVar(&f.remove, "remove", nil, "nodes that leave (repeat or comma-separate)")
	fs.StringVar(&f.add, "add", "", "a CSV or YAML of nodes that join")
	fs.BoolVar(&f.json, "json", false, "print JSON ({config} or {before, change, after})")
	_ = c.MarkFlagRequired("topology")
	return c
}

func runPlan(w io.Writer, f planFlags) error {
	s, err := plan.ParseStrategy(f.strategy)
	if err != nil {
		return fmt.Errorf("--strategy: %w", err)
	}
	nodes, err := readNodes(f.topology)
	if err != nil {
		return fmt.Errorf("--topology: %w", err)
	}
	before, err := plan.Plan(nodes, s, f.budget, f.opt)
	if err != nil {
		return err
	}
	if len(f.remove) == 0 && f.add == "" {
		if f.json {
			return writeJSON(w, map[string]any{"config": before})
		}
		writeConfig(w, before, false)
		return nil
	}
	now, err := changedNodes(nodes, f.remove, f.add)
	if err != nil {
		return err
	}
	after, change, err := plan.Replan(before, now, s, f.budget, f.opt)
	if err != nil {
		return fmt.Errorf("after the change: %w", err)
	}
	if f.json {
		return writeJSON(w, map[string]any{"before": before, "change": change, "after": after})
	}
	writeConfig(w, before, false)
	fmt.Fprintln(w)
	writeChange(w, change)
	fmt.Fprintln(w)
	writeConfig(w, after, !change.Reoptimized)
	return nil
}

// changedNodes is nodes without those of remove, plus those of the file add.
func changedNodes(nodes []plan.Node, remove []string, add string) ([]plan.Node, error) {
	gone := map[string]bool{}
	for _, id := range remove {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		if !slices.ContainsFunc(nodes, func(n plan.Node) bool { return n.ID == id }) {
			return nil, fmt.Errorf("--remove %s: no such node in the topology", id)
		}
		gone[id] = true
	}
	var out []plan.Node
	for _, n := range nodes {
		if !gone[n.ID] {
			out = append(out, n)
		}
	}
	if add != "" {
		joined, err := readNodes(add)
		if err != nil {
			return nil, fmt.Errorf("--add: %w", err)
		}
		out = append(out, joined...)
	}
	return out, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
