package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/kv/replication"
)

// raftTerm is the term reported in every response header. There is no raft: the term is fixed
// at 1 so clients that compare terms (to detect leader changes) see a stable leader.
const raftTerm = 1

// streamWorkers is the number of goroutines gRPC keeps to run requests; requests beyond it (and
// long-lived streams) get goroutines of their own.
const streamWorkers = 256

// grpcOverheadBytes is the slack etcd gives gRPC over --max-request-bytes.
const grpcOverheadBytes = 512 * 1024

// Config configures a kv server. Field names follow etcd's flags.
type Config struct {
	// Name is this member's human-readable name.
	Name string
	// DataDir holds the store.
	DataDir string
	// ListenClientURLs are the URLs to serve clients on (http:// or https://host:port).
	ListenClientURLs []string
	// AdvertiseClientURLs are the client URLs reported by MemberList (default: the listen URLs).
	AdvertiseClientURLs []string
	// ListenMetricsURLs serve /metrics and /health over HTTP (none: no metrics listener).
	// Plain-http client URLs serve them too, beside gRPC, as etcd's do; https ones do not.
	ListenMetricsURLs []string
	// EnablePprof adds Go's /debug/pprof/ handlers to the metrics listeners (etcd's
	// --enable-pprof), for profiling a server under load.
	EnablePprof bool
	// QuotaBackendBytes raises the NOSPACE alarm when the database outgrows it (0: 2 GiB).
	QuotaBackendBytes int64
	// MaxRequestBytes is the largest write request accepted.
	MaxRequestBytes int64
	// Fsync says when writes become durable (mvcc.FsyncBatch: group commit, fsync before ack).
	Fsync mvcc.FsyncMode
	// AutoCompactionMode is "periodic" or "revision"; AutoCompactionRetention is its
	// retention as etcd reads it ("1h", "30m" or a number of hours for periodic; a number of
	// revisions for revision). Empty or "0" retention disables auto compaction.
	AutoCompactionMode      string
	AutoCompactionRetention string
	// TLS: a certificate and key make the https:// listeners serve TLS; TrustedCAFile with
	// ClientCertAuth requires clients to present a certificate signed by that CA.
	CertFile, KeyFile, TrustedCAFile string
	ClientCertAuth                   bool
	// Peer TLS (etcd's --peer-* flags): the certificate and key serve https:// peer URLs and are
	// this member's client certificate towards https peers; PeerTrustedCAFile verifies peers
	// (both ways), and PeerClientCertAuth requires calling peers to present a certificate.
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile string
	PeerClientCertAuth                           bool
	// AutoTLS and PeerAutoTLS (etcd's --auto-tls, --peer-auto-tls) stand in for missing
	// certificate files: the member generates a self-signed certificate, valid for
	// SelfSignedCertValidity years, under <DataDir>/fixtures/client and fixtures/peer (reused
	// on restart), for the hosts of its listen and advertise URLs. Given files win, as in etcd.
	// Such a certificate encrypts but authenticates nothing: a member dials peers without
	// verifying their certificates, unless PeerTrustedCAFile is set (then it verifies against
	// it, which etcd does not).
	AutoTLS, PeerAutoTLS   bool
	SelfSignedCertValidity uint
	// ProgressNotifyInterval is how often watches created with progress_notify get a progress
	// notification when idle (etcd: 10 minutes).
	ProgressNotifyInterval time.Duration
	// Cluster (package replication; flags as etcd's). InitialCluster maps member names to peer
	// URLs; with more than one member, or with ListenPeerURLs, the server replicates: it serves
	// the replication service on ListenPeerURLs and pulls from Peers (names; default: every
	// other member). AdvertisePeerURLs default to this member's InitialCluster entry.
	InitialCluster      map[string][]string
	InitialClusterState string
	InitialClusterToken string
	ListenPeerURLs      []string
	AdvertisePeerURLs   []string
	Peers               []string
	// PeerDialTimeout bounds one attempt to connect to a peer, PeerMaxBackoff the wait between
	// attempts (0: replication's defaults, 500 ms and 250 ms; see replication.Config).
	PeerDialTimeout time.Duration
	PeerMaxBackoff  time.Duration
	// PeerBatchLinger is how long this member's outgoing Sync streams gather changes after a
	// send (replication.Config.Linger); nil: replication's default, 3 ms; 0: none.
	PeerBatchLinger *time.Duration
	// PeerCompression compresses the Sync streams this member pulls on: s2 (default), gzip or
	// none (replication.Config.Compressor).
	PeerCompression string
	// MaxClockOffset is how far ahead of this member's clock a peer's may run before it is
	// reported (replication.Config.MaxClockOffset); nil: replication's default, 500 ms; 0: never.
	MaxClockOffset *time.Duration
	// EventsFile, if set, is a file this member appends its replication events to, one JSON
	// object per line (see Event), for measuring it from outside without parsing its logs.
	EventsFile string
	// AuthToken is etcd's --auth-token: "simple" (default) or
	// "jwt,pub-key=<file>,priv-key=<file>,sign-method=<alg>[,ttl=<duration>]".
	AuthToken string
	// AuthTokenTTL is how long an unused simple token lives (etcd's --auth-token-ttl;
	// 0: 300 s).
	AuthTokenTTL time.Duration
	// BcryptCost is the bcrypt cost of stored passwords (etcd's --bcrypt-cost; 0: 10).
	BcryptCost int
	// AuthMajorityTimeout: in a cluster, a member that has not heard from a majority of the
	// members for longer than this refuses every auth change, and every write while auth is
	// enabled, so that it cannot go on allowing what a revocation on the majority side took
	// away, nor undo it with a change of its own (authreplicate.go; 0: never).
	AuthMajorityTimeout time.Duration
	// Logger receives the server's logs (nil: discard).
	Logger *slog.Logger
}

