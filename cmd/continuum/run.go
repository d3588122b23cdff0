package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/testbed"
)

func init() { commands = append(commands, newRunCmd) }

func newRunCmd() *cobra.Command {
	var opts experiment.Options
	var check bool
	var tb testbed.Provider // the platform runs run on
	c := &cobra.Command{
		Use:   "run SCENARIO.yaml [--set path=value]... [--out DIR] [--repeats N] [--check]",
		Short: "Run an experiment: testbed + components + workloads + events -> results dir + report",
		Example: `  continuum run scenarios/quickstart.yaml
  continuum run scenarios/quickstart.yaml --set duration=60s --set workloads.load.config.rate=200
  continuum run scenarios/quickstart.yaml --repeats 5 --out /tmp/results
  continuum run --check scenarios/kv/partition.yaml   # validate every sweep combination, start nothing`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Platform = tb
			if check {
				res, err := experiment.Check(args[0], opts)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (scenario %s: %d run(s) of %d instance(s))\n", args[0], res.Scenario, res.Runs, res.Instances)
				return nil
			}
			opts.Progress = cmd.ErrOrStderr()
			opts.Interactive = isTerminal(os.Stderr)
			opts.Logger = cli.QuietLogger()
			res, err := experiment.Execute(cmd.Context(), args[0], opts)
			if res != nil && res.Report != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "results: %s\nreport:  %s\n", res.Dir, res.Report)
			}
			if errors.Is(err, experiment.ErrInterrupted) {
				fmt.Fprintln(cmd.ErrOrStderr(), "interrupted: results so far are kept; the testbed was removed")
			}
			return err
		},
	}
	c.Flags().BoolVar(&check, "check", false, "only validate the scenario, every sweep combination and every instance's command line; start nothing")
	c.Flags().StringVar(&opts.Out, "out", "results", "parent directory for the results directory")
	c.Flags().StringArrayVar(&opts.Sets, "set", nil, "override a scenario value: path=value (repeatable)")
	c.Flags().IntVar(&opts.Repeats, "repeats", 0, "override the scenario's repeats")
	c.Flags().StringVar(&tb.StateDir, "state-dir", "", "testbed state dir (default $CONTINUUM_STATE_DIR or /run/continuum)")
	c.Flags().DurationVar(&opts.SampleInterval, "sample-interval", 0, "resource sampling interval (default 1s)")
	return c
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
