package streamcmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

func init() { cli.Register(cli.Top, newRealtimeDBCmd) }

// Flags are `continuum realtime-db`'s flags; the realtime-db kind renders its command line from
// the same struct.
type Flags struct {
	Config rtdb.Config
}

// DefaultFlags are `continuum realtime-db`'s defaults: the server's.
func DefaultFlags() Flags { return Flags{Config: rtdb.DefaultConfig()} }

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	c := &f.Config
	fs.StringVar(&c.ListenAddr, "listen", c.ListenAddr, "host:port to serve the REST API on")
	fs.StringSliceVar(&c.KVEndpoints, "endpoints", c.KVEndpoints, "comma-separated continuum kv (or etcd) client URLs")
	fs.StringVar(&c.Prefix, "prefix", c.Prefix, "kv prefix every database lives under (<prefix>/<ns>/<path>)")
	fs.StringVar(&c.DefaultNamespace, "default-ns", c.DefaultNamespace, "database of requests without ?ns=")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest write body accepted (Firebase: 256 MB)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "bound on one request's kv work")
	fs.DurationVar(&c.DialTimeout, "dial-timeout", c.DialTimeout, "timeout of connecting to the kv endpoints")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long to drain requests in flight on shutdown")
	fs.DurationVar(&c.Stream.KeepAlive, "keep-alive", c.Stream.KeepAlive, "interval of keep-alive events on an idle stream (SSE)")
	fs.IntVar(&c.Stream.ListenerBufferBytes, "listener-buffer-bytes", c.Stream.ListenerBufferBytes, "events queued per listener before they are coalesced into one full put")
}

func newRealtimeDBCmd() *cobra.Command {
	flags := DefaultFlags()
	cmd := &cobra.Command{
		Use:   "realtime-db",
		Short: "Run the Firebase-compatible realtime database (REST) on continuum kv",
		Long: `Serves the Firebase Realtime Database REST protocol (as its emulator does: GET, PUT, PATCH, POST,
DELETE on /<path>.json?ns=<database>; print=silent|pretty, shallow=true; orderBy with limitToFirst,
limitToLast, startAt, endAt, equalTo; X-Firebase-ETag and
if-match; {".sv":"timestamp"} and {".sv":{"increment":n}}), storing each leaf of the JSON tree as one
key of continuum kv (or etcd) under --prefix. Point the Admin SDKs at it with
FIREBASE_DATABASE_EMULATOR_HOST=host:port. See docs/stream.md.`,
		Example: `  continuum kv --data-dir /tmp/kv &
  continuum realtime-db --listen :9000 --endpoints http://127.0.0.1:2379
  curl -X PUT -d '{"name":"Ada"}' 'http://127.0.0.1:9000/users/ada.json?ns=demo'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := flags.Config
			cfg.Logger = cli.Logger()
			return rtdb.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