func (s *Server) progressInterval() time.Duration {
	if s.cfg.ProgressNotifyInterval > 0 {
		return s.cfg.ProgressNotifyInterval
	}
	return 10 * time.Minute
}

// DefaultConfig returns etcd's defaults.
func DefaultConfig() Config {
	return Config{
		Name:                "default",
		DataDir:             "default.kv",
		ListenClientURLs:    []string{"http://localhost:2379"},
		QuotaBackendBytes:   2 << 30,
		MaxRequestBytes:     1572864,
		Fsync:               mvcc.FsyncBatch,
		AutoCompactionMode:  "periodic",
		AuthToken:           "simple",
		AuthTokenTTL:        DefaultAuthTokenTTL,
		BcryptCost:          bcrypt.DefaultCost,
		AuthMajorityTimeout: DefaultAuthMajorityTimeout,
		// etcd's --self-signed-cert-validity default: one year.
		SelfSignedCertValidity: 1,
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	if len(c.ListenClientURLs) == 0 {
		return errors.New("--listen-client-urls: at least one URL is required")
	}
	for _, u := range append(append([]string{}, c.ListenClientURLs...), c.ListenMetricsURLs...) {
		pu, err := url.Parse(u)
		if err != nil {
			return fmt.Errorf("listen URL %q: %w", u, err)
		}
		if pu.Scheme != "http" && pu.Scheme != "https" {
			return fmt.Errorf("listen URL %q: scheme must be http or https", u)
		}
		if pu.Scheme == "https" && (c.CertFile == "" || c.KeyFile == "") && !c.AutoTLS {
			return fmt.Errorf("listen URL %q: https needs --cert-file and --key-file, or --auto-tls", u)
		}
	}
	if c.QuotaBackendBytes < 0 {
		return errors.New("--quota-backend-bytes must be >= 0")
	}
	if c.MaxRequestBytes <= 0 {
		return errors.New("--max-request-bytes must be > 0")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("--cert-file and --key-file go together")
	}
	if c.ClientCertAuth && c.TrustedCAFile == "" {
		return errors.New("--client-cert-auth needs --trusted-ca-file")
	}
	if (c.AutoTLS || c.PeerAutoTLS) && c.SelfSignedCertValidity == 0 {
		return errors.New("--self-signed-cert-validity 0: the generated certificates need a validity of at least 1 (years)")
	}
	if _, err := newCompactor(c.AutoCompactionMode, c.AutoCompactionRetention); err != nil {
		return err
	}
	if _, err := newTokenProvider(c.AuthToken, c.AuthTokenTTL); err != nil {
		return err
	}
	if c.AuthMajorityTimeout < 0 || (c.AuthMajorityTimeout > 0 && c.AuthMajorityTimeout < minAuthMajorityTimeout) {
		return fmt.Errorf("--auth-majority-timeout %v: must be 0 (never refuse) or at least %v (three replication heartbeats: a healthy idle link is heard from once a heartbeat)", c.AuthMajorityTimeout, minAuthMajorityTimeout)
	}
	if c.BcryptCost != 0 && (c.BcryptCost < bcrypt.MinCost || c.BcryptCost > bcrypt.MaxCost) {
		return fmt.Errorf("--bcrypt-cost %d: must be between %d and %d", c.BcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	return c.validateCluster()
}

// Server is a running kv server.
type Server struct {
	cfg       Config
	log       *slog.Logger
	lock      *dataDirLock // held from before the store opens until after it closes
	store     *mvcc.Store
	grpcs     []*grpc.Server
	http      []*http.Server
	lns       []net.Listener
	addrs     []string
	memberID  uint64
	clusterID uint64
	metrics   *metrics
	auth      *authStore
	majority  majorityWatch
	events    *eventLog               // nil without Config.EventsFile
	repl      *replication.Replicator // nil on a single member
	mship     *membership             // runtime membership changes (cluster only)
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	// peerSelfSigned: the peer certificate was generated for --peer-auto-tls (see tlsFiles).
	peerSelfSigned bool
}

// Start opens the store and serves it on the configured listeners.
func Start(cfg Config) (*Server, error) {
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = 2 << 30
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()
	peerSelfSigned, err := cfg.selfSignedCerts(log)
	if err != nil {
		return nil, err
	}
	scfg := mvcc.DefaultConfig(cfg.DataDir)
	scfg.Fsync = cfg.Fsync
	scfg.QuotaBytes = cfg.QuotaBackendBytes
	scfg.Logger = log
	scfg.Replicated = cfg.clustered()
	var s *Server
	// Conflicts come only from peers' changes, applied once replication runs, after s is set.
	scfg.OnConflict = func(c mvcc.Conflict) { s.conflict(c) }
	tokens, err := newTokenProvider(cfg.AuthToken, cfg.AuthTokenTTL)
	if err != nil {
		return nil, err
	}
	auth, err := openAuthStore(cfg.DataDir, cfg.BcryptCost, tokens)
	if err != nil {
		return nil, err
	}
	store, err := mvcc.Open(scfg)
	if err != nil {
		return nil, err
	}
	auth.member = store.MemberID()
	s = &Server{cfg: cfg, log: log, lock: lock, store: store, auth: auth, memberID: store.MemberID(), peerSelfSigned: peerSelfSigned, stop: make(chan struct{})}
	if cfg.clustered() {
		s.clusterID = clusterIDFor(cfg.InitialClusterToken, cfg.InitialCluster)
	} else {
		h := fnv.New64a()
		fmt.Fprintf(h, "continuum-kv/%d", s.memberID)
		s.clusterID = h.Sum64()
	}
	if cfg.clustered() {
		s.initMajority() // before serving: the gate holds from the first request
	}
	if cfg.EventsFile != "" {
		if s.events, err = openEventLog(cfg.EventsFile, cfg.Name); err != nil {
			store.Close()
			return nil, err
		}
	}
	if cfg.clustered() {
		if err := s.newReplicator(); err != nil {
			s.events.close()
			store.Close()
			return nil, err
		}
	}
	s.metrics = newMetrics(s)
	if err := s.listen(); err != nil {
		s.Close()
		return nil, err
	}
	if cfg.clustered() {
		if err := s.startPeers(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if s.repl != nil {
		s.wg.Add(1)
		go s.watchMajority()
	}
	comp, _ := newCompactor(cfg.AutoCompactionMode, cfg.AutoCompactionRetention)
	if comp != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			comp.run(s.stop, store, log)
		}()
	}
	started = true
	log.Info("serving etcd v3 API", "name", cfg.Name, "member", fmt.Sprintf("%x", s.memberID), "client", s.addrs, "data-dir", cfg.DataDir, "fsync", cfg.Fsync.String())
	return s, nil
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	return tlsFiles{cert: s.cfg.CertFile, key: s.cfg.KeyFile, ca: s.cfg.TrustedCAFile, clientCertAuth: s.cfg.ClientCertAuth}.serverConfig()
}

func (s *Server) newGRPC(tc *tls.Config) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(clientCodec{}),
		grpc.MaxRecvMsgSize(int(s.cfg.MaxRequestBytes + grpcOverheadBytes)),
		grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.MaxConcurrentStreams(math.MaxUint32),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: false}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
		// Reused handler goroutines: no goroutine creation and stack growth per request.
		grpc.NumStreamWorkers(streamWorkers),
		grpc.ChainUnaryInterceptor(s.metrics.unary, s.durabilityInterceptor),
		grpc.ChainStreamInterceptor(s.metrics.stream),
	}
	if tc != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	g := grpc.NewServer(opts...)
	pb.RegisterKVServer(g, &kvServer{s: s})
	pb.RegisterWatchServer(g, &watchServer{s: s})
	pb.RegisterLeaseServer(g, &leaseServer{s: s})
	pb.RegisterClusterServer(g, &clusterServer{s: s})
	pb.RegisterMaintenanceServer(g, &maintenanceServer{s: s})
	pb.RegisterAuthServer(g, &authServer{s: s})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	if s.repl != nil {
		s.repl.RegisterStatus(g)
	}
	return g
}

