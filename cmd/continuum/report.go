package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/report"
)

func init() { commands = append(commands, newReportCmd) }

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Render report.html and summary.md for a results directory written by `continuum run`",
		Long: `Render a results directory (see docs/results-format.md) into a self-contained HTML report
(report.html: summary table, latency CDFs, time series with event markers, per-node resource and
energy charts, sweep charts) and a Markdown summary (summary.md), both written into DIR.
Missing optional files are reported in the output instead of failing the render.`,
		Example: `  continuum report results/quickstart-20261122-101500
  xdg-open results/quickstart-20261122-101500/report.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := report.Render(dir); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), report.HTMLPath(dir))
			fmt.Fprintln(cmd.OutOrStdout(), report.MarkdownPath(dir))
			return nil
		},
	}
}
