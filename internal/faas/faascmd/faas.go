package faascmd

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/platform"
)

func init() { cli.RegisterSystem("faas", newFaaSCmd) }

func newFaaSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "faas",
		Short: "The function platform (after the edge IoT analytics paper, docs/seeds.md): watchdogs in front of OpenFaaS python3-http handlers",
		Example: `  continuum faas watchdog --mode http --handler python/functions/iot-analytics --listen :8080
  continuum faas watchdog --mode classic --handler python/functions/hello --listen :8081
  continuum faas gateway --function name=hello,handler=python/functions/hello
  continuum faas list
  continuum faas scale hello --replicas 2`,
	}
	cmd.AddCommand(newWatchdogCmd(), newFaaSGatewayCmd(), newListCmd(), newScaleCmd())
	return cmd
}

// GatewayFlags are `continuum faas gateway`'s flags. The faas-gateway kind renders its command
// line from the same struct (cli.Args), so each flag's name and default is written once, in Bind
// and DefaultGatewayFlags.
type GatewayFlags struct {
	Listen string
	// Functions are the --function values: name=...,handler=...[,...] (gateway.ParseFunction).
	Functions []string
	OutDir    string
	Tick      time.Duration
	// ShutdownGrace bounds how long a stopping gateway lets requests under way finish
	// (gateway.Config.ShutdownGrace).
	ShutdownGrace time.Duration
	// Testbed, StateDir (or Platform, a platform endpoint), Node, Name, LogDir, InstanceCPUs and
	// InstancePort place the instances as processes of a testbed.
	Testbed, Platform, StateDir, Node, Name, LogDir string
	InstanceCPUs                                    float64
	InstancePort                                    int
	// BasicAuth protects /system/ (on unless turned off); its credentials come from
	// BasicAuthUserFile and BasicAuthPasswordFile, else SecretMountPath (default
	// DataDir/secrets), where they are generated on the first start.
	BasicAuth                                            bool
	BasicAuthUserFile, BasicAuthPasswordFile, SecretPath string
	DataDir                                              string
	TLSCert, TLSKey                                      string
}

// DefaultGatewayFlags are the defaults of `continuum faas gateway`'s flags.
func DefaultGatewayFlags() GatewayFlags {
	return GatewayFlags{Listen: ":8080", Tick: gateway.DefaultTick, ShutdownGrace: gateway.DefaultShutdownGrace, Name: "gateway", InstanceCPUs: 1,
		InstancePort: gateway.DefaultBasePort, BasicAuth: true, DataDir: gateway.DefaultDataDir()}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *GatewayFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Listen, "listen", f.Listen, "address the gateway serves on")
	fs.StringArrayVar(&f.Functions, "function", f.Functions, "a function: name=...,handler=...[,KEY=VALUE...], keys listed above (repeatable)")
	fs.StringVar(&f.OutDir, "out", f.OutDir, "directory for replicas.csv, scaling.csv and gateway.json")
	fs.DurationVar(&f.Tick, "tick", f.Tick, "how often autoscalers decide")
	fs.DurationVar(&f.ShutdownGrace, "shutdown-grace", f.ShutdownGrace, "on stop, how long requests under way may finish before their instances are stopped and they fail with 503 (a function's exec timeout, if shorter, bounds its own)")
	fs.StringVar(&f.Testbed, "testbed", f.Testbed, "start instances as processes of this testbed (default: in this process)")
	fs.StringVar(&f.Platform, "platform", f.Platform, "start instances on the platform at this endpoint, as a scenario's run passes it (testbed:NAME@STATE_DIR); instead of --testbed and --state-dir")
	fs.StringVar(&f.StateDir, "state-dir", f.StateDir, "the testbed's state directory (default $CONTINUUM_STATE_DIR or /run/continuum)")
	fs.StringVar(&f.Node, "node", f.Node, "with --testbed: the node instances run on (the gateway's)")
	fs.StringVar(&f.Name, "name", f.Name, "with --testbed: prefix of the instances' process names (<name>-<function>-<n>), unique in the testbed")
	fs.StringVar(&f.LogDir, "log-dir", f.LogDir, "with --testbed: where instances' logs go")
	fs.Float64Var(&f.InstanceCPUs, "instance-cpus", f.InstanceCPUs, "with --testbed: cores each instance may use (0: unlimited)")
	fs.IntVar(&f.InstancePort, "instance-port", f.InstancePort, "with --testbed: the first loopback port instances listen on")
	fs.BoolVar(&f.BasicAuth, "basic-auth", f.BasicAuth, "require basic auth on /system/ (OpenFaaS' basic_auth); --basic-auth=false leaves the system API open to anyone who reaches the port: for experiments on a trusted network only")
	fs.StringVar(&f.BasicAuthUserFile, "basic-auth-user-file", f.BasicAuthUserFile, "file holding the basic auth user (with --basic-auth-password-file; default: the secret mount path's basic-auth-user)")
	fs.StringVar(&f.BasicAuthPasswordFile, "basic-auth-password-file", f.BasicAuthPasswordFile, "file holding the basic auth password (default: the secret mount path's basic-auth-password)")
	fs.StringVar(&f.SecretPath, "secret-mount-path", f.SecretPath, "directory with basic-auth-user and basic-auth-password, OpenFaaS' secret_mount_path; if both are absent a password is generated there, written 0600 and printed once (default DATA_DIR/secrets)")
	fs.StringVar(&f.DataDir, "data-dir", f.DataDir, "the gateway's state directory (generated credentials go in its secrets/)")
	fs.StringVar(&f.TLSCert, "tls-cert", f.TLSCert, "serve HTTPS with this PEM certificate (chain) file, with --tls-key")
	fs.StringVar(&f.TLSKey, "tls-key", f.TLSKey, "the PEM private key of --tls-cert")
}

