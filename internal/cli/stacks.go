package cli

import (
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/setup"
)

// NeedStacks makes sure the setup stacks a command needs are installed before it starts
// (setup.Ensure): with $CONTINUUM_AUTO_SETUP=1 it installs them, at a terminal it asks, and
// otherwise it stops at once naming `continuum setup STACK`.
func NeedStacks(cmd *cobra.Command, stacks ...string) error {
	return setup.Ensure(cmd.Context(), stacks, setup.EnsureOptions{Who: cmd.CommandPath(), In: os.Stdin,
		Interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr), Out: cmd.ErrOrStderr()})
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
