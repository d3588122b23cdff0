package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/gcfloor"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/kv/server"
)

func init() { commands = append(commands, newKVCmd) }

func newKVCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var listenClient, advertiseClient, listenMetrics, fsync string
	gcFloor := int64(128 << 20)
	var peer struct {
		listenPeer, initialAdvertisePeer, initialCluster, initialClusterState, initialClusterToken string
	}
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "Run the kv store: a single-member, etcd-v3-API-compatible key-value store (replication comes next)",
		Long: `Serves etcd's v3 gRPC API (KV, Watch, Lease, Maintenance, Cluster) so etcdctl, etcd client
libraries and Kubernetes use it unchanged. Flags follow etcd's names. Every acknowledged write is
fsynced first (--fsync=batch groups concurrent writes into one fsync). Peer flags are reserved for
replication and rejected if set. See docs/kv.md.`,
		Example: `  continuum kv --data-dir /var/lib/continuum-kv --listen-client-urls http://0.0.0.0:2379 \
      --advertise-client-urls http://10.0.0.5:2379 --listen-metrics-urls http://127.0.0.1:2381
  etcdctl --endpoints 127.0.0.1:2379 put foo bar`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for name, v := range map[string]string{
				"listen-peer-urls": peer.listenPeer, "initial-advertise-peer-urls": peer.initialAdvertisePeer,
				"initial-cluster": peer.initialCluster, "initial-cluster-state": peer.initialClusterState,
				"initial-cluster-token": peer.initialClusterToken,
			} {
				if v != "" {
					return fmt.Errorf("--%s is reserved for replication (not implemented yet)", name)
				}
			}
			mode, err := mvcc.ParseFsyncMode(fsync)
			if err != nil {
				return fmt.Errorf("--fsync: %w", err)
			}
			cfg.Fsync = mode
			cfg.ListenClientURLs = server.SplitURLs(listenClient)
			cfg.AdvertiseClientURLs = server.SplitURLs(advertiseClient)
			cfg.ListenMetricsURLs = server.SplitURLs(listenMetrics)
			cfg.Logger = logger()
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
	f.Int64Var(&gcFloor, "gc-heap-floor", gcFloor, "smallest Go heap goal in bytes: fewer GC cycles while the data set is small, for lower tail latency (0: Go's default; ignored when GOGC or GOMEMLIMIT is set)")
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
	f.StringVar(&peer.listenPeer, "listen-peer-urls", "", "reserved for replication (not implemented yet)")
	f.StringVar(&peer.initialAdvertisePeer, "initial-advertise-peer-urls", "", "reserved for replication (not implemented yet)")
	f.StringVar(&peer.initialCluster, "initial-cluster", "", "reserved for replication (not implemented yet)")
	f.StringVar(&peer.initialClusterState, "initial-cluster-state", "", "reserved for replication (not implemented yet)")
	f.StringVar(&peer.initialClusterToken, "initial-cluster-token", "", "reserved for replication (not implemented yet)")
	return cmd
}
