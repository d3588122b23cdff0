package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/netbench"
)

func init() { commands = append(commands, newBenchCmd) }

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that compare configured and measured behaviour (Markdown to stdout, or --out FILE.md and its JSON)",
		Example: `  continuum bench testbed --out results/testbed.md
  continuum bench udp-reflect --listen :9000          # inside a node
  continuum bench udp-probe --target b:9000 --rate 20000 --duration 5s`,
	}
	for _, sub := range benchCommands {
		c.AddCommand(sub())
	}
	c.AddCommand(cli.Commands("bench")...) // systems' benchmarks
	c.PersistentPreRun = tuneGeneratorGC
	return c
}

// benchCommands are the engine's `continuum bench` subcommands (the testbed's); systems register theirs with the cli registry under "bench".
var benchCommands = []func() *cobra.Command{newBenchTestbedCmd, newBenchReflectCmd, newBenchProbeCmd}

func newBenchTestbedCmd() *cobra.Command {
	var o benchkit.Output
	var cpuprofile string
	var only []string
	var repeats int
	c := &cobra.Command{
		Use:   "testbed [--out FILE.md] [--quick] [--repeats N] [--only GROUP,...]",
		Short: "Measure the emulated links: delay, jitter and loss accuracy, small-packet rate, bulk TCP, bandwidth accuracy",
		Example: `  continuum bench testbed --out results/testbed.md
  continuum bench testbed --only packets,tcp --repeats 5
  continuum bench testbed --quick                      # smoke test: short cases, one repeat`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("repeats") && o.Quick {
				repeats = 1
			}
			if repeats < 1 {
				return fmt.Errorf("--repeats %d: must be at least 1", repeats)
			}
			cases, err := netbench.Select(netbench.Cases(o.Quick), only)
			if err != nil {
				return err
			}
			if cpuprofile != "" {
				stop, err := startCPUProfile(cpuprofile)
				if err != nil {
					return err
				}
				defer stop()
			}
			res, err := netbench.Run(cmd.Context(), cases,
				netbench.Options{Binary: exe, Repeats: repeats, Log: cmd.ErrOrStderr(), Command: benchkit.Invocation()})
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), netbench.Markdown(res), res)
		},
	}
	o.Flags(c.Flags(), "short cases and one repeat unless --repeats is given (smoke test)")
	c.Flags().IntVar(&repeats, "repeats", 3, "runs of every case; the result states medians and their range")
	c.Flags().StringSliceVar(&only, "only", nil, "run only these groups of cases and their baselines (accuracy, jitter, packets, tcp, bandwidth, loss, baseline)")
	c.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of this process (which hosts the fabric) to FILE")
	return c
}

// startCPUProfile profiles this process into path until the returned function runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func newBenchReflectCmd() *cobra.Command {
	var listen string
	c := &cobra.Command{
		Use:     "udp-reflect [--listen :9000]",
		Short:   "Echo UDP datagrams back to their sender (the far end of udp-probe)",
		Example: `  continuum bench udp-reflect --listen :9000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return netbench.Reflect(cmd.Context(), listen)
		},
	}
	c.Flags().StringVar(&listen, "listen", ":9000", "UDP address to listen on")
	return c
}

func newBenchProbeCmd() *cobra.Command {
	var cfg netbench.ProbeConfig
	c := &cobra.Command{
		Use:     "udp-probe --target HOST:PORT [--rate N] [--duration D] [--size B]",
		Short:   "Send paced UDP packets to a reflector and print round-trip statistics as JSON",
		Example: `  continuum bench udp-probe --target b:9000 --rate 20000 --duration 5s --size 64`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), cfg.Duration+cfg.Linger+time.Minute)
			defer cancel()
			r, err := netbench.Probe(ctx, cfg)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
		},
	}
	c.Flags().StringVar(&cfg.Target, "target", "", "reflector address (required)")
	c.Flags().IntVar(&cfg.Rate, "rate", 1000, "packets per second")
	c.Flags().DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long to send")
	c.Flags().IntVar(&cfg.Size, "size", 64, "UDP payload bytes (>= 16)")
	c.Flags().DurationVar(&cfg.Linger, "linger", time.Second, "wait this long for late replies")
	_ = c.MarkFlagRequired("target")
	return c
}
