package proxycmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/proxy/proxybench"
)

func init() { cli.Register("bench", newBenchProxyCmd) }

func newBenchProxyCmd() *cobra.Command {
	var o benchkit.Output
	var variants []string
	var haproxy string
	var requireHAProxy bool
	cfg := proxybench.DefaultConfig(false)
	c := &cobra.Command{
		Use:   "proxy [--proxy-bin bin/continuum-proxy] [--haproxy /usr/sbin/haproxy] [--rates 100,1000,5000,10000] [--out FILE.md] [--quick]",
		Short: "Latency the proxy adds (p50/p99, direct vs through it), its CPU per 1000 req/s and its memory, beside HAProxy",
		Long: `Starts an echo upstream in this process, the slim continuum-proxy binary (GOMAXPROCS=1 by default) and
HAProxy (one thread, keep-alive to client and upstream, a configuration written into a temporary directory)
as child processes, then runs each rate open loop directly against the upstream, through the proxy and
through HAProxy, rotating which goes first, --repeats times; then a closed loop of --one-core-clients
clients through each for the throughput on one core. With --pin (default) the proxy under test runs alone
on the last CPU and the load generator and upstream on the others. Reports medians of p50/p99 and of the
added latency, each proxy's CPU (from /proc/PID/stat) per 1000 req/s and its VmRSS/RssAnon/RssFile (from
/proc/PID/status), against the proxy's goals (docs/proxy.md). Writes Markdown and the raw JSON next to it.
Without HAProxy (not installed, or --haproxy none) its columns are left out; --require-haproxy makes that
an error.`,
		Example: `  make build && continuum bench proxy --out results/proxy.md
  CGO_ENABLED=0 go build -tags nokubernetes,nokv -o bin/continuum-proxy-min ./cmd/continuum-proxy
  continuum bench proxy --variant minimal=bin/continuum-proxy-min --out results/proxy.md
  continuum bench proxy --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Quick {
				q := proxybench.DefaultConfig(true)
				f := cmd.Flags()
				if !f.Changed("rates") {
					cfg.Rates = q.Rates
				}
				if !f.Changed("step") {
					cfg.Step, cfg.Warmup = q.Step, q.Warmup
				}
				if !f.Changed("repeats") {
					cfg.Repeats = q.Repeats
				}
			}
			if cfg.ProxyBin == "" {
				bin, err := findProxyBin()
				if err != nil {
					return err
				}
				cfg.ProxyBin = bin
			}
			switch bin, missing, err := resolveHAProxy(haproxy); {
			case err != nil:
				return err
			case bin == "" && requireHAProxy:
				return fmt.Errorf("--require-haproxy: %s", missing)
			default:
				cfg.HAProxyBin, cfg.HAProxyMissing = bin, missing
			}
			for _, v := range variants {
				name, bin, ok := strings.Cut(v, "=")
				if !ok || name == "" || bin == "" {
					return fmt.Errorf("--variant %q: want NAME=PATH, e.g. minimal=bin/continuum-proxy-min", v)
				}
				cfg.Variants = append(cfg.Variants, proxybench.Variant{Name: name, Bin: bin})
			}
			cfg.Log, cfg.Command = cmd.ErrOrStderr(), benchkit.Invocation()
			res, err := proxybench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), proxybench.Markdown(res), res)
		},
	}
	f := c.Flags()
	o.Flags(f, "two rates, one short repeat (smoke test)")
	f.StringVar(&cfg.ProxyBin, "proxy-bin", "", "continuum-proxy binary to measure (default: next to this binary, else $PATH)")
	cli.Float64sVar(f, &cfg.Rates, "rates", cfg.Rates, "open-loop rates (req/s)")
	f.DurationVar(&cfg.Step, "step", cfg.Step, "duration of each run")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of each run excluded from the statistics")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "repeats of every (rate, direct|proxy) run")
	f.Float64Var(&cfg.MemoryRate, "memory-rate", cfg.MemoryRate, "rate whose runs give the memory figure")
	f.StringArrayVar(&variants, "variant", nil, "another build NAME=PATH whose memory and CPU are measured at --memory-rate (repeatable)")
	f.StringVar(&haproxy, "haproxy", "", "HAProxy binary measured beside the proxy; none: skip it (default: "+proxybench.DefaultHAProxy+", else $PATH)")
	f.BoolVar(&requireHAProxy, "require-haproxy", false, "fail when HAProxy is not found instead of leaving its columns out")
	f.IntVar(&cfg.ProxyGOMAXPROCS, "proxy-gomaxprocs", cfg.ProxyGOMAXPROCS, "GOMAXPROCS of the proxy process (1: one thread like HAProxy; 0: the Go default, one per CPU)")
	f.BoolVar(&cfg.Pin, "pin", cfg.Pin, "run the proxy under test alone on the last CPU, the load generator and upstream on the others (needs taskset)")
	f.IntVar(&cfg.OneCoreClients, "one-core-clients", cfg.OneCoreClients, "closed-loop clients of the throughput-on-one-core runs (0: skip them)")
	return c
}

// resolveHAProxy finds the HAProxy binary: flag "none" skips it (missing says why); an explicit
// path must exist; the default is Debian's path, then $PATH.
func resolveHAProxy(flag string) (bin, missing string, err error) {
	switch flag {
	case "none":
		return "", "skipped (--haproxy none)", nil
	case "":
		if st, err := os.Stat(proxybench.DefaultHAProxy); err == nil && st.Mode().IsRegular() {
			return proxybench.DefaultHAProxy, "", nil
		}
		if p, err := exec.LookPath("haproxy"); err == nil {
			return p, "", nil
		}
		return "", "haproxy not found at " + proxybench.DefaultHAProxy + " or in $PATH (scripts/setup.sh installs Debian's haproxy; or pass --haproxy PATH)", nil
	}
	p, err := exec.LookPath(flag)
	if err != nil {
		return "", "", fmt.Errorf("--haproxy %q: %v; want the path of an haproxy binary, or none to skip it", flag, err)
	}
	return p, "", nil
}

// findProxyBin looks for continuum-proxy next to this executable (make build puts both in
// bin/), then in $PATH.
func findProxyBin() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "continuum-proxy")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("continuum-proxy"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("continuum-proxy binary not found next to this binary or in $PATH: run `make build` or pass --proxy-bin")
}
