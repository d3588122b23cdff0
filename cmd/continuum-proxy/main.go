// Command continuum-proxy is `continuum proxy` as a binary of its own, for nodes where the
// proxy's memory budget (10 MB) matters: it links the proxy and the discovery sources it
// needs, and none of the testbed, experiment or kv store code of the full binary. Sources are
// linked in by the source_*.go files; build tags leave them out (-tags nokubernetes,nokv).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/continuum-project/continuum/internal/proxy"
	proxyconfig "github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/version"
)

const usage = `Usage: continuum-proxy --config FILE [--listen :8080] [--admin-listen 127.0.0.1:9090] [--admin-token-file FILE] [--node NAME]

The per-node QoS-aware HTTP proxy (the same as "continuum proxy"; see docs/proxy.md).

Example:
  continuum-proxy --config /etc/continuum/proxy.yaml --listen :8080 --admin-listen :9090 --admin-token-file /etc/continuum/admin-token --node worker3
  curl -H 'X-Continuum-Service: dps' http://127.0.0.1:8080/

Flags:
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("continuum-proxy", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nDiscovery sources in this binary: %v\n", discovery.SourceKeys())
	}
	path := fs.String("config", "", "proxy configuration file (YAML; required)")
	listen := fs.String("listen", "", "host:port clients send requests to (default: the configuration's, else :8080)")
	admin := fs.String("admin-listen", "", "host:port of /metrics, /healthz, /readyz and /debug/pools; - disables (default: the configuration's, else 127.0.0.1:9090, loopback only); an address other machines reach needs -admin-token-file")
	tokenFile := fs.String("admin-token-file", "", "file with a token /metrics and /debug/pools then require as Authorization: Bearer TOKEN (default: the configuration's admin_token_file)")
	node := fs.String("node", "", "this proxy's node (default: the configuration's node, else the hostname)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Println(version.String())
		return nil
	}
	if *path == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("--config FILE is required and no arguments are taken")
	}
	cfg, err := proxyconfig.LoadConfig(*path)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *admin != "" {
		cfg.AdminListen = *admin
	}
	if *tokenFile != "" {
		cfg.AdminTokenFile = *tokenFile
	}
	if *node != "" {
		cfg.Node = *node
	}
	// A per-node daemon with a memory budget: collect when the heap has grown by half rather
	// than doubled (about 2 MiB less resident at 1000 req/s for a few percent more CPU). The
	// GOGC environment variable still decides when set.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	level := slog.LevelInfo
	if os.Getenv("CONTINUUM_LOG") == "debug" {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return proxy.Run(ctx, cfg)
}