func (s *Server) listen() error {
	tc, err := s.tlsConfig()
	if err != nil {
		return err
	}
	var plain, secure *grpc.Server
	for _, raw := range s.cfg.ListenClientURLs {
		u, _ := url.Parse(raw)
		ln, err := net.Listen("tcp", u.Host)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", raw, err)
		}
		s.lns = append(s.lns, ln)
		s.addrs = append(s.addrs, u.Scheme+"://"+ln.Addr().String())
		var g *grpc.Server
		gln := ln
		if u.Scheme == "https" {
			if secure == nil {
				secure = s.newGRPC(tc)
			}
			g = secure
		} else {
			if plain == nil {
				plain = s.newGRPC(nil)
			}
			g = plain
			gln = s.splitClientHTTP(ln) // /metrics and /health beside gRPC, as etcd (clienthttp.go)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = g.Serve(gln)
		}()
	}
	for _, g := range []*grpc.Server{plain, secure} {
		if g != nil {
			s.grpcs = append(s.grpcs, g)
		}
	}
	for _, raw := range s.cfg.ListenMetricsURLs {
		u, _ := url.Parse(raw)
		ln, err := net.Listen("tcp", u.Host)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", raw, err)
		}
		hs := &http.Server{Handler: s.metrics.handler(), ReadHeaderTimeout: 10 * time.Second}
		if u.Scheme == "https" {
			hs.TLSConfig = tc
			ln = tls.NewListener(ln, tc)
		}
		s.http = append(s.http, hs)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = hs.Serve(ln)
		}()
	}
	return nil
}

