package httpechocmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/httpecho"
)

func init() { cli.Register(cli.Top, newEchoCmd) }

func newEchoCmd() *cobra.Command {
	cfg := httpecho.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "echo",
		Short: "Run the HTTP echo server component (delay, CPU work and response size adjustable at run time)",
		Long: `Serves "/" (any method: waits --delay, burns --cpu-work of CPU, answers 200 naming the host and the
request body size), "/healthz", and "/admin/config" (GET shows the settings; PUT with a JSON body such as
{"delay":"20ms","cpu_work":"0s","response_size":0} changes any of them at run time).
SIGTERM/Ctrl-C stops accepting and drains requests in flight.`,
		Example: `  continuum echo --listen :8080 --delay 20ms
  curl -X PUT -d '{"delay":"50ms"}' http://127.0.0.1:8080/admin/config`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = cli.Logger()
			return httpecho.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "host:port to listen on")
	f.StringVar(&cfg.Name, "name", "", "name in response bodies (default: the hostname)")
	f.DurationVar(&cfg.Settings.Delay, "delay", 0, "processing delay per request (timer, no CPU)")
	f.DurationVar(&cfg.Settings.CPUWork, "cpu-work", 0, "CPU time burnt per request")
	f.IntVar(&cfg.Settings.ResponseSize, "response-size", 0, "exact response body size in bytes (0: a short message)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long to drain requests in flight on shutdown")
	return cmd
}
