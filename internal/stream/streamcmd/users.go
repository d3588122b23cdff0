package streamcmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/stream/streamload"
)

// UsersFlags are `continuum stream users`'s flags: the load generator's Config. The
// stream-users kind renders its command line from the same struct.
type UsersFlags struct {
	streamload.Config
}

// DefaultUsersFlags are `continuum stream users`'s defaults: streamload's.
func DefaultUsersFlags() UsersFlags { return UsersFlags{streamload.DefaultConfig()} }

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *UsersFlags) Bind(fs *pflag.FlagSet) {
	c := &f.Config
	fs.StringVar(&c.Send, "send", c.Send, "how users send: rest (PUT to a realtime-db) or bridge (POST to a stream-bridge)")
	fs.StringVar(&c.SendURL, "send-url", c.SendURL, "base URL of the realtime-db or stream-bridge the users send to")
	fs.StringVar(&c.SendTokenFile, "send-token-file", c.SendTokenFile, "with --send bridge: file holding the bridge's token (its --token-file), sent as Authorization: Bearer TOKEN")
	fs.StringVar(&c.Subscribe, "subscribe", c.Subscribe, "how the subscriber receives: sse (a realtime-db listener) or kafka (a consumer of --topic)")
	fs.StringVar(&c.SubscribeURL, "subscribe-url", c.SubscribeURL, "base URL of the realtime-db the subscriber listens to (sse)")
	fs.StringSliceVar(&c.Brokers, "brokers", c.Brokers, "Kafka bootstrap servers host:port (kafka)")
	fs.StringVar(&c.Path, "path", c.Path, "realtime-db location records are written under and listened to")
	fs.StringVar(&c.NS, "ns", c.NS, "realtime-db database (?ns=)")
	fs.StringVar(&c.Topic, "topic", c.Topic, "Kafka topic (bridge, kafka)")
	fs.IntVar(&c.Users, "users", c.Users, "concurrent users")
	fs.IntVar(&c.Requests, "requests", c.Requests, "records each user sends")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "mean time between a user's records")
	fs.DurationVar(&c.IntervalSD, "interval-sd", c.IntervalSD, "standard deviation of the time between a user's records (Normal, clamped at 0)")
	fs.IntVar(&c.Payload, "payload", c.Payload, "bytes of each record's JSON")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "bound on one send; also how long the subscriber may take to connect")
	fs.DurationVar(&c.Grace, "grace", c.Grace, "how long to wait after the last send for acknowledged records (then they are lost)")
	fs.BoolVar(&c.Verify, "verify", c.Verify, "read the realtime-db path at the end and check it holds every acknowledged record as sent (sse)")
	fs.StringVar(&c.Run, "run", c.Run, "prefix of record ids (default r<seed>)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long users may send, warm-up included")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "leading part left out of the statistics")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seeds the users' schedules")
	fs.StringVar(&c.OutDir, "out", c.OutDir, "results directory")
}

func newUsersCmd() *cobra.Command {
	flags := DefaultUsersFlags()
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Emulate the edge benchmarking paper's users (docs/seeds.md) sending records to a realtime-db or stream-bridge, and a subscriber timing them end to end",
		Long: `Runs --users users, each sending --requests records, the gaps between a user's records drawn from
Normal(--interval, --interval-sd) clamped at 0, one request outstanding per user over a keep-alive
connection. A record is {"id":"<run>-u<user>-<seq>","user":u,"seq":n,"sent_us":<unix µs>,"pad":"..."},
exactly --payload bytes of JSON. With --send rest it is PUT to <send-url><path>/<id>.json; with
--send bridge it is POSTed to <send-url>/topics/<topic>.

A subscriber in the same process receives the records: --subscribe sse listens to <subscribe-url><path>.json
with Firebase's REST streaming; --subscribe kafka consumes --topic. End-to-end latency is the receipt
time minus the time the record was due (one clock: both run here). After the last send it waits up to
--grace for acknowledged records; those that never arrive are lost. Every receipt is checked against
what was sent; receipts after the first are duplicates.

Writes stats.json (series e2e and ack), timeseries.csv, percentiles.csv, latency.hlog, streamload.json
(sent, acknowledged, received, lost, duplicated, mismatched), stream-timeline.csv and records.csv.gz to --out.`,
		Example: `  # cloud-only: users PUT to the realtime-db, a listener on the same database
  continuum stream users --send rest --send-url http://10.0.0.3:9000 --subscribe sse --subscribe-url http://10.0.0.3:9000 \
    --users 100 --requests 60 --payload 1024 --duration 70s --out /tmp/users
  # edge-only: users POST to the bridge, a Kafka consumer at the edge
  continuum stream users --send bridge --send-url http://10.0.0.2:8090 --subscribe kafka --brokers 10.0.0.2:9092 \
    --topic records --users 100 --requests 60 --duration 70s --out /tmp/users`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := flags.Config
			cfg.Progress = cmd.OutOrStdout()
			_, err := streamload.Run(cmd.Context(), cfg)
			return err
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
