package appcmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/app/compose"
	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/cli"
)

func init() {
	cli.RegisterSystem("app", newContainerExecCmd)
	cli.RegisterSystem("app", newConvertCmd)
}

// ExecFlags are `continuum container-exec`'s flags.
type ExecFlags struct {
	ID, Bundle, Runc string
	// Timeout, if > 0, kills the command once it has run that long (a health check's timeout).
	Timeout time.Duration
}

// DefaultExecFlags are its defaults: container-run's bundle.
func DefaultExecFlags() ExecFlags { return ExecFlags{Bundle: DefaultFlags().Bundle} }

// Bind declares the flags on fs.
func (f *ExecFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.ID, "id", f.ID, "the container's name, as given to container-run (default: derived from the bundle directory)")
	fs.StringVar(&f.Bundle, "bundle", f.Bundle, "the container's bundle directory, as given to container-run")
	fs.StringVar(&f.Runc, "runc", f.Runc, "the runc binary (default: runc in PATH)")
	fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "kill the command once it has run this long and exit 124 (0: no limit)")
}

func newContainerExecCmd() *cobra.Command {
	flags := DefaultExecFlags()
	cmd := &cobra.Command{
		Use: "container-exec [flags] -- COMMAND [ARGS...]",
		// A helper its kind runs: it works, help does not list it.
		Hidden:  true,
		Short:   "Run a command inside a container that container-run runs (a health check)",
		Example: `  continuum container-exec --bundle container --id web -- /bin/sh -c 'wget -qO- 127.0.0.1:8080/health'`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bundle, id, err := bundleAndID(flags.Bundle, flags.ID)
			if err != nil {
				return err
			}
			code, err := oci.Exec(cmd.Context(), flags.Runc, bundle, id, args, flags.Timeout, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if errors.Is(err, oci.ErrTimeout) {
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return cli.ExitCode(124) // as timeout(1) exits
			}
			if err != nil {
				return err
			}
			if code != 0 {
				return cli.ExitCode(code)
			}
			return nil
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

func newConvertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Print the scenario another file format means (a Docker Compose file, a Fogify model)",
		Example: `  continuum convert compose examples/compose/notes/compose.yaml > notes-scenario.yaml
  continuum convert fogify docker-compose.yaml > scenario.yaml`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "compose COMPOSE.yaml",
		Short: "Print the scenario `continuum run COMPOSE.yaml` runs: each service as container components, x-continuum's topology, workloads and events",
		Long: `Reads the Compose file as Docker Compose does (interpolation, .env, profiles from
COMPOSE_PROFILES, extends) and prints the scenario it becomes (docs/bring-your-own.md has the
mapping). continuum run and run --check take the Compose file itself; this shows what they run,
and the line numbers their errors about it refer to.`,
		Example: `  continuum convert compose examples/compose/notes/compose.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := compose.Convert(cmd.Context(), args[0], compose.Options{})
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "fogify COMPOSE.yaml",
		Short: "Print the scenario a Fogify model (a Compose file with x-fogify) becomes: a node per emulated device, links from its networks, the blueprints' services as containers",
		Long: `Reads the Compose file as Docker Compose does and translates Fogify's x-fogify model
(docs/bring-your-own.md has the mapping): each blueprint's replicas become nodes with their node
type's cores and memory, running the blueprint's service as a container component named by the
blueprint's label (label-N for replicas); two devices on a common network get a link with the
sender's uplink plus the receiver's downlink. Lines starting with # say what was not converted
(runtime scenarios, clock speeds, fixed addresses, routes the testbed takes differently).
Save the output and run it with continuum run.`,
		Example: `  continuum convert fogify docker-compose.yaml > scenario.yaml && continuum run scenario.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := compose.Fogify(cmd.Context(), args[0], compose.Options{})
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	})
	return cmd
}
