package faascmd

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/faasbench"
)

func init() { cli.Register("bench", newBenchFaaSCmd) }

func newBenchFaaSCmd() *cobra.Command {
	cfg := faasbench.DefaultConfig()
	var handler string
	var o benchkit.Output
	c := &cobra.Command{
		Use:   "faas [--handler python/functions/hello] [--rates 100,1000] [--out FILE.md]",
		Short: "Latency the watchdog and the gateway add to a function, and what one instance sustains",
		Long: `Runs, in this process on loopback, one http-mode watchdog with its Python upstream (the handler in
Continuum's server) and a gateway whose one instance it is. Each rate is run open loop directly
against the upstream, through the watchdog and through gateway + watchdog, the three alternating,
--repeats times; the added latency is the median over repeats of the per-repeat differences of p50
and p99 (the issue's goal: <= 1 ms added p99 at 1000 req/s). Then, --repeats times, a load step
from idle to --clients clients on a gateway function with the concurrency autoscaler at Knative's
defaults: the time to the scale-out decision (goal: within 2 s) and to the new instance. Then this
binary's gateway as its own process on one core (GOMAXPROCS=1) in front of a trivial Go upstream,
closed loop with --gateway-clients (goal: >= 20 000 req/s). Last, one instance's closed-loop
throughput with Continuum's server and with Flask + Waitress (one thread), directly and through the
watchdog.`,
		Example: `  continuum bench faas --out results/faas-overhead.md
  continuum bench faas --rates 100 --step 5s --repeats 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			py, err := faas.FindPython()
			if err != nil {
				return err
			}
			if cfg.Handler, err = faas.ResolveHandler(handler); err != nil {
				return err
			}
			cfg.Python = py
			if cfg.Binary, err = os.Executable(); err != nil {
				return err
			}
			cfg.Command = benchkit.Invocation()
			r, err := faasbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), faasbench.Markdown(r), nil)
		},
	}
	f := c.Flags()
	f.StringVar(&handler, "handler", "python/functions/hello", "function folder")
	cli.Float64sVar(f, &cfg.Rates, "rates", cfg.Rates, "open-loop rates (req/s)")
	f.DurationVar(&cfg.Step, "step", cfg.Step, "length of each open-loop step")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "repeats of every rate and path")
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "closed-loop clients for the throughput runs")
	f.DurationVar(&cfg.ThroughputStep, "throughput-step", cfg.ThroughputStep, "length of each throughput run")
	f.IntVar(&cfg.GatewayClients, "gateway-clients", cfg.GatewayClients, "closed-loop clients for the gateway's one-core throughput")
	o.OutFlag(f, "", "write Markdown here")
	return c
}
