package streamcmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/stream/bridge/bridgebench"
)

func init() { cli.Register("bench", newBenchBridgeCmd) }

func newBenchBridgeCmd() *cobra.Command {
	var o benchkit.Output
	cfg := bridgebench.DefaultConfig(false)
	c := &cobra.Command{
		Use:   "stream-bridge [--out FILE.md] [--quick]",
		Short: "The bridge's 1 KB records/s on one core vs Kafka's ProducerPerformance, and broker publish->consume latency",
		Long: `Starts a Kafka broker (tools/kafka, java), then, --repeats times: runs this binary's stream-bridge as its
own process with GOMAXPROCS=1 pinned to one CPU (taskset; the broker and the load generator on the other)
under closed-loop posts of records of --record-bytes (for each --batch size), and Kafka's own
org.apache.kafka.tools.ProducerPerformance on the same CPU at the same producer settings (acks=all,
idempotent, linger 0, 1 MiB batches), alternating which goes first; then the broker's publish->consume
latency at --latency-rate msg/s (open loop, from the intended send time). Medians of the repeats, against
the goals (bridge >= 50k records/s of 1 KB on one core; p99 <= 5 ms at 10k msg/s). Markdown and JSON.`,
		Example: `  make build && bin/continuum bench stream-bridge --out results/stream-bridge.md
  bin/continuum bench stream-bridge --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Quick {
				q := bridgebench.DefaultConfig(true)
				f := cmd.Flags()
				if !f.Changed("duration") {
					cfg.Duration, cfg.Warmup = q.Duration, q.Warmup
				}
				if !f.Changed("repeats") {
					cfg.Repeats = q.Repeats
				}
				if !f.Changed("perf-records") {
					cfg.PerfRecords = q.PerfRecords
				}
				if !f.Changed("latency-duration") {
					cfg.LatencyDuration = q.LatencyDuration
				}
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("this binary (the bridge to measure): %w", err)
			}
			cfg.Binary, cfg.Log, cfg.Command = exe, cmd.ErrOrStderr(), benchkit.Invocation()
			res, err := bridgebench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), bridgebench.Markdown(res), res)
		},
	}
	f := c.Flags()
	o.Flags(f, "one short repeat (smoke test)")
	f.IntVar(&cfg.RecordBytes, "record-bytes", cfg.RecordBytes, "size of one record's JSON")
	f.IntSliceVar(&cfg.Batch, "batch", cfg.Batch, "records per POST, one series each")
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent posting clients (closed loop)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured part of each bridge run")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part of each run excluded")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "repeats of every run")
	f.IntVar(&cfg.PerfRecords, "perf-records", cfg.PerfRecords, "records each ProducerPerformance run sends")
	f.IntVar(&cfg.LatencyRate, "latency-rate", cfg.LatencyRate, "publish rate of the latency run (msg/s)")
	f.DurationVar(&cfg.LatencyDuration, "latency-duration", cfg.LatencyDuration, "measured part of each latency run")
	f.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the bench topic")
	return c
}
