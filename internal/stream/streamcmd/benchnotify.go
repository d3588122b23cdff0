package streamcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/stream/rtdbbench"
)

func init() { cli.Register("bench", newBenchNotifyCmd) }

func newBenchNotifyCmd() *cobra.Command {
	var o benchkit.Output
	cfg := rtdbbench.DefaultConfig()
	c := &cobra.Command{
		Use:   "stream-notify [--listeners 1000] [--rate 100] [--out FILE.md] [--quick]",
		Short: "Realtime database listeners: write -> SSE listener latency (p50/p99) beside a raw kv watch, writes/s, reconnect after a restart",
		Long: `Starts continuum kv (a child process) and a realtime database in this process on loopback, connects --listeners SSE
listeners to one path and PUTs records under it at --rate writes/s (open loop; latency from each write's
intended send time to each listener's receipt). In the same run, the floor: as many raw kv watches (etcd API)
on one key with kv Puts at the same rate. Then --throughput-writers closed-loop writers measure REST writes/s
(raw kv Puts beside them), and the realtime database restarts under --listeners listeners that reconnect with
jittered backoff, timed until every one has its full put again. Writes Markdown (with the realtime database's goals) and the raw
JSON next to it.`,
		Example: `  continuum bench stream-notify --out results/stream-notify.md
  continuum bench stream-notify --listeners 100 --rate 50 --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if done, err := benchkit.RenderAgain(cmd.OutOrStdout(), &o, benchkit.ReadResult[rtdbbench.Result], rtdbbench.Markdown); done {
				return err
			}
			if o.Quick {
				f := cmd.Flags()
				if !f.Changed("duration") {
					cfg.Duration = 3e9
				}
				if !f.Changed("warmup") {
					cfg.Warmup = 1e9
				}
				if !f.Changed("repeats") {
					cfg.Repeats = 1
				}
				if !f.Changed("throughput-duration") {
					cfg.ThroughputDuration = 2e9
				}
			}
			cfg.Log, cfg.Command = cmd.ErrOrStderr(), benchkit.Invocation()
			res, err := rtdbbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), rtdbbench.Markdown(res), res)
		},
	}
	f := c.Flags()
	o.Flags(f, "short phases (smoke test)")
	o.FromJSONFlag(f, "measure nothing: render the report again from a result's JSON")
	f.IntVar(&cfg.Listeners, "listeners", cfg.Listeners, "SSE listeners on the written path (and raw kv watches in the baseline)")
	f.Float64Var(&cfg.Rate, "rate", cfg.Rate, "writes/s of the latency phases (open loop)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each latency phase after the warmup")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "repeats of the two latency phases, alternating which goes first")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "writes before this are not counted")
	f.IntVar(&cfg.ThroughputWriters, "throughput-writers", cfg.ThroughputWriters, "closed-loop writers of the writes/s phase")
	f.DurationVar(&cfg.ThroughputDuration, "throughput-duration", cfg.ThroughputDuration, "length of the writes/s phase")
	f.IntVar(&cfg.ThroughputListeners, "throughput-listeners", cfg.ThroughputListeners, "SSE listeners on the path written in the writes/s phase")
	f.DurationVar(&cfg.ReconnectBackoff, "reconnect-backoff", cfg.ReconnectBackoff, "largest first delay of a reconnecting client (uniform jitter below it, doubling up to 4x)")
	return c
}
