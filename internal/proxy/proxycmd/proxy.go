package proxycmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/proxy"
	proxyconfig "github.com/continuum-project/continuum/internal/proxy/config"

	// Discovery sources register their YAML keys; the file and testbed sources live in package
	// discovery itself.
	_ "github.com/continuum-project/continuum/internal/proxy/discovery/kubernetes"
	_ "github.com/continuum-project/continuum/internal/proxy/discovery/kvprefix"
)

func init() { cli.RegisterSystem("proxy", newProxyCmd) }

// Flags are `continuum proxy`'s flags; the proxy kind renders its command line from the same
// struct. Listen, AdminListen and Node override the configuration file's when given; empty
// (their default) leaves the file's.
type Flags struct {
	Config, Listen, AdminListen, Node string
	AdminTokenFile                    string
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	fs.StringVarP(&f.Config, "config", "c", f.Config, "proxy configuration file (YAML; required)")
	fs.StringVar(&f.Listen, "listen", f.Listen, "host:port clients send requests to (default: the configuration's, else :8080)")
	fs.StringVar(&f.AdminListen, "admin-listen", f.AdminListen, "host:port of /metrics, /healthz, /readyz and /debug/pools; - disables (default: the configuration's, else 127.0.0.1:9090, loopback only); an address other machines reach needs --admin-token-file")
	fs.StringVar(&f.AdminTokenFile, "admin-token-file", f.AdminTokenFile, "file with a token /metrics and /debug/pools then require as Authorization: Bearer TOKEN (default: the configuration's admin_token_file)")
	fs.StringVar(&f.Node, "node", f.Node, "this proxy's node (default: the configuration's node, else the hostname)")
}

func newProxyCmd() *cobra.Command {
	var flags Flags
	cmd := &cobra.Command{
		Use:   "proxy --config FILE [--listen :8080] [--admin-listen 127.0.0.1:9090] [--admin-token-file FILE] [--node NAME]",
		Short: "Run the per-node QoS-aware HTTP proxy (QoS pools; round-robin, random and proximity baselines)",
		Long: `Routes each request to an instance of the service it names (the X-Continuum-Service header, or
the Host header's first label: dps.anything -> dps) and tells which instance answered in the
X-Continuum-Instance response header. Instances come from the discovery sources in the configuration
(file, testbed, kubernetes, kv); per service, the qos strategy keeps a pool of the instances whose
estimated latency meets the requirement and balances over it. Errors are JSON: 400 malformed, 404
unknown service, 503 no instance (with Retry-After), 502 unreachable, 504 timeout. The admin listener
serves /metrics, /healthz, /readyz and /debug/pools, on loopback unless told otherwise: an admin
address other machines can reach is refused without --admin-token-file, whose token /metrics and
/debug/pools then require (Authorization: Bearer TOKEN). See docs/proxy.md and docs/security.md.

Flags override the configuration file's listen, admin_listen, admin_token_file and node.`,
		Example: `  cat > proxy.yaml <<'EOF'
  discovery:
    - file: instances.yaml
  services:
    dps:
      strategy: qos
      qos: {latency: 80ms, percentile: 95}
  EOF
  continuum proxy --config proxy.yaml --listen :8080 --node worker3
  curl -H 'X-Continuum-Service: dps' http://127.0.0.1:8080/
  curl http://127.0.0.1:9090/debug/pools
  head -c 32 /dev/urandom | base64 > admin-token
  continuum proxy --config proxy.yaml --admin-listen :9090 --admin-token-file admin-token
  curl -H "Authorization: Bearer $(cat admin-token)" http://worker3:9090/metrics`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := proxyconfig.LoadConfig(flags.Config)
			if err != nil {
				return err
			}
			if flags.Listen != "" {
				cfg.Listen = flags.Listen
			}
			if flags.AdminListen != "" {
				cfg.AdminListen = flags.AdminListen
			}
			if flags.AdminTokenFile != "" {
				cfg.AdminTokenFile = flags.AdminTokenFile
			}
			if flags.Node != "" || cfg.Node == "" {
				cfg.Node = flags.Node
			}
			cfg.Logger = cli.Logger()
			return proxy.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
