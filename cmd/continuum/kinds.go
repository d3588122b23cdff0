package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/experiment/kind"
)

func init() { commands = append(commands, newKindsCmd) }

func newKindsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "kinds [NAME]",
		Short: "List the component and workload kinds a scenario can use, by system, or show one",
		Long: `Without NAME: every kind a scenario's components and workloads can name, grouped by the system
that provides it, with its config keys and where it is documented. With NAME: that kind's config
keys with their types and defaults (a kind's former name shows the kind it became).`,
		Example: `  continuum kinds
  continuum kinds shareddata-pace`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return kind.WriteList(cmd.OutOrStdout(), kind.BySystem())
			}
			k, ok := kind.Lookup(args[0])
			if !ok {
				names := append(kind.Names(kind.RoleComponent), kind.Names(kind.RoleWorkload)...)
				return fmt.Errorf("unknown kind %q; kinds: %s", args[0], strings.Join(names, ", "))
			}
			if k.Name != args[0] {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: kind %q is deprecated, use %q\n", args[0], k.Name)
			}
			return kind.WriteDetail(cmd.OutOrStdout(), k)
		},
	}
}
