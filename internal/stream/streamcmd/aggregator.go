package streamcmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/stream/aggregator"
)

// AggregatorFlags are `continuum stream aggregator`'s flags; the stream-aggregator kind renders
// its command line from the same struct.
type AggregatorFlags struct {
	Config aggregator.Config
}

// DefaultAggregatorFlags are the aggregator's defaults.
func DefaultAggregatorFlags() AggregatorFlags {
	return AggregatorFlags{Config: aggregator.DefaultConfig()}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *AggregatorFlags) Bind(fs *pflag.FlagSet) {
	c := &f.Config
	fs.StringSliceVar(&c.Brokers, "brokers", c.Brokers, "comma-separated Kafka bootstrap servers (host:port)")
	fs.StringSliceVar(&c.Topics, "topics", c.Topics, "comma-separated topics to consume")
	fs.StringVar(&c.Group, "group", c.Group, "consumer group")
	fs.StringVar(&c.InstanceID, "instance-id", c.InstanceID, "static group membership: a restart with the same id takes its partitions back at once")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", c.SessionTimeout, "group session timeout (>= 6s)")
	fs.StringVar(&c.RTDB, "rtdb", c.RTDB, "the realtime database's base URL")
	fs.StringVar(&c.Namespace, "ns", c.Namespace, "database (?ns=) to write to (empty: the server's default)")
	fs.StringVar(&c.Path, "path", c.Path, "records land at <path>/<id>")
	fs.StringVar(&c.DeadLetterPath, "dead-letter-path", c.DeadLetterPath, "poison records land at <dead-letter-path>/<topic>-<partition>-<offset>")
	fs.StringVar(&c.KeyField, "key-field", c.KeyField, "field of each record's object naming it (<path>/<id>)")
	fs.IntVar(&c.MaxLeaves, "max-leaves", c.MaxLeaves, "keys one PATCH may set (the database's kv transaction bound)")
	fs.IntVar(&c.PollRecords, "poll-records", c.PollRecords, "records taken per poll (written, then committed)")
	fs.IntVar(&c.Parallel, "parallel", c.Parallel, "PATCHes of one poll in flight at once")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "bound on one PATCH")
	fs.DurationVar(&c.StartTimeout, "start-timeout", c.StartTimeout, "how long to wait at start for a Kafka broker and the database to answer before exiting with an error (0: do not check)")
	fs.DurationVar(&c.RetryMin, "retry-min", c.RetryMin, "first back-off after a failed write")
	fs.DurationVar(&c.RetryMax, "retry-max", c.RetryMax, "largest back-off between write attempts")
	fs.StringVar(&c.StatsFile, "stats-file", c.StatsFile, "write the counters as JSON here every second and at exit")
}

func newAggregatorCmd() *cobra.Command {
	flags := DefaultAggregatorFlags()
	cmd := &cobra.Command{
		Use:   "aggregator",
		Short: "Kafka consumer group into the realtime database, exactly once in effect",
		Long: `Consumes --topics as a member of --group and writes each record's JSON object to the realtime
database (continuum stream realtime-db, --rtdb) at <path>/<id>, id being the record's --key-field (or
<topic>-<partition>-<offset> without one), in multi-path PATCHes of at most --max-leaves keys. Offsets
are committed only after the database answered 2xx, and the writes are idempotent, so a kill -9 of the
aggregator or of the broker loses and duplicates nothing. An unreachable database is retried with
back-off, never skipped; a poison record (not a JSON object, a forbidden key, too deep or too large) is
logged and written under --dead-letter-path. See docs/stream.md.`,
		Example: `  continuum stream aggregator --brokers 127.0.0.1:9092 --topics sensors --rtdb http://127.0.0.1:9000
  continuum stream aggregator --brokers k1:9092 --topics a,b --ns demo --path /readings --instance-id agg-1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := flags.Config
			cfg.Logger = cli.Logger()
			return aggregator.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
