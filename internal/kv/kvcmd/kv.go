package kvcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/gcfloor"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/kv/replication"
	"github.com/continuum-project/continuum/internal/kv/server"
)

func init() { cli.Register(cli.Top, newKVCmd) }

func newKVCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var listenClient, advertiseClient, listenMetrics, fsync string
	// A 128 MiB heap-goal floor: see --gc-heap-floor in docs/kv.md for what it costs and buys.
	gcFloor := int64(128 << 20)
	var listenPeer, advertisePeer, initialCluster, peers string
	linger := 3 * time.Millisecond
	compression := replication.CompressorS2
	maxOffset := replication.DefaultMaxClockOffset
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
			if initialCluster != "" {
				ic, err := server.ParseInitialCluster(initialCluster)
				if err != nil {
					return err
				}
				cfg.InitialCluster = ic
			}
			cfg.ListenPeerURLs = server.SplitURLs(listenPeer)
			cfg.AdvertisePeerURLs = server.SplitURLs(advertisePeer)
			cfg.Peers = server.SplitURLs(peers)
			cfg.PeerBatchLinger = &linger
			cfg.PeerCompression = compression
			cfg.MaxClockOffset = &maxOffset
			mode, err := mvcc.ParseFsyncMode(fsync)
			if err != nil {
				return fmt.Errorf("--fsync: %w", err)
			}
			cfg.Fsync = mode
			cfg.ListenClientURLs = server.SplitURLs(listenClient)
			cfg.AdvertiseClientURLs = server.SplitURLs(advertiseClient)
			cfg.ListenMetricsURLs = server.SplitURLs(listenMetrics)
			cfg.Logger = cli.Logger()
			if gcFloor < 0 {
				return fmt.Errorf("--gc-heap-floor %d: must be 0 (off) or a number of bytes", gcFloor)
			}
			if gcFloor > 0 && !gcfloor.UserTuned() {
				ctx, cancel := context.WithCancel(cmd.Context())
				defer cancel()
				go gcfloor.Run(ctx, uint64(gcFloor), time.Second)
			}
			return server.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Name, "name", cfg.Name, "human-readable name for this member")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "path to the data directory")
	f.StringVar(&listenClient, "listen-client-urls", "http://localhost:2379", "comma-separated URLs to serve clients on (http or https)")
	f.StringVar(&advertiseClient, "advertise-client-urls", "", "comma-separated client URLs to advertise in member list (default: the listen URLs)")
	f.StringVar(&listenMetrics, "listen-metrics-urls", "", "comma-separated URLs to serve /metrics and /health on")
	f.Int64Var(&gcFloor, "gc-heap-floor", gcFloor, "smallest Go heap goal in bytes: fewer GC cycles (and GC-induced latency) while the data set is small, at the cost of up to that much memory (0: Go's default goal, twice the live heap; ignored when GOGC or GOMEMLIMIT is set)")
	f.StringVar(&cfg.EventsFile, "events-file", "", "append replication events (catch-ups with peers) to this file, one JSON object per line")
	f.BoolVar(&cfg.EnablePprof, "enable-pprof", false, "serve Go's /debug/pprof/ on the --listen-metrics-urls")
	f.Int64Var(&cfg.QuotaBackendBytes, "quota-backend-bytes", cfg.QuotaBackendBytes, "raise the NOSPACE alarm when the database exceeds this size")
	f.Int64Var(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "maximum size of a write request in bytes")
	f.StringVar(&fsync, "fsync", "batch", "when writes are fsynced: batch (group commit, fsync before ack), always (one fsync per write), never")
	f.StringVar(&cfg.AutoCompactionMode, "auto-compaction-mode", cfg.AutoCompactionMode, "periodic or revision")
	f.StringVar(&cfg.AutoCompactionRetention, "auto-compaction-retention", "0", "periodic: a duration (1h) or hours to keep; revision: revisions to keep; 0 disables")
	f.DurationVar(&cfg.ProgressNotifyInterval, "watch-progress-notify-interval", 10*time.Minute, "how often idle watches with progress_notify get a progress notification")
	f.StringVar(&cfg.CertFile, "cert-file", "", "TLS certificate for https client URLs")
	f.StringVar(&cfg.KeyFile, "key-file", "", "TLS key for https client URLs")
	f.StringVar(&cfg.TrustedCAFile, "trusted-ca-file", "", "CA that signs client certificates")
	f.BoolVar(&cfg.ClientCertAuth, "client-cert-auth", false, "require client certificates signed by --trusted-ca-file")
	f.BoolVar(&cfg.AutoTLS, "auto-tls", false, "without --cert-file/--key-file, serve https client URLs with a generated self-signed certificate (<data-dir>/fixtures/client): encrypts, authenticates nothing")
	f.StringVar(&cfg.PeerCertFile, "peer-cert-file", "", "TLS certificate for https peer URLs, also this member's client certificate towards https peers")
	f.StringVar(&cfg.PeerKeyFile, "peer-key-file", "", "TLS key of --peer-cert-file")
	f.StringVar(&cfg.PeerTrustedCAFile, "peer-trusted-ca-file", "", "CA that signs the peers' certificates (verifies https peers, and calling peers' client certificates)")
	f.BoolVar(&cfg.PeerClientCertAuth, "peer-client-cert-auth", false, "require calling peers to present a certificate signed by --peer-trusted-ca-file")
	f.BoolVar(&cfg.PeerAutoTLS, "peer-auto-tls", false, "without --peer-cert-file/--peer-key-file, use a generated self-signed peer certificate (<data-dir>/fixtures/peer) and dial https peers without verifying them unless --peer-trusted-ca-file is set: encrypts, authenticates nothing")
	f.UintVar(&cfg.SelfSignedCertValidity, "self-signed-cert-validity", cfg.SelfSignedCertValidity, "validity in years of the certificates --auto-tls and --peer-auto-tls generate")
	f.StringVar(&listenPeer, "listen-peer-urls", "", "comma-separated URLs to serve replication to peers on (http://host:port)")
	f.StringVar(&advertisePeer, "initial-advertise-peer-urls", "", "this member's peer URLs as peers reach them (default: its --initial-cluster entry)")
	f.StringVar(&initialCluster, "initial-cluster", "", "the cluster's members: name=peerURL,... (this member included)")
	f.StringVar(&cfg.InitialClusterState, "initial-cluster-state", "new", "new or existing (a member joining a running cluster catches up from its peers)")
	f.StringVar(&cfg.InitialClusterToken, "initial-cluster-token", "continuum-kv-cluster", "equal on all members; peers with another token are refused")
	f.StringVar(&peers, "peers", "", "names of the members to pull changes from (default: all others; a subset makes a partial mesh)")
	f.DurationVar(&cfg.PeerDialTimeout, "peer-dial-timeout", 500*time.Millisecond, "longest attempt to connect to a peer; raise to at least 3 round trips on slow links")
	f.DurationVar(&cfg.PeerMaxBackoff, "peer-max-backoff", 250*time.Millisecond, "longest wait between attempts to reconnect to a peer (a healed link is found within about this plus --peer-dial-timeout)")
	f.DurationVar(&linger, "peer-batch-linger", linger, "after sending changes to a peer, gather the next ones this long before sending again (fewer, larger messages under load; adds at most this to replication lag, not to writes that wait for copies; 0: send each change at once)")
	f.StringVar(&compression, "peer-compression", compression, "compression of the changes this member pulls from its peers: s2 (cheap, stores what does not compress), gzip (smaller on slow links, ~3 ms of CPU per 100 kB on each end) or none")
	f.DurationVar(&maxOffset, "max-clock-offset", maxOffset, "report peers whose clock runs further ahead of this member's (counted, logged, exported as continuum_kv_replication_peer_clock_offset_exceeded_total; their changes are still applied); 0: no check")
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
