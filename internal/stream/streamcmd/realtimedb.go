package streamcmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

// Flags are `continuum stream realtime-db`'s flags; the realtime-db kind renders its command line from
// the same struct.
type Flags struct {
	Config rtdb.Config
}

// DefaultFlags are `continuum stream realtime-db`'s defaults: the server's.
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
	sec := &c.Security
	fs.StringVar(&sec.RulesFile, "rules", sec.RulesFile, "security rules file (database.rules.json) for every database without rules of its own (PUT /.settings/rules.json); none: everything allowed")
	fs.StringArrayVar(&sec.AuthSecrets, "auth-secret", sec.AuthSecrets, "database secret: a request with auth=<secret> is an admin, rules bypassed (repeatable)")
	fs.StringVar(&sec.AuthSecretFile, "auth-secret-file", sec.AuthSecretFile, "file of database secrets, one a line")
	fs.BoolVar(&sec.Emulator, "emulator", sec.Emulator, `emulator mode: "Bearer owner" is an admin and unsigned (alg none) ID tokens are accepted, as the Firebase emulator does`)
	fs.StringVar(&sec.ProjectID, "project-id", sec.ProjectID, "Firebase project id: the aud of accepted ID tokens")
	fs.StringVar(&sec.JWTIssuer, "jwt-issuer", sec.JWTIssuer, "exact iss of accepted ID tokens (default: any ending in /<project-id>)")
	fs.StringVar(&sec.JWTKeysFile, "jwt-keys", sec.JWTKeysFile, "public keys ID tokens are signed with: a JWKS, a JSON object of key id to PEM certificate, or PEM blocks")
	fs.StringVar(&c.FirebaseSDKDir, "firebase-sdk-dir", c.FirebaseSDKDir, "the npm firebase package whose browser modules /.dashboard/ loads (default "+rtdb.DefaultFirebaseSDKDir+", from continuum setup stream)")
	fs.DurationVar(&c.Stream.KeepAlive, "keep-alive", c.Stream.KeepAlive, "interval of keep-alive events on an idle stream (SSE)")
	fs.IntVar(&c.Stream.ListenerBufferBytes, "listener-buffer-bytes", c.Stream.ListenerBufferBytes, "events queued per listener before they are coalesced into one full put")
}

func newRealtimeDBCmd() *cobra.Command {
	flags := DefaultFlags()
	cmd := &cobra.Command{
		Use:   "realtime-db",
		Short: "Run the Firebase-compatible realtime database (REST, WebSocket) on continuum kv",
		Long: `Serves the Firebase Realtime Database REST protocol (as its emulator does: GET, PUT, PATCH, POST,
DELETE on /<path>.json?ns=<database>; print=silent|pretty, shallow=true; orderBy with limitToFirst,
limitToLast, startAt, endAt, equalTo; X-Firebase-ETag and
if-match; {".sv":"timestamp"} and {".sv":{"increment":n}}), storing each leaf of the JSON tree as one
key of continuum kv (or etcd) under --prefix. Point the Admin SDKs at it with
FIREBASE_DATABASE_EMULATOR_HOST=host:port (with --emulator, their "owner" credential is an admin).
The WebSocket protocol of the Firebase JS SDK is served at /.ws: connectDatabaseEmulator(db, host,
port) works with listeners, writes, transactions and onDisconnect. /.dashboard/?ns=<database>&path=<path>
is a live page of the records under a path, on the JS SDK. Security rules (--rules, or
PUT /.settings/rules.json?ns=<db> as an admin) are enforced on every read and write; callers are
identified by auth=/access_token= or Authorization: Bearer carrying a database secret
(--auth-secret) or a Firebase ID token (RS256, --jwt-keys, --project-id). See docs/stream.md.`,
		Example: `  continuum kv --data-dir /tmp/kv &
  continuum stream realtime-db --listen :9000 --endpoints http://127.0.0.1:2379
  curl -X PUT -d '{"name":"Ada"}' 'http://127.0.0.1:9000/users/ada.json?ns=demo'
  continuum stream realtime-db --rules database.rules.json --auth-secret s3cret \
      --project-id my-project --jwt-keys keys.json
  curl -X PUT --data-binary @other.rules.json 'http://127.0.0.1:9000/.settings/rules.json?ns=demo&auth=s3cret'`,
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
