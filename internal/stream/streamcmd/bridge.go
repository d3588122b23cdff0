package streamcmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/stream/bridge"
)

func init() { cli.Register(cli.Top, newBridgeCmd) }

// BridgeFlags are `continuum stream-bridge`'s flags; the stream-bridge kind renders its command
// line from the same struct.
type BridgeFlags struct {
	Config bridge.Config
}

// DefaultBridgeFlags are the bridge's defaults (the latency path: linger 0, acks all, idempotent).
func DefaultBridgeFlags() BridgeFlags { return BridgeFlags{Config: bridge.DefaultConfig()} }

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *BridgeFlags) Bind(fs *pflag.FlagSet) {
	c := &f.Config
	fs.StringVar(&c.ListenAddr, "listen", c.ListenAddr, "host:port to serve POST /topics/<topic> on")
	fs.StringSliceVar(&c.Brokers, "brokers", c.Brokers, "comma-separated Kafka bootstrap servers (host:port)")
	fs.StringVar(&c.KeyField, "key-field", c.KeyField, "field of each object whose value (string or number) is the record key")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest post body accepted (413 above)")
	fs.DurationVar(&c.Linger, "linger", c.Linger, "how long the producer waits to fill a batch (Kafka 4's Java producer: 5ms)")
	fs.Int32Var(&c.BatchMaxBytes, "batch-max-bytes", c.BatchMaxBytes, "largest batch per partition, hence largest record")
	fs.StringVar(&c.Compression, "compression", c.Compression, "batch compression: none, gzip, snappy, lz4, zstd")
	fs.StringVar(&c.Acks, "acks", c.Acks, "acknowledgement Kafka gives before a post is answered 200: all, leader, none")
	fs.BoolVar(&c.Idempotent, "idempotent", c.Idempotent, "idempotent producer (needs --acks all)")
	fs.DurationVar(&c.AckTimeout, "ack-timeout", c.AckTimeout, "how long a post waits for Kafka's acknowledgement before 503")
	fs.IntVar(&c.MaxBufferedRecords, "max-buffered-records", c.MaxBufferedRecords, "records awaiting acknowledgement across all posts")
}

func newBridgeCmd() *cobra.Command {
	flags := DefaultBridgeFlags()
	cmd := &cobra.Command{
		Use:   "stream-bridge",
		Short: "HTTP to Kafka bridge: POST JSON objects, answered once Kafka acknowledged them",
		Long: `Serves POST /topics/<topic> with a body of one JSON object or an array of them. Each object's
--key-field (id) is the Kafka record key and the object's bytes are the value. Answers 200
{"offsets":[{"partition":p,"offset":o},...]} only after Kafka acknowledged every record (acks=all and
the idempotent producer by default), 400 {"error":...} for bad input, 404 for a missing topic, 413 for a
body over --max-body-bytes, and 503 when Kafka does not acknowledge within --ack-timeout or is down
(at once, until a broker answers again). GET /healthz is 200 once connected. See docs/stream.md.`,
		Example: `  continuum stream-bridge --listen :8090 --brokers 127.0.0.1:9092
  curl -X POST -d '{"id":"s1-42","temp":21.5}' http://127.0.0.1:8090/topics/sensors
  curl -X POST -d '[{"id":1,"v":2},{"id":2,"v":3}]' http://127.0.0.1:8090/topics/sensors
  continuum stream-bridge --brokers k1:9092,k2:9092 --linger 5ms --compression lz4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := flags.Config
			cfg.Logger = cli.Logger()
			return bridge.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