// stopGRPC stops gracefully, then forcibly after a grace period (open watch streams would
// otherwise hold GracefulStop forever).
func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		g.Stop()
		<-done
	}
}

// ClientURLs returns the URLs the server listens on for clients (with the actual ports when
// the configuration asked for port 0).
func (s *Server) ClientURLs() []string { return append([]string(nil), s.addrs...) }

// Store returns the underlying store.
func (s *Server) Store() *mvcc.Store { return s.store }

func (s *Server) advertiseURLs() []string {
	if len(s.cfg.AdvertiseClientURLs) > 0 {
		return s.cfg.AdvertiseClientURLs
	}
	return s.ClientURLs()
}

// Close stops serving and closes the store.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		if s.repl != nil {
			s.repl.Close() // ends the Sync streams, so the graceful stop below does not wait
		}
		for _, g := range s.grpcs {
			stopGRPC(g)
		}
		for _, ln := range s.lns {
			ln.Close()
		}
		for _, h := range s.http {
			h.Close()
		}
		s.wg.Wait()
		s.events.storage(s.store.StorageIO())
		s.events.close()
		err = s.store.Close()
		s.lock.release()
	})
	return err
}

// Run serves until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	s.log.Info("shutting down")
	return s.Close()
}

// fill completes a response header as etcd's v3rpc header.fill does.
func (s *Server) fill(h *pb.ResponseHeader) {
	h.ClusterId = s.clusterID
	h.MemberId = s.memberID
	h.RaftTerm = raftTerm
	if h.Revision == 0 {
		h.Revision = s.store.Rev()
	}
}

// splitURLs splits a comma-separated URL list as etcd's flags do.
func SplitURLs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
