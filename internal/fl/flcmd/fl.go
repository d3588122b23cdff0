package flcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
)

// Group is the cli registry parent of `continuum fl`'s subcommands: a file of this package
// adds one with cli.Register(Group, ctor) in its init().
const Group = "fl"

func init() { cli.Register(cli.Top, newFLCmd) }

func newFLCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "fl",
		Short: "Federated learning: plan hierarchical configurations (clusters, epochs, local rounds) and orchestrate Flower services",
		Long: `Federated learning over the continuum (seeds/004 §3): clients train on their own data, local
aggregators average their clusters' models, the global aggregator averages theirs. The
configuration (which client trains under which aggregator, epochs per round, local rounds per
global round) comes from the nodes' features and a communication budget; see docs/fl.md.`,
		Example: `  continuum fl plan --topology scenarios/fl/seed-topology.csv
  continuum fl plan --topology scenarios/fl/seed-topology.csv --remove n9`,
	}
	c.AddCommand(cli.Commands(Group)...)
	return c
}
