package faascmd

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/testbed"
)

func init() { cli.Register(cli.Top, newFaaSCmd) }

func newFaaSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "faas",
		Short: "The function platform (seeds/001): watchdogs in front of OpenFaaS python3-http handlers",
		Example: `  continuum faas watchdog --mode http --handler python/functions/iot-analytics --listen :8080
  continuum faas watchdog --mode classic --handler python/functions/hello --listen :8081`,
	}
	cmd.AddCommand(newWatchdogCmd(), newFaaSGatewayCmd())
	return cmd
}

func newFaaSGatewayCmd() *cobra.Command {
	var (
		cfg                gateway.RunConfig
		functions          []string
		tb, stateDir, node string
		platformEndpoint   string
		logDir             string
		instanceCPUs       float64
		instancePort       int
		name               string
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Route /function/NAME to function instances and scale them (OpenFaaS-style gateway)",
		Long: `Serves the functions given with --function (comma-separated key=value: name, handler or url, mode
classic|http, server, replicas, min, max, scaler none|rps, rps_threshold, rps_window, idle_timeout,
exec_timeout, max_inflight). Requests to /function/NAME/... go to the instance with the fewest
requests under way; GET /system/functions lists the functions, POST /system/scale-function/NAME
{"replicas": N} scales one, /metrics is Prometheus (gateway_function_invocation_total,
gateway_functions_seconds, gateway_service_count, gateway_cold_start_seconds).

scaler=rps is OpenFaaS CE's autoscaler (above rps_threshold, default 5, for rps_window, default
5s: +20% of max per window; back to min when it stops). idle_timeout scales a function with min=0
to zero; a request then waits for a new instance (a cold start) instead of failing.

Instances run as watchdogs served by this process, or with --testbed (or --platform) as processes of that testbed
on --node, each limited to --instance-cpus cores. With --out, replicas.csv, scaling.csv and
gateway.json record the instances over time.`,
		Example: `  continuum faas gateway --listen :8080 --function name=analytics,handler=python/functions/iot-analytics,mode=http,scaler=rps,max=20
  continuum faas gateway --function name=hello,handler=python/functions/hello,min=0,idle_timeout=30s
  curl -d Ada localhost:8080/function/hello`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(functions) == 0 {
				return fmt.Errorf("no function: give --function name=...,handler=...")
			}
			for _, s := range functions {
				f, err := gateway.ParseFunction(s)
				if err != nil {
					return err
				}
				cfg.Gateway.Functions = append(cfg.Gateway.Functions, f)
			}
			if tb != "" || platformEndpoint != "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				prefix := name
				py, err := faas.FindPython()
				if err != nil {
					return err
				}
				client := testbed.NewClient(stateDir, tb)
				if platformEndpoint != "" {
					if client, err = gateway.PlatformClient(platformEndpoint); err != nil {
						return err
					}
				}
				cfg.Gateway.Provider = &gateway.TestbedProvider{Client: client, Node: node, Python: py,
					Binary: exe, LogDir: logDir, Prefix: prefix, CPUs: instanceCPUs, BasePort: instancePort}
			} else {
				py, err := faas.FindPython()
				if err != nil && needsPython(cfg.Gateway.Functions) {
					return err
				}
				cfg.Gateway.Provider = &gateway.LocalProvider{Python: py}
			}
			return gateway.Run(cmd.Context(), cfg, func(a net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "gateway listening on %s\n", a)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", ":8080", "address the gateway serves on")
	f.StringArrayVar(&functions, "function", nil, "a function: name=...,handler=...[,mode=...,scaler=...,...] (repeatable)")
	f.StringVar(&cfg.OutDir, "out", "", "directory for replicas.csv, scaling.csv and gateway.json")
	f.DurationVar(&cfg.Gateway.Tick, "tick", time.Second, "how often autoscalers decide")
	f.StringVar(&tb, "testbed", "", "start instances as processes of this testbed (default: in this process)")
	f.StringVar(&platformEndpoint, "platform", "", "start instances on the platform at this endpoint, as a scenario's run passes it (testbed:NAME@STATE_DIR); instead of --testbed and --state-dir")
	f.StringVar(&stateDir, "state-dir", "", "the testbed's state directory (default $CONTINUUM_STATE_DIR or /run/continuum)")
	f.StringVar(&node, "node", "", "with --testbed: the node instances run on (the gateway's)")
	f.StringVar(&name, "name", "gateway", "with --testbed: prefix of the instances' process names (<name>-<function>-<n>), unique in the testbed")
	f.StringVar(&logDir, "log-dir", "", "with --testbed: where instances' logs go")
	f.Float64Var(&instanceCPUs, "instance-cpus", 1, "with --testbed: cores each instance may use (0: unlimited)")
	f.IntVar(&instancePort, "instance-port", 18080, "with --testbed: the first loopback port instances listen on")
	return cmd
}

func newWatchdogCmd() *cobra.Command {
	var (
		cfg                   watchdog.Config
		mode, handler, server string
		upstreamPort          int
		zygoteSock            string
		startZygote           bool
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
			if startZygote {
				z, err := faas.StartZygote(cmd.Context(), py, h, filepath.Join(os.TempDir(), fmt.Sprintf("continuum-zygote-%d.sock", os.Getpid())))
				if err != nil {
					return err
				}
				defer z.Stop()
				zygoteSock = z.Socket
			}
			wc, err := faas.WatchdogFor(py, faas.Instance{Mode: mode, Handler: h, Server: server, UpstreamPort: upstreamPort,
				Zygote: zygoteSock, ExecTimeout: cfg.ExecTimeout})
			if err != nil {
				return err
			}
			wc.Listen, wc.WriteTimeout, wc.ReadTimeout, wc.MaxInflight = cfg.Listen, cfg.WriteTimeout, cfg.ReadTimeout, cfg.MaxInflight
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
	f.StringVar(&zygoteSock, "zygote", "", "fork the http upstream, or each classic request's process, from the zygote on this unix socket (python -m continuum_functions.zygote)")
	f.BoolVar(&startZygote, "start-zygote", false, "start a zygote for the handler and use it (see --zygote)")
	f.StringVar(&cfg.Listen, "listen", ":8080", "address the watchdog serves on")
	f.DurationVar(&cfg.ExecTimeout, "exec-timeout", time.Minute, "longest a request may run in the function (then 504)")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", 0, "longest to write a response (default exec timeout + 5s)")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", time.Minute, "longest to read a request")
	f.IntVar(&cfg.MaxInflight, "max-inflight", 0, "requests at once before 429 (0: no limit)")
	return cmd
}

// needsPython is whether any function runs a handler (not only urls of running servers).
func needsPython(fns []*gateway.Function) bool {
	for _, f := range fns {
		if f.URL == "" {
			return true
		}
	}
	return false
}
