package kvcmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/gcfloor"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/kv/replication"
	"github.com/continuum-project/continuum/internal/kv/server"
)

func init() { cli.RegisterSystem("kv", newKVCmd) }

// Flags are `continuum kv`'s flags. The kv kind renders its members' command lines from the
// same struct (cli.Args), so each flag's name and default is written once, in Bind and
// DefaultFlags.
type Flags struct {
	// Server holds the flags that map one to one onto the server's Config.
	Server server.Config
	// The URL lists, comma-separated as etcd takes them.
	ListenClientURLs, AdvertiseClientURLs, ListenMetricsURLs        string
	ListenPeerURLs, InitialAdvertisePeerURLs, InitialCluster, Peers string
	Fsync                                                           string
	// GCHeapFloor is the smallest Go heap goal in bytes (0: Go's default).
	GCHeapFloor     int64
	PeerBatchLinger time.Duration
	PeerCompression string
	MaxClockOffset  time.Duration
	// AuthTokenTTL is etcd's --auth-token-ttl, in seconds.
	AuthTokenTTL uint
}

// DefaultFlags are the defaults of `continuum kv`'s flags: the server's and the replicator's
// defaults, and etcd's where a flag is etcd's.
func DefaultFlags() Flags {
	cfg := server.DefaultConfig()
	cfg.AutoCompactionRetention = "0"
	cfg.ProgressNotifyInterval = 10 * time.Minute
	cfg.InitialClusterState = "new"
	cfg.InitialClusterToken = "continuum-kv-cluster"
	cfg.PeerDialTimeout = replication.DefaultDialTimeout
	cfg.PeerMaxBackoff = replication.DefaultMaxBackoff
	return Flags{
		Server:           cfg,
		ListenClientURLs: strings.Join(cfg.ListenClientURLs, ","),
		Fsync:            "batch",
		// A 128 MiB heap-goal floor: see --gc-heap-floor in docs/kv.md for what it costs and buys.
		GCHeapFloor:     128 << 20,
		PeerBatchLinger: replication.DefaultLinger,
		PeerCompression: replication.CompressorS2,
		MaxClockOffset:  replication.DefaultMaxClockOffset,
		AuthTokenTTL:    uint(server.DefaultAuthTokenTTL / time.Second),
	}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Server
	fs.StringVar(&cfg.Name, "name", cfg.Name, "human-readable name for this member")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "path to the data directory")
	fs.StringVar(&f.ListenClientURLs, "listen-client-urls", f.ListenClientURLs, "comma-separated URLs to serve clients on (http or https)")
	fs.StringVar(&f.AdvertiseClientURLs, "advertise-client-urls", f.AdvertiseClientURLs, "comma-separated client URLs to advertise in member list (default: the listen URLs)")
	fs.StringVar(&f.ListenMetricsURLs, "listen-metrics-urls", f.ListenMetricsURLs, "comma-separated URLs to serve /metrics and /health on")
	fs.Int64Var(&f.GCHeapFloor, "gc-heap-floor", f.GCHeapFloor, "smallest Go heap goal in bytes: fewer GC cycles (and GC-induced latency) while the data set is small, at the cost of up to that much memory (0: Go's default goal, twice the live heap; ignored when GOGC or GOMEMLIMIT is set)")
	fs.StringVar(&cfg.EventsFile, "events-file", cfg.EventsFile, "append replication events (catch-ups with peers) to this file, one JSON object per line")
	fs.BoolVar(&cfg.EnablePprof, "enable-pprof", cfg.EnablePprof, "serve Go's /debug/pprof/ on the --listen-metrics-urls")
	fs.Int64Var(&cfg.QuotaBackendBytes, "quota-backend-bytes", cfg.QuotaBackendBytes, "raise the NOSPACE alarm when the database exceeds this size")
	fs.Int64Var(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "maximum size of a write request in bytes")
	fs.StringVar(&f.Fsync, "fsync", f.Fsync, "when writes are fsynced: batch (group commit, fsync before ack), always (one fsync per write), never")
	fs.StringVar(&cfg.AutoCompactionMode, "auto-compaction-mode", cfg.AutoCompactionMode, "periodic or revision")
	fs.StringVar(&cfg.AutoCompactionRetention, "auto-compaction-retention", cfg.AutoCompactionRetention, "periodic: a duration (1h) or hours to keep; revision: revisions to keep; 0 disables")
	fs.DurationVar(&cfg.ProgressNotifyInterval, "watch-progress-notify-interval", cfg.ProgressNotifyInterval, "how often idle watches with progress_notify get a progress notification")
	fs.StringVar(&cfg.AuthToken, "auth-token", cfg.AuthToken, "token type issued by Authenticate: simple (random, kept in memory) or jwt,pub-key=<file>,priv-key=<file>,sign-method=RS256|ES256|...[,ttl=5m]")
	fs.UintVar(&f.AuthTokenTTL, "auth-token-ttl", f.AuthTokenTTL, "seconds an unused simple token lives")
	fs.DurationVar(&cfg.AuthMajorityTimeout, "auth-majority-timeout", cfg.AuthMajorityTimeout, "in a cluster, refuse auth changes (and writes, with authentication enabled) after this long without hearing from a majority of the members, so a revocation made on the majority side is in force here or writes stop, and no change made here can undo it (0: never)")
	fs.IntVar(&cfg.BcryptCost, "bcrypt-cost", cfg.BcryptCost, "bcrypt cost of stored passwords (4-31)")
	fs.StringVar(&cfg.CertFile, "cert-file", cfg.CertFile, "TLS certificate for https client URLs")
	fs.StringVar(&cfg.KeyFile, "key-file", cfg.KeyFile, "TLS key for https client URLs")
	fs.StringVar(&cfg.TrustedCAFile, "trusted-ca-file", cfg.TrustedCAFile, "CA that signs client certificates")
	fs.BoolVar(&cfg.ClientCertAuth, "client-cert-auth", cfg.ClientCertAuth, "require client certificates signed by --trusted-ca-file")
	fs.BoolVar(&cfg.AutoTLS, "auto-tls", cfg.AutoTLS, "without --cert-file/--key-file, serve https client URLs with a generated self-signed certificate (<data-dir>/fixtures/client): encrypts, authenticates nothing")
	fs.StringVar(&cfg.PeerCertFile, "peer-cert-file", cfg.PeerCertFile, "TLS certificate for https peer URLs, also this member's client certificate towards https peers")
	fs.StringVar(&cfg.PeerKeyFile, "peer-key-file", cfg.PeerKeyFile, "TLS key of --peer-cert-file")
	fs.StringVar(&cfg.PeerTrustedCAFile, "peer-trusted-ca-file", cfg.PeerTrustedCAFile, "CA that signs the peers' certificates (verifies https peers, and calling peers' client certificates)")
	fs.BoolVar(&cfg.PeerClientCertAuth, "peer-client-cert-auth", cfg.PeerClientCertAuth, "require calling peers to present a certificate signed by --peer-trusted-ca-file")
	fs.BoolVar(&cfg.PeerAutoTLS, "peer-auto-tls", cfg.PeerAutoTLS, "without --peer-cert-file/--peer-key-file, use a generated self-signed peer certificate (<data-dir>/fixtures/peer) and dial https peers without verifying them unless --peer-trusted-ca-file is set: encrypts, authenticates nothing")
	fs.UintVar(&cfg.SelfSignedCertValidity, "self-signed-cert-validity", cfg.SelfSignedCertValidity, "validity in years of the certificates --auto-tls and --peer-auto-tls generate")
	fs.StringVar(&f.ListenPeerURLs, "listen-peer-urls", f.ListenPeerURLs, "comma-separated URLs to serve replication to peers on (http://host:port)")
	fs.StringVar(&f.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", f.InitialAdvertisePeerURLs, "this member's peer URLs as peers reach them (default: its --initial-cluster entry)")
	fs.StringVar(&f.InitialCluster, "initial-cluster", f.InitialCluster, "the cluster's members: name=peerURL,... (this member included)")
	fs.StringVar(&cfg.InitialClusterState, "initial-cluster-state", cfg.InitialClusterState, "new or existing (a member joining a running cluster catches up from its peers)")
	fs.StringVar(&cfg.InitialClusterToken, "initial-cluster-token", cfg.InitialClusterToken, "equal on all members; peers with another token are refused")
	fs.StringVar(&f.Peers, "peers", f.Peers, "names of the members to pull changes from (default: all others; a subset makes a partial mesh)")
	fs.DurationVar(&cfg.PeerDialTimeout, "peer-dial-timeout", cfg.PeerDialTimeout, "longest attempt to connect to a peer; raise to at least 3 round trips on slow links")
	fs.DurationVar(&cfg.PeerMaxBackoff, "peer-max-backoff", cfg.PeerMaxBackoff, "longest wait between attempts to reconnect to a peer (a healed link is found within about this plus --peer-dial-timeout)")
	fs.DurationVar(&f.PeerBatchLinger, "peer-batch-linger", f.PeerBatchLinger, "after sending changes to a peer, gather the next ones this long before sending again (fewer, larger messages under load; adds at most this to replication lag, not to writes that wait for copies; 0: send each change at once)")
	fs.StringVar(&f.PeerCompression, "peer-compression", f.PeerCompression, "compression of the changes this member pulls from its peers: s2 (cheap, stores what does not compress), gzip (smaller on slow links, ~3 ms of CPU per 100 kB on each end) or none")
	fs.DurationVar(&f.MaxClockOffset, "max-clock-offset", f.MaxClockOffset, "report peers whose clock runs further ahead of this member's (counted, logged, exported as continuum_kv_replication_peer_clock_offset_exceeded_total; their changes are still applied); 0: no check")
}

