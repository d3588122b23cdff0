package httpechocmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/httpecho"
)

func init() { cli.RegisterSystem("httpecho", newEchoCmd) }

// Flags are `continuum echo`'s flags; the http-echo kind renders its command line from the
// same struct.
type Flags struct {
	Config httpecho.Config
}

// DefaultFlags are `continuum echo`'s defaults: the server's.
func DefaultFlags() Flags { return Flags{Config: httpecho.DefaultConfig()} }

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "host:port to listen on")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "name in response bodies (default: the hostname)")
	fs.DurationVar(&cfg.Settings.Delay, "delay", cfg.Settings.Delay, "processing delay per request (timer, no CPU)")
	fs.DurationVar(&cfg.Settings.CPUWork, "cpu-work", cfg.Settings.CPUWork, "CPU time burnt per request")
	fs.IntVar(&cfg.Settings.ResponseSize, "response-size", cfg.Settings.ResponseSize, "exact response body size in bytes (0: a short message)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long to drain requests in flight on shutdown")
}

func newEchoCmd() *cobra.Command {
	flags := DefaultFlags()
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
			cfg := flags.Config
			cfg.Logger = cli.Logger()
			return httpecho.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
