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
	var out string
	var quick bool
	var variants []string
	cfg := proxybench.DefaultConfig(false)
	c := &cobra.Command{
		Use:   "proxy [--proxy-bin bin/continuum-proxy] [--rates 100,1000,5000] [--out FILE.md] [--quick]",
		Short: "Latency the proxy adds (p50/p99, direct vs through it), its CPU per 1000 req/s and its memory",
		Long: `Starts an echo upstream in this process and the slim continuum-proxy binary as a child process, then
runs each rate open loop directly against the upstream and through the proxy, alternating which goes first,
--repeats times. Reports medians of p50/p99 and of the added latency, the proxy's CPU (from /proc/PID/stat)
per 1000 req/s and its VmRSS/RssAnon/RssFile (from /proc/PID/status), against the proxy's goals (docs/proxy.md)
(p99 added <= 0.5 ms at 1000 req/s, VmRSS <= 10 MiB). Writes Markdown and the raw JSON next to it.`,
		Example: `  make build && continuum bench proxy --out results/proxy.md
  CGO_ENABLED=0 go build -tags nokubernetes,nokv -o bin/continuum-proxy-min ./cmd/continuum-proxy
  continuum bench proxy --variant minimal=bin/continuum-proxy-min --out results/proxy.md
  continuum bench proxy --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick {
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
			return benchkit.Write(cmd.OutOrStdout(), out, proxybench.Markdown(res), res)
		},
	}
	f := c.Flags()
	f.StringVarP(&out, "out", "o", "", "write Markdown here, and the raw JSON next to it (default: stdout)")
	f.BoolVar(&quick, "quick", false, "two rates, one short repeat (smoke test)")
	f.StringVar(&cfg.ProxyBin, "proxy-bin", "", "continuum-proxy binary to measure (default: next to this binary, else $PATH)")
	cli.Float64sVar(f, &cfg.Rates, "rates", cfg.Rates, "open-loop rates (req/s)")
	f.DurationVar(&cfg.Step, "step", cfg.Step, "duration of each run")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of each run excluded from the statistics")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "repeats of every (rate, direct|proxy) run")
	f.Float64Var(&cfg.MemoryRate, "memory-rate", cfg.MemoryRate, "rate whose runs give the memory figure")
	f.StringArrayVar(&variants, "variant", nil, "another build NAME=PATH whose memory and CPU are measured at --memory-rate (repeatable)")
	return c
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
