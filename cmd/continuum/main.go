// Command continuum is the single binary of the Continuum project: the testbed, the experiment
// runner, the report and (in later issues) the platform components. This package only wires
// cobra commands to the internal packages; no logic lives here.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"

	// Every system's experiment kinds and report sections, for `run` and `report`.
	_ "github.com/continuum-project/continuum/internal/systems/install"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/version"
)

func main() {
	if testbed.IsLauncher() {
		testbed.LauncherMain() // re-executed to enter a node; never returns
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// CONTINUUM_CPUPROFILE=FILE profiles this process (e.g. the fabric host) until it exits. A
	// "%p" in FILE becomes the process id, so child processes that inherit the variable (a kv
	// server started by `bench kv`) write their own profiles.
	if path := os.Getenv("CONTINUUM_CPUPROFILE"); path != "" {
		path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
		if f, err := os.Create(path); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		var code cli.ExitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		// Some errors carry their own status (a workload that got nothing through exits 3,
		// which the scenario runner tells from other failures).
		var status interface{ ExitStatus() int }
		if errors.As(err, &status) {
			os.Exit(status.ExitStatus())
		}
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "continuum",
		Short: "The edge-to-cloud continuum in one tool: platform components and the testbed that measures them",
		Example: `  continuum testbed up -f topology.yaml --name lab
  continuum run scenarios/quickstart.yaml --out results/
  continuum report results/quickstart-20261122-101500`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	for _, c := range commands {
		cmd := c()
		cmd.GroupID = cli.EngineGroup
		root.AddCommand(cmd)
	}
	root.AddCommand(cli.Commands(cli.Top)...) // the systems' commands (kv, proxy, faas, ...)
	cli.AddGroups(root)                       // help: engine commands first, then a group per system
	cli.NameMissingArgs(root)                 // "missing SCENARIO.yaml", not "accepts 1 arg(s)"
	return root
}

// commands holds the constructors of the engine's top-level commands (each file adds its own in
// init()); the systems' commands come from the cli registry.
var commands = []func() *cobra.Command{newVersionCmd}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and Go runtime of this binary",
		Example: "  continuum version",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.String())
		},
	}
}