// Config turns the flags into the server's Config.
func (f *Flags) Config() (server.Config, error) {
	cfg := f.Server
	if f.InitialCluster != "" {
		ic, err := server.ParseInitialCluster(f.InitialCluster)
		if err != nil {
			return cfg, err
		}
		cfg.InitialCluster = ic
	}
	cfg.AuthTokenTTL = time.Duration(f.AuthTokenTTL) * time.Second
	cfg.ListenPeerURLs = server.SplitURLs(f.ListenPeerURLs)
	cfg.AdvertisePeerURLs = server.SplitURLs(f.InitialAdvertisePeerURLs)
	cfg.Peers = server.SplitURLs(f.Peers)
	linger, offset := f.PeerBatchLinger, f.MaxClockOffset
	cfg.PeerBatchLinger = &linger
	cfg.PeerCompression = f.PeerCompression
	cfg.MaxClockOffset = &offset
	mode, err := mvcc.ParseFsyncMode(f.Fsync)
	if err != nil {
		return cfg, fmt.Errorf("--fsync: %w", err)
	}
	cfg.Fsync = mode
	cfg.ListenClientURLs = server.SplitURLs(f.ListenClientURLs)
	cfg.AdvertiseClientURLs = server.SplitURLs(f.AdvertiseClientURLs)
	cfg.ListenMetricsURLs = server.SplitURLs(f.ListenMetricsURLs)
	if f.GCHeapFloor < 0 {
		return cfg, fmt.Errorf("--gc-heap-floor %d: must be 0 (off) or a number of bytes", f.GCHeapFloor)
	}
	return cfg, nil
}

