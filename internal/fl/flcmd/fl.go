// Package flcmd is the fl system's command line: `continuum fl plan|orchestrate|train`.
package flcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
)

func init() { cli.Register(cli.Top, newFLCmd) }

func newFLCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fl",
		Short: "Federated learning: plan a configuration, run the orchestrator, submit training jobs",
		Long: `Continuum's federated-learning orchestration (seeds/004 §3; docs/fl.md): hierarchical FL on Flower
with clients clustered under local aggregators by label distribution within a communication budget,
reconfigured when nodes leave or join.`,
	}
	cmd.AddCommand(newOrchestrateCmd(), newTrainCmd())
	return cmd
}
