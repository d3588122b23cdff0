package streamcmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/stream/bridge"
)

// BridgeFlags are `continuum stream bridge`'s flags; the stream-bridge kind renders its command
// line from the same struct.
type BridgeFlags struct {
	Config bridge.Config
	// Auth requires a bearer token on POST /topics/ (on unless turned off, which only a
	// loopback --listen allows); the token is read from TokenFile (default DataDir/token),
	// generated there (0600) on the first start.
	Auth      bool
	TokenFile string
	DataDir   string
}

// DefaultBridgeFlags are the bridge's defaults (the latency path: linger 0, acks all, idempotent;
// a token generated in the state directory).
func DefaultBridgeFlags() BridgeFlags {
	return BridgeFlags{Config: bridge.DefaultConfig(), Auth: true, DataDir: defaultBridgeDataDir()}
}

// defaultBridgeDataDir is where a bridge keeps its generated token when not told:
// /var/lib/continuum/stream-bridge for root, else $XDG_STATE_HOME/continuum/stream-bridge
// (~/.local/state/... when that is unset), as the faas gateway's.
func defaultBridgeDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/continuum/stream-bridge"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "continuum", "stream-bridge")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "continuum", "stream-bridge")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("continuum-stream-bridge-%d", os.Geteuid()))
}

// Token resolves the bridge's token from the flags ("" with --auth=false); generated says it
// was made just now, into file.
func (f *BridgeFlags) Token() (token string, generated bool, file string, err error) {
	if !f.Auth {
		return "", false, "", nil
	}
	file = f.TokenFile
	if file == "" {
		file = filepath.Join(f.DataDir, "token")
	}
	token, generated, err = httpauth.LoadOrCreateToken(file)
	return token, generated, file, err
}

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
	fs.BoolVar(&f.Auth, "auth", f.Auth, "require the bridge's token on POST /topics/ (Authorization: Bearer TOKEN); --auth=false only with a loopback --listen")
	fs.StringVar(&f.TokenFile, "token-file", f.TokenFile, "file holding the token; generated there (0600) if absent, and reused (default DATA_DIR/token)")
	fs.StringVar(&f.DataDir, "data-dir", f.DataDir, "the bridge's state directory (the generated token goes there)")
}

func newBridgeCmd() *cobra.Command {
	flags := DefaultBridgeFlags()
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "HTTP to Kafka bridge: POST JSON objects, answered once Kafka acknowledged them",
		Long: `Serves POST /topics/<topic> with a body of one JSON object or an array of them. Each object's
--key-field (id) is the Kafka record key and the object's bytes are the value. Answers 200
{"offsets":[{"partition":p,"offset":o},...]} only after Kafka acknowledged every record (acks=all and
the idempotent producer by default), 400 {"error":...} for bad input, 404 for a missing topic, 413 for a
body over --max-body-bytes, and 503 when Kafka does not acknowledge within --ack-timeout or is down
(at once, until a broker answers again). GET /healthz is 200 once connected. See docs/stream.md.

Posts need the bridge's token, "Authorization: Bearer TOKEN" (401 without it): it is read from
--token-file (default DATA_DIR/token); when that file does not exist a token is generated and
written there (0600), and later starts reuse it. --auth=false turns the check off, allowed only on
a loopback --listen. /healthz is open.`,
		Example: `  continuum stream bridge --listen :8090 --brokers 127.0.0.1:9092 --token-file /etc/continuum/bridge-token
  curl -H "Authorization: Bearer $(cat /etc/continuum/bridge-token)" -d '{"id":"s1-42","temp":21.5}' http://127.0.0.1:8090/topics/sensors
  continuum stream bridge --listen 127.0.0.1:8090 --brokers 127.0.0.1:9092 --auth=false
  curl -X POST -d '[{"id":1,"v":2},{"id":2,"v":3}]' http://127.0.0.1:8090/topics/sensors
  continuum stream bridge --brokers k1:9092,k2:9092 --linger 5ms --compression lz4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := flags.Config
			cfg.Logger = cli.Logger()
			if !flags.Auth && !httpauth.IsLoopback(cfg.ListenAddr) {
				return fmt.Errorf("--auth=false with --listen %q: other machines could post into Kafka uninvited; listen on loopback (127.0.0.1:PORT) or keep the token", cfg.ListenAddr)
			}
			tok, generated, file, err := flags.Token()
			if err != nil {
				return err
			}
			cfg.Token = tok
			switch {
			case tok == "":
				cfg.Logger.Warn("posts need no token (--auth=false): anyone on this machine can post into Kafka")
			case generated:
				cfg.Logger.Info("generated the bridge's token; posts send Authorization: Bearer <its content>", "token_file", file)
			default:
				cfg.Logger.Info("posts need the bridge's token", "token_file", file)
			}
			return bridge.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