func newKVCmd() *cobra.Command {
	flags := DefaultFlags()
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "Run the kv store: an etcd-v3-API-compatible key-value store, single or replicated local-first",
		Long: `Serves etcd's v3 gRPC API (KV, Watch, Lease, Maintenance, Cluster) so etcdctl, etcd client
libraries and Kubernetes use it unchanged. Flags follow etcd's names. Every acknowledged write is
fsynced first (--fsync=batch groups concurrent writes into one fsync).

With --initial-cluster naming several members, the members replicate without consensus: each
serves every read and write from its own state and pushes its changes to its peers, which pull
from each other (--peers may name a subset: changes still reach every member). Concurrent writes
to a key resolve by last writer wins (hybrid logical clock). See docs/kv.md.`,
		Example: `  continuum kv --data-dir /var/lib/continuum-kv --listen-client-urls http://0.0.0.0:2379 \
      --advertise-client-urls http://10.0.0.5:2379 --listen-metrics-urls http://127.0.0.1:2381
  etcdctl --endpoints 127.0.0.1:2379 put foo bar

  # one member of three (run the same on b and c with their own --name and URLs)
  continuum kv --name a --data-dir a.kv --listen-client-urls http://10.0.0.1:2379 \
      --listen-peer-urls http://10.0.0.1:2380 --initial-cluster-token edge \
      --initial-cluster a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,c=http://10.0.0.3:2380

  # the same, with links encrypted by generated self-signed certificates (not authenticated)
  continuum kv --name a --data-dir a.kv --listen-client-urls https://10.0.0.1:2379 --auto-tls \
      --listen-peer-urls https://10.0.0.1:2380 --peer-auto-tls --initial-cluster-token edge \
      --initial-cluster a=https://10.0.0.1:2380,b=https://10.0.0.2:2380,c=https://10.0.0.3:2380
  etcdctl --endpoints https://10.0.0.1:2379 --insecure-skip-tls-verify put foo bar`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := flags.Config()
			if err != nil {
				return err
			}
			cfg.Logger = cli.Logger()
			if flags.GCHeapFloor > 0 && !gcfloor.UserTuned() {
				ctx, cancel := context.WithCancel(cmd.Context())
				defer cancel()
				go gcfloor.Run(ctx, uint64(flags.GCHeapFloor), time.Second)
			}
			return server.Run(cmd.Context(), cfg)
		},
	}
	flags.Bind(cmd.Flags())
	cmd.AddCommand(newKVSnapshotCmd())
	return cmd
}

func newKVSnapshotCmd() *cobra.Command {
	snap := &cobra.Command{
		Use:   "snapshot",
		Short: "Restore snapshots taken with `etcdctl snapshot save` from a continuum kv member",
		Example: `  etcdctl --endpoints 10.0.0.1:2379 snapshot save backup.snap
  continuum kv snapshot restore backup.snap --data-dir restored.kv
  continuum kv --data-dir restored.kv ...`,
	}
	var dataDir string
	restore := &cobra.Command{
		Use:     "restore FILE --data-dir DIR",
		Short:   "Restore a snapshot into a new data directory (checks its SHA-256; the restored member gets an id of its own)",
		Example: `  continuum kv snapshot restore backup.snap --data-dir restored.kv`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return fmt.Errorf("--data-dir is required: the new, empty directory to restore into")
			}
			if err := server.RestoreSnapshot(args[0], dataDir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s\n", args[0], dataDir)
			return nil
		},
	}
	restore.Flags().StringVar(&dataDir, "data-dir", "", "new, empty data directory to restore into")
	snap.AddCommand(restore)
	return snap
}