// Auth resolves the gateway's credentials from the flags: nil with --basic-auth=false;
// generated says they were made just now (print the password once).
func (f *GatewayFlags) Auth() (c *gateway.Credentials, generated bool, dir string, err error) {
	if !f.BasicAuth {
		return nil, false, "", nil
	}
	dir = f.SecretPath
	if dir == "" {
		dir = gateway.SecretDir(f.DataDir)
	}
	cred, generated, err := gateway.AuthFiles{UserFile: f.BasicAuthUserFile, PasswordFile: f.BasicAuthPasswordFile, SecretDir: dir}.Load()
	if err != nil {
		return nil, false, dir, err
	}
	return &cred, generated, dir, nil
}

func newFaaSGatewayCmd() *cobra.Command {
	flags := DefaultGatewayFlags()
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Route /function/NAME to function instances and scale them (OpenFaaS-style gateway)",
		Long: `Serves the functions given with --function (comma-separated key=value; the keys are listed
below). Requests to /function/NAME/... go to the instance with the fewest requests under way; GET /system/functions lists the functions, POST /system/scale-function/NAME
{"replicas": N} scales one, /metrics is Prometheus (gateway_function_invocation_total,
gateway_functions_seconds, gateway_service_count, gateway_cold_start_seconds).

scaler=rps is OpenFaaS CE's autoscaler (above rps_threshold, default 5, for rps_window, default
5s: +20% of max per window; back to min when it stops). idle_timeout scales a function with min=0
to zero; a request then waits for a new instance (a cold start) instead of failing.

Instances run as watchdogs served by this process, or with --testbed (or --platform) as processes of that testbed
on --node, each limited to --instance-cpus cores. With --out, replicas.csv, scaling.csv and
gateway.json record the instances over time.

/system/ needs basic auth, as on OpenFaaS: the user and password are read from
--basic-auth-user-file and --basic-auth-password-file, or from basic-auth-user and
basic-auth-password in --secret-mount-path (default DATA_DIR/secrets). When that directory has
neither, a password is generated for user admin, written there (0600) and printed once; later
starts reuse it. --basic-auth=false turns the check off (experiments on a trusted network only).
/function/NAME is public unless the function has key_file; /healthz and /metrics are public.
--tls-cert and --tls-key serve HTTPS. continuum faas list and scale call /system/ with the
credentials.

Keys of --function (name, and handler or url, are required):
` + gateway.FunctionKeysHelp(),
		Example: `  continuum faas gateway --listen :8080 --function name=analytics,handler=python/functions/iot-analytics,mode=http,scaler=rps,max=20
  continuum faas gateway --function name=hello,handler=python/functions/hello,min=0,idle_timeout=30s
  curl -d Ada localhost:8080/function/hello
  continuum faas gateway --secret-mount-path /var/openfaas/secrets --tls-cert gw.crt --tls-key gw.key --function name=hello,handler=python/functions/hello
  curl -u admin:$(cat ~/.local/state/continuum/faas-gateway/secrets/basic-auth-password) localhost:8080/system/functions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(flags.Functions) == 0 {
				return fmt.Errorf("no function: give --function name=...,handler=...")
			}
			cfg := gateway.RunConfig{Listen: flags.Listen, OutDir: flags.OutDir, Gateway: gateway.Config{Tick: flags.Tick, ShutdownGrace: flags.ShutdownGrace},
				TLSCert: flags.TLSCert, TLSKey: flags.TLSKey}
			auth, generated, secretDir, err := flags.Auth()
			if err != nil {
				return err
			}
			cfg.Gateway.Auth = auth
			out := cmd.OutOrStdout()
			switch {
			case auth == nil:
				fmt.Fprintln(out, "basic auth is off (--basic-auth=false): anyone who reaches the gateway can list and scale functions")
			case generated:
				// The only time the password is shown: the files hold it from now on.
				fmt.Fprintf(out, "basic auth: generated a password for user %s: %s\n(saved in %s; it is not printed again)\n",
					auth.User, auth.Password, secretDir)
			default:
				fmt.Fprintf(out, "basic auth: user %s, password from %s\n", auth.User, passwordSource(flags, secretDir))
			}
			for _, s := range flags.Functions {
				f, err := gateway.ParseFunction(s)
				if err != nil {
					return err
				}
				cfg.Gateway.Functions = append(cfg.Gateway.Functions, f)
			}
			if flags.Testbed != "" || flags.Platform != "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				py, err := faas.FindPython()
				if err != nil {
					return err
				}
				endpoint := flags.Platform
				if endpoint == "" {
					// --testbed NAME [--state-dir DIR] is the testbed's endpoint written out
					// (testbed:NAME@DIR; no DIR: the default state dir).
					endpoint = platform.Endpoint{Platform: "testbed", Address: flags.Testbed + "@" + flags.StateDir}.String()
				}
				instances, err := gateway.PlatformClient(endpoint)
				if err != nil {
					return err
				}
				cfg.Gateway.Provider = &gateway.PlatformProvider{Platform: instances,
					Node: flags.Node, Python: py, Binary: exe, LogDir: flags.LogDir, Prefix: flags.Name,
					CPUs: flags.InstanceCPUs, BasePort: flags.InstancePort, WatchdogArgs: InstanceArgs}
			} else {
				py, err := faas.FindPython()
				if err != nil && needsPython(cfg.Gateway.Functions) {
					return err
				}
				cfg.Gateway.Provider = &gateway.LocalProvider{Python: py}
			}
			scheme := "http"
			if flags.TLSCert != "" {
				scheme = "https"
			}
			return gateway.Run(cmd.Context(), cfg, func(a net.Addr) {
				fmt.Fprintf(out, "gateway listening on %s (%s)\n", a, scheme)
			})
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

// WatchdogFlags are `continuum faas watchdog`'s flags. The function kind and the gateway's
// testbed instances (InstanceArgs) render their command lines from the same struct (cli.Args),
// so each flag's name and default is written once, in Bind and DefaultWatchdogFlags.
type WatchdogFlags struct {
	Mode, Handler, Server string
	UpstreamPort          int
	Zygote                string
	StartZygote           bool
	Listen                string
	ExecTimeout           time.Duration
	WriteTimeout          time.Duration
	ReadTimeout           time.Duration
	MaxInflight           int
}

// DefaultWatchdogFlags are the defaults of `continuum faas watchdog`'s flags: the watchdog's.
func DefaultWatchdogFlags() WatchdogFlags {
	return WatchdogFlags{Mode: faas.ModeHTTP, Server: faas.ServerContinuum, Listen: watchdog.DefaultListen,
		ExecTimeout: watchdog.DefaultExecTimeout, ReadTimeout: watchdog.DefaultReadTimeout}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *WatchdogFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Mode, "mode", f.Mode, "classic (a process per request) or http (one reused upstream process)")
	fs.StringVar(&f.Handler, "handler", f.Handler, "function folder (with handler.py) or its handler.py")
	fs.StringVar(&f.Server, "server", f.Server, "http mode's upstream server: continuum or flask")
	fs.IntVar(&f.UpstreamPort, "upstream-port", f.UpstreamPort, "http mode: loopback port of the upstream process (0: a free one)")
	fs.StringVar(&f.Zygote, "zygote", f.Zygote, "fork the http upstream, or each classic request's process, from the zygote on this unix socket (python -m continuum_functions.zygote)")
	fs.BoolVar(&f.StartZygote, "start-zygote", f.StartZygote, "start a zygote for the handler and use it (see --zygote)")
	fs.StringVar(&f.Listen, "listen", f.Listen, "address the watchdog serves on")
	fs.DurationVar(&f.ExecTimeout, "exec-timeout", f.ExecTimeout, "longest a request may run in the function (then 504)")
	fs.DurationVar(&f.WriteTimeout, "write-timeout", f.WriteTimeout, "longest to write a response (default exec timeout + 5s)")
	fs.DurationVar(&f.ReadTimeout, "read-timeout", f.ReadTimeout, "longest to read a request")
	fs.IntVar(&f.MaxInflight, "max-inflight", f.MaxInflight, "requests at once before 429 (0: no limit)")
}

// InstanceArgs is the command line, after the binary, of a gateway's instance of fn run as a
// process (gateway.PlatformProvider.WatchdogArgs): `faas watchdog` serving fn on listen, forked
// from the zygote on the unix socket zygote unless that is empty.
func InstanceArgs(fn *gateway.Function, listen, zygote string) []string {
	f := DefaultWatchdogFlags()
	f.Mode, f.Handler, f.Server, f.Listen = fn.Mode, fn.Handler, fn.Server, listen
	f.ExecTimeout, f.MaxInflight, f.Zygote = fn.ExecTimeout, fn.MaxInflight, zygote
	return append([]string{"faas", "watchdog"}, cli.Args(DefaultWatchdogFlags(), f)...)
}

func newWatchdogCmd() *cobra.Command {
	flags := DefaultWatchdogFlags()
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
			h, err := faas.ResolveHandler(flags.Handler)
			if err != nil {
				return err
			}
			py, err := faas.FindPython()
			if err != nil {
				return err
			}
			zygoteSock := flags.Zygote
			if flags.StartZygote {
				z, err := faas.StartZygote(cmd.Context(), py, h, filepath.Join(os.TempDir(), fmt.Sprintf("continuum-zygote-%d.sock", os.Getpid())))
				if err != nil {
					return err
				}
				defer z.Stop()
				zygoteSock = z.Socket
			}
			wc, err := faas.WatchdogFor(py, faas.Instance{Mode: flags.Mode, Handler: h, Server: flags.Server,
				UpstreamPort: flags.UpstreamPort, Zygote: zygoteSock, ExecTimeout: flags.ExecTimeout})
			if err != nil {
				return err
			}
			wc.Listen, wc.WriteTimeout, wc.ReadTimeout, wc.MaxInflight = flags.Listen, flags.WriteTimeout, flags.ReadTimeout, flags.MaxInflight
			return watchdog.Run(cmd.Context(), wc, func(a net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "watchdog (%s) for %s listening on %s\n", flags.Mode, h, a)
			})
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

func passwordSource(f GatewayFlags, secretDir string) string {
	if f.BasicAuthPasswordFile != "" {
		return f.BasicAuthPasswordFile
	}
	return filepath.Join(secretDir, gateway.PasswordFileName)
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
