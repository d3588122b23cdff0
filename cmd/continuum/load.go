package main

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/httptarget"
)

func init() { commands = append(commands, newLoadCmd) }

func newLoadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "load",
		Short:   "Generate load against targets and record latency (open or closed loop, HDR histograms)",
		Example: `  continuum load http --target edge=http://10.0.0.2:8080/ --rate 100 --duration 30s --out results/load`,
	}
	cmd.AddCommand(newLoadHTTPCmd())
	return cmd
}

func newLoadHTTPCmd() *cobra.Command {
	def := loadgen.DefaultConfig()
	cfg := httptarget.Config{Load: def}
	var targets []string
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Load HTTP endpoints; each --target is a series in the results",
		Long: `Sends HTTP requests to every target, open loop at --rate requests/s per target (latency
measured from the intended send time, so a stalled server is charged for the requests queued behind
it) or closed loop with --clients per target. Writes stats.json, timeseries.csv, percentiles.csv,
latency.hlog and errors.csv to --out, and one JSON progress line per second on stdout, ending with a
"done" line. Ctrl-C stops early and still writes the results (status "interrupted").`,
		Example: `  # 200 requests/s for 30 s against two targets, 5 s warm-up
  continuum load http --target edge=http://10.0.0.2:8080/ --target cloud=http://10.0.1.2:8080/ \
    --rate 200 --duration 30s --warmup 5s --out results/http

  # 16 closed-loop clients POSTing 1 KiB bodies
  continuum load http --target e=http://127.0.0.1:8080/ --clients 16 --method POST --body-size 1024 --out /tmp/load`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range targets {
				name, url, err := httptarget.ParseTarget(t)
				if err != nil {
					return err
				}
				cfg.Endpoints = append(cfg.Endpoints, httptarget.Endpoint{Name: name, URL: url})
			}
			if cmd.Flags().Changed("clients") && !cmd.Flags().Changed("rate") {
				cfg.Load.Rate = 0 // --clients alone selects the closed loop
			}
			cfg.Load.Progress = cmd.OutOrStdout()
			_, err := httptarget.Run(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&targets, "target", nil, "NAME=URL of a series (repeatable)")
	f.Float64Var(&cfg.Load.Rate, "rate", def.Rate, "open loop: requests/s per target")
	f.IntVar(&cfg.Load.Clients, "clients", 0, "closed loop: clients per target (instead of --rate)")
	f.DurationVar(&cfg.Load.ThinkTime, "think-time", 0, "closed loop: pause between a response and the next request")
	f.DurationVar(&cfg.Load.Duration, "duration", def.Duration, "run duration, warm-up included")
	f.DurationVar(&cfg.Load.Warmup, "warmup", 0, "leading part of the run excluded from stats.json")
	f.DurationVar(&cfg.Load.Timeout, "timeout", def.Timeout, "per-request timeout, from the intended send time")
	f.StringVar(&cfg.Method, "method", "GET", "HTTP method")
	f.IntVar(&cfg.BodySize, "body-size", 0, "request body size in bytes")
	f.IntVar(&cfg.Load.MaxInflight, "max-inflight", def.MaxInflight, "open loop: cap on outstanding requests per target")
	f.StringVar(&cfg.Load.OutDir, "out", "", "directory for the results files (none written if empty)")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed for the request body content")
	_ = cmd.MarkFlagRequired("target")
	return cmd
}
