package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
)

func init() { commands = append(commands, newFaaSCmd) }

func newFaaSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "faas",
		Short: "The function platform (seeds/001): watchdogs in front of OpenFaaS python3-http handlers",
		Example: `  continuum faas watchdog --mode http --handler python/functions/iot-analytics --listen :8080
  continuum faas watchdog --mode classic --handler python/functions/hello --listen :8081`,
	}
	cmd.AddCommand(newWatchdogCmd())
	return cmd
}

func newWatchdogCmd() *cobra.Command {
	var (
		cfg                   watchdog.Config
		mode, handler, server string
		upstreamPort          int
	)
	cmd := &cobra.Command{
		Use:   "watchdog",
		Short: "Serve one function instance: classic (a process per request) or http (one reused upstream process)",
		Long: `Serves one instance of a python3-http handler (handle(event, context), a function folder with
handler.py) the way OpenFaaS' watchdogs do. --mode classic forks and execs the Python runner for each
request (body on stdin, response on stdout); --mode http starts one upstream server process (--server
continuum: Continuum's asyncio server; flask: Flask + Waitress with one thread, OpenFaaS' template)
and proxies to it, restarting it if it exits.

Every instance answers /_/health and /_/metrics (Prometheus); a request past --exec-timeout gets
504, one beyond --max-inflight 429. Responses carry X-Duration-Seconds (time in the watchdog) and
X-Handler-Seconds (time in handle()). The Python is the venv make setup builds (.tools/venv), or
$CONTINUUM_PYTHON with $CONTINUUM_PYTHON_SRC.`,
		Example: `  continuum faas watchdog --mode http --handler python/functions/iot-analytics --listen :8080
  continuum faas watchdog --mode classic --handler python/functions/hello --exec-timeout 10s
  curl -d Ada localhost:8080/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := faas.ResolveHandler(handler)
			if err != nil {
				return err
			}
			py, err := faas.FindPython()
			if err != nil {
				return err
			}
			wc, err := faas.WatchdogFor(py, mode, h, server, upstreamPort)
			if err != nil {
				return err
			}
			wc.Listen, wc.ExecTimeout, wc.WriteTimeout, wc.ReadTimeout, wc.MaxInflight = cfg.Listen, cfg.ExecTimeout, cfg.WriteTimeout, cfg.ReadTimeout, cfg.MaxInflight
			return watchdog.Run(cmd.Context(), wc, func(a net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "watchdog (%s) for %s listening on %s\n", mode, h, a)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", faas.ModeHTTP, "classic (a process per request) or http (one reused upstream process)")
	f.StringVar(&handler, "handler", "", "function folder (with handler.py) or its handler.py")
	f.StringVar(&server, "server", faas.ServerContinuum, "http mode's upstream server: continuum or flask")
	f.IntVar(&upstreamPort, "upstream-port", 0, "http mode: loopback port of the upstream process (0: a free one)")
	f.StringVar(&cfg.Listen, "listen", ":8080", "address the watchdog serves on")
	f.DurationVar(&cfg.ExecTimeout, "exec-timeout", time.Minute, "longest a request may run in the function (then 504)")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", 0, "longest to write a response (default exec timeout + 5s)")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", time.Minute, "longest to read a request")
	f.IntVar(&cfg.MaxInflight, "max-inflight", 0, "requests at once before 429 (0: no limit)")
	return cmd
}
