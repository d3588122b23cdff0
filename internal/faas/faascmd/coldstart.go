package faascmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/faasbench"
)

func init() { cli.Register("bench", newBenchColdStartCmd) }

// coldStartBatch is what the analytics handler is sent: a small valid batch.
const coldStartBatch = `[{"sensor_id":"g0-d0","name":"temperature-0","type":"temperature","unit":"°C","value":21.5},` +
	`{"sensor_id":"g0-d1","name":"humidity-1","type":"humidity","unit":"%","value":48.25}]`

func newBenchColdStartCmd() *cobra.Command {
	var (
		handlers []string
		runs     int
		o        benchkit.Output
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
		Example: `  continuum bench coldstart --out results/coldstart.md
  continuum bench coldstart --handler python/functions/hello --runs 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			py, err := faas.FindPython()
			if err != nil {
				return err
			}
			cfg := faasbench.ColdStartConfig{Python: py, Runs: runs, Bodies: map[string][]byte{}, Command: benchkit.Invocation()}
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
			rep, err := faasbench.ColdStart(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), faasbench.ColdStartMarkdown(rep), rep)
		},
	}
	c.Flags().StringArrayVar(&handlers, "handler", []string{"python/functions/hello", "python/functions/iot-analytics"}, "function folder (repeatable)")
	c.Flags().IntVar(&runs, "runs", 20, "cold starts per handler and variant")
	o.OutFlag(c.Flags(), "", "write Markdown here and the raw JSON next to it")
	return c
}
