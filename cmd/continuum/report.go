package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/results"
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
				if inside := resultsDirsIn(dir); len(inside) > 0 {
					return fmt.Errorf("%w\nresults directories inside it (newest last): %s\n  e.g. continuum report %s",
						err, strings.Join(inside, ", "), filepath.Join(dir, inside[len(inside)-1]))
				}
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), report.HTMLPath(dir))
			fmt.Fprintln(cmd.OutOrStdout(), report.MarkdownPath(dir))
			return nil
		},
	}
}

// resultsDirsIn names the subdirectories of dir that are results directories (they hold a
// summary or runs), oldest first by modification time, for `report` pointed at their parent.
func resultsDirsIn(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type found struct {
		name string
		mod  int64
	}
	var fs []found
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		for _, marker := range []string{results.SummaryFile, results.RunsDir} {
			if st, err := os.Stat(filepath.Join(sub, marker)); err == nil {
				fs = append(fs, found{e.Name(), st.ModTime().UnixNano()})
				break
			}
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].mod < fs[j].mod })
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}
