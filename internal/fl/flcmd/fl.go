package flcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
)

// Group is the cli registry parent of `continuum fl`'s subcommands: a file of this package
// may add one with cli.Register(Group, ctor) in its init() instead of listing it here.
const Group = "fl"

func init() { cli.RegisterSystem("fl", newFLCmd) }

func newFLCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fl",
		Short: "Federated learning: plan a configuration, run the orchestrator, submit training jobs",
		Long: `Continuum's federated-learning orchestration (the AIoTwin orchestration deliverable §3, docs/seeds.md; docs/fl.md): hierarchical FL on Flower
with clients clustered under local aggregators by label distribution within a communication budget,
reconfigured when nodes leave or join.`,
		Example: `  continuum fl plan --topology scenarios/fl/seed-topology.csv
  continuum fl plan --topology scenarios/fl/seed-topology.csv --remove n9`,
	}
	cmd.AddCommand(newOrchestrateCmd(), newTrainCmd())
	cmd.AddCommand(cli.Commands(Group)...) // fl plan
	return cmd
}
