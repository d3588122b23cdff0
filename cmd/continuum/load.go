package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/gcfloor"
	"github.com/continuum-project/continuum/internal/loadgen/httptarget"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

func init() { commands = append(commands, newLoadCmd) }

func newLoadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Generate load against targets and record latency (open or closed loop, HDR histograms)",
		Example: `  continuum load http --target edge=http://10.0.0.2:8080/ --rate 100 --duration 30s --out results/load
  continuum load ycsb --target etcd=http://127.0.0.1:2379 --workload a --recordcount 10000 --rate 2000 --out results/ycsb`,
	}
	cmd.AddCommand(newLoadHTTPCmd(), newLoadYCSBCmd())
	cmd.AddCommand(cli.Commands("load")...) // systems' load commands (kv-lag)
	cmd.PersistentPreRun = tuneGeneratorGC
	return cmd
}

// generatorHeapFloor is the smallest Go heap goal of the commands that generate load (load and
// bench). A client library allocates several KiB per request; with Go's default goal (twice the
// live heap, a few MiB here) the generator collects many times a second, and each collection
// takes CPU from the server it measures on the same machine and delays the requests due during
// it, which the open loop then charges to the server. Up to 256 MiB of garbage is a fair price for
// a measuring tool. GOGC or GOMEMLIMIT in the environment turn this off.
const generatorHeapFloor = 256 << 20

func tuneGeneratorGC(cmd *cobra.Command, _ []string) {
	if !gcfloor.UserTuned() {
		go gcfloor.Run(cmd.Context(), generatorHeapFloor, time.Second)
	}
}

func newLoadHTTPCmd() *cobra.Command {
	flags := httptarget.DefaultFlags()
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Load HTTP endpoints; each --target is a series in the results",
		Long: `Sends HTTP requests to every target, open loop at --rate requests/s per target (latency
measured from the intended send time, so a stalled server is charged for the requests queued behind
it) or closed loop with --clients per target. Writes stats.json, timeseries.csv, percentiles.csv,
latency.hlog and errors.csv to --out, and one JSON progress line per second on stdout, ending with a
"done" line. Ctrl-C stops early and still writes the results (status "interrupted").

Behind 'continuum proxy', --service (X-Continuum-Service header) or --host (Host header) names the
service; answers that name their instance (X-Continuum-Instance) are counted per instance
(instances.csv, "instances" in stats.json). --qos-latency counts the requests that succeeded within
a response-time requirement ("qos" in stats.json, within_qos in timeseries.csv).`,
		Example: `  # 200 requests/s for 30 s against two targets, 5 s warm-up
  continuum load http --target edge=http://10.0.0.2:8080/ --target cloud=http://10.0.1.2:8080/ \
    --rate 200 --duration 30s --warmup 5s --out results/http

  # 40 requests/s through the proxy on worker3 to service dps, counting answers within 80 ms
  continuum load http --target dps=http://worker3:8080/ --service dps --qos-latency 80ms --rate 40 --out /tmp/dps

  # 16 closed-loop clients POSTing 1 KiB bodies
  continuum load http --target e=http://127.0.0.1:8080/ --clients 16 --method POST --body-size 1024 --out /tmp/load`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := flags.Resolve()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("clients") && !cmd.Flags().Changed("rate") {
				cfg.Load.Rate = 0 // --clients alone selects the closed loop
			}
			cfg.Load.Progress = cmd.OutOrStdout()
			res, err := httptarget.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return res.Failure()
		},
	}
	flags.Bind(cmd.Flags())
	_ = cmd.MarkFlagRequired("target")
	return cmd
}

func newLoadYCSBCmd() *cobra.Command {
	flags := kvtarget.DefaultYCSBFlags()
	cmd := &cobra.Command{
		Use:   "ycsb",
		Short: "Run a YCSB core workload (A-F) against etcd, continuum kv or Redis; one series per operation type",
		Long: `Runs YCSB's load phase (insert --recordcount records with --load-clients closed-loop clients,
results in --out/load) and run phase (the workload's mix of read, update, insert, scan and rmw, open loop
at --rate operations/s with latency from the intended send time, or closed loop with --clients). The
run phase lasts --duration, or until --operationcount operations are done when that is given without
--duration. Writes stats.json, timeseries.csv, percentiles.csv, latency.hlog and errors.csv with one
series per operation type; etcd errors are typed by gRPC code (grpc_Unavailable ...), Redis errors by
reply prefix (redis_LOADING ...); a read of a missing key is "not_found". Progress lines on stdout as
'continuum load http'. Workload properties (--readproportion ...) override the preset's.`,
		Example: `  # workload A, 10k records, 2000 ops/s for 30 s against etcd
  continuum load ycsb --target etcd=http://127.0.0.1:2379 --workload a --recordcount 10000 --rate 2000 --out /tmp/ycsb-a

  # workload B with 64 closed-loop clients against Redis, 100k operations, records already loaded
  continuum load ycsb --target redis=127.0.0.1:6379 --workload b --phase run --recordcount 10000 \
    --operationcount 100000 --clients 64 --out /tmp/ycsb-b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := flags.Resolve(cmd.Flags().Changed)
			if err != nil {
				return err
			}
			cfg.YCSB.Run.Progress = cmd.OutOrStdout()
			cfg.YCSB.Log = cmd.ErrOrStderr()
			res, err := kvtarget.RunYCSB(cmd.Context(), cfg)
			if err != nil || res.Run == nil {
				return err
			}
			return res.Run.Failure()
		},
	}
	flags.Bind(cmd.Flags())
	_ = cmd.MarkFlagRequired("target")
	return cmd
}
