package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/version"
)

func init() { benchCommands = append(benchCommands, newBenchColdStartCmd) }

// coldStartBatch is what the analytics handler is sent: a small valid batch.
const coldStartBatch = `[{"sensor_id":"g0-d0","name":"temperature-0","type":"temperature","unit":"°C","value":21.5},` +
	`{"sensor_id":"g0-d1","name":"humidity-1","type":"humidity","unit":"%","value":48.25}]`

func newBenchColdStartCmd() *cobra.Command {
	var (
		handlers []string
		runs     int
		out      string
	)
	c := &cobra.Command{
		Use:   "coldstart [--handler DIR]... [--runs 20] [--out FILE.md]",
		Short: "Cold start of a function at zero instances: a fresh interpreter per instance vs a zygote",
		Long: `For each handler, runs two gateways in this process (instances on loopback), one starting each
instance's upstream with a fresh Python interpreter, one forking it from a zygote that imported the
handler once. Each run scales both to zero and times the first request (scale-up, start, answer) and
the next one (warm), alternating which variant goes first. Reports p50/p90/max per variant against
the issue's goals (<= 50 ms p50 for a trivial handler, <= 100 ms for the pandas one). The analytics
handler gets a two-message batch.`,
		Example: `  continuum bench coldstart --out docs/benchmarks/coldstart.md
  continuum bench coldstart --handler python/functions/hello --runs 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			py, err := faas.FindPython()
			if err != nil {
				return err
			}
			cfg := gateway.ColdStartConfig{Python: py, Runs: runs, Bodies: map[string][]byte{}}
			for _, h := range handlers {
				abs, err := faas.ResolveHandler(h)
				if err != nil {
					return err
				}
				cfg.Handlers = append(cfg.Handlers, abs)
				if strings.Contains(h, "analytics") {
					cfg.Bodies[abs] = []byte(coldStartBatch)
				}
			}
			started := time.Now()
			res, err := gateway.ColdStart(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			md := coldStartMarkdown(res, runs, started)
			fmt.Fprint(cmd.OutOrStdout(), md)
			if out == "" {
				return nil
			}
			if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
				return err
			}
			b, _ := json.MarshalIndent(res, "", "  ")
			return os.WriteFile(strings.TrimSuffix(out, ".md")+".json", append(b, '\n'), 0o644)
		},
	}
	c.Flags().StringArrayVar(&handlers, "handler", []string{"python/functions/hello", "python/functions/iot-analytics"}, "function folder (repeatable)")
	c.Flags().IntVar(&runs, "runs", 20, "cold starts per handler and variant")
	c.Flags().StringVar(&out, "out", "", "write Markdown here and the raw JSON next to it")
	return c
}

func coldStartMarkdown(res []gateway.ColdStartResult, runs int, started time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Function cold start: fresh interpreter vs zygote\n\n")
	fmt.Fprintf(&b, "`continuum bench coldstart --runs %d` (commit %s, %s, %s). A run scales the function to zero, then times its first request (the gateway starts an instance: watchdog + upstream, which forks from the zygote or starts a new interpreter that imports the handler) and the next one (warm). Times are request to answer, in ms, %d runs per row, variants alternating.\n\n",
		runs, version.Commit, started.UTC().Format("2006-01-02 15:04 UTC"), machine(), runs)
	fmt.Fprintf(&b, "| handler | variant | cold p50 | cold p90 | cold max | warm p50 | goal (cold p50) |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, r := range res {
		goal := "≤ 50 ms"
		if strings.Contains(r.Handler, "analytics") {
			goal = "≤ 100 ms"
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.1f | %.2f | %s |\n", r.Handler, r.Variant, r.P50, r.P90, r.Max, r.WarmP50, goal)
	}
	return b.String()
}
