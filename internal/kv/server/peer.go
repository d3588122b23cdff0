package server

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/continuum-project/continuum/internal/kv/replication"
)

// ParseInitialCluster parses etcd's --initial-cluster: comma-separated name=peerURL pairs; a
// name may appear more than once (several peer URLs).
func ParseInitialCluster(s string) (map[string][]string, error) {
	out := map[string][]string{}
	owners := map[string]string{} // peer URL -> member name
	for _, part := range SplitURLs(s) {
		name, u, ok := strings.Cut(part, "=")
		if !ok || name == "" || u == "" {
			return nil, fmt.Errorf("--initial-cluster entry %q: want name=http://host:port", part)
		}
		if pu, err := url.Parse(u); err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
			return nil, fmt.Errorf("--initial-cluster entry %q: peer URL must be http://host:port or https://host:port", part)
		}
		// A name given twice is one member with several peer URLs (etcd's reading); a URL
		// given twice, under one name or two, is a mistake etcd refuses.
		if owner, dup := owners[u]; dup {
			return nil, fmt.Errorf("--initial-cluster %q has duplicate url %s (under %q and %q): each peer URL belongs to one member, once", s, u, owner, name)
		}
		owners[u] = name
		out[name] = append(out[name], u)
	}
	return out, nil
}

// clustered reports whether the server replicates (it has peers or serves a peer listener).
func (c *Config) clustered() bool { return len(c.InitialCluster) > 1 || len(c.ListenPeerURLs) > 0 }

func (c *Config) validateCluster() error {
	// Checked on a single member too, as etcd does: a typo must fail where it is written.
	switch c.InitialClusterState {
	case "", "new", "existing":
	default:
		return fmt.Errorf("--initial-cluster-state %q: want new or existing", c.InitialClusterState)
	}
	if p := c.PeerCompression; p != "" && p != "none" && !slices.Contains(replication.Compressors, p) {
		return fmt.Errorf("--peer-compression %q: want none or one of %s", p, strings.Join(replication.Compressors, ", "))
	}
	if !c.clustered() {
		return nil
	}
	if len(c.ListenPeerURLs) == 0 {
		return fmt.Errorf("--listen-peer-urls is required with a cluster of %d members", len(c.InitialCluster))
	}
	for _, u := range c.ListenPeerURLs {
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
			return fmt.Errorf("--listen-peer-urls %q: want http://host:port or https://host:port", u)
		}
		if pu.Scheme == "https" && (c.PeerCertFile == "" || c.PeerKeyFile == "") && !c.PeerAutoTLS {
			return fmt.Errorf("--listen-peer-urls %q: https needs --peer-cert-file and --peer-key-file, or --peer-auto-tls", u)
		}
	}
	if (c.PeerCertFile == "") != (c.PeerKeyFile == "") {
		return errors.New("--peer-cert-file and --peer-key-file go together")
	}
	if c.PeerClientCertAuth && c.PeerTrustedCAFile == "" {
		return errors.New("--peer-client-cert-auth needs --peer-trusted-ca-file")
	}
	if len(c.InitialCluster) > 0 {
		if _, ok := c.InitialCluster[c.Name]; !ok {
			return fmt.Errorf("--initial-cluster does not name this member (--name %q)", c.Name)
		}
	}
	if c.PeerDialTimeout < 0 || c.PeerMaxBackoff < 0 {
		return fmt.Errorf("--peer-dial-timeout and --peer-max-backoff must not be negative (0: the default)")
	}
	if l := c.PeerBatchLinger; l != nil {
		if hb := replication.DefaultConfig(nil).Heartbeat; *l < 0 || *l >= hb {
			return fmt.Errorf("--peer-batch-linger %v: want 0 (send every change at once) up to below the %v heartbeat (a few ms is plenty)", *l, hb)
		}
	}
	if o := c.MaxClockOffset; o != nil && *o < 0 {
		return fmt.Errorf("--max-clock-offset %v: want 0 (no check) or a positive duration (CockroachDB's default is 500ms)", *o)
	}
	for _, p := range c.Peers {
		if _, ok := c.InitialCluster[p]; !ok {
			return fmt.Errorf("--peers names %q, which is not in --initial-cluster", p)
		}
		if p == c.Name {
			return fmt.Errorf("--peers names this member (%q)", p)
		}
	}
	return nil
}

// pullFrom returns the peer URLs this member pulls from: those of --peers, or of every other
// member of --initial-cluster.
func (c *Config) pullFrom() []string {
	names := c.Peers
	if len(names) == 0 {
		for name := range c.InitialCluster {
			if name != c.Name {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, c.InitialCluster[n]...)
	}
	return out
}

// clusterIDFor derives the cluster id from the token and the initial membership, as etcd does,
// so every member reports the same one.
func clusterIDFor(token string, cluster map[string][]string) uint64 {
	names := make([]string, 0, len(cluster))
	for n := range cluster {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New64a()
	fmt.Fprintf(h, "continuum-kv-cluster/%s", token)
	for _, n := range names {
		fmt.Fprintf(h, "/%s=%s", n, strings.Join(cluster[n], ","))
	}
	return h.Sum64()
}

// newReplicator creates the replicator (before the client listeners, which serve its Status
// service); startPeers then serves the peer listeners and starts pulling.
func (s *Server) newReplicator() error {
	advertise := s.cfg.AdvertisePeerURLs
	if len(advertise) == 0 {
		advertise = s.cfg.InitialCluster[s.cfg.Name]
	}
	rc := replication.DefaultConfig(s.store)
	rc.Name, rc.PeerURLs = s.cfg.Name, advertise
	rc.ClusterToken = s.cfg.InitialClusterToken
	rc.Peers = s.cfg.pullFrom()
	rc.ClusterSize = len(s.cfg.InitialCluster)
	rc.Compressor = replication.CompressorS2
	switch s.cfg.PeerCompression {
	case "":
	case "none":
		rc.Compressor = ""
	default:
		rc.Compressor = s.cfg.PeerCompression
	}
	if s.cfg.PeerDialTimeout > 0 {
		rc.DialTimeout = s.cfg.PeerDialTimeout
	}
	if s.cfg.PeerMaxBackoff > 0 {
		rc.MaxBackoff = s.cfg.PeerMaxBackoff
	}
	if s.cfg.PeerBatchLinger != nil {
		rc.Linger = *s.cfg.PeerBatchLinger
	}
	if s.cfg.MaxClockOffset != nil {
		rc.MaxClockOffset = *s.cfg.MaxClockOffset
	}
	rc.Logger = s.log.With("component", "replication")
	tc, err := s.peerTLS().clientConfig()
	if err != nil {
		return err
	}
	rc.TLS = tc
	rc.OnRemoved = s.removedByPeer
	rc.StateOut = s.auth.replicaState
	rc.StateIn = func(from uint64, b []byte) {
		if err := s.auth.adopt(b); err != nil {
			s.log.Error("auth store from a peer", "peer", fmt.Sprintf("%x", from), "err", err)
		}
	}
	if s.events != nil {
		rc.OnCatchUp = s.events.caughtUp
	}
	r, err := replication.New(rc)
	if err != nil {
		return err
	}
	s.repl = r
	s.mship, err = loadMembership(s.cfg.DataDir)
	return err
}

func (s *Server) startPeers() error {
	// The client URLs are known only now (port 0 in tests).
	s.repl.SetClientURLs(s.advertiseURLs())
	r := s.repl
	opts := append([]grpc.ServerOption{grpc.ForceServerCodec(codec{}), grpc.MaxRecvMsgSize(64 << 20)}, r.ServerOptions()...)
	g := grpc.NewServer(opts...)
	var gs *grpc.Server // the https peer listeners' server
	if s.cfg.PeerCertFile != "" {
		tc, err := s.peerTLS().serverConfig()
		if err != nil {
			return err
		}
		gs = grpc.NewServer(append(opts, grpc.Creds(credentials.NewTLS(tc)))...)
		r.Register(gs)
		s.grpcs = append(s.grpcs, gs)
	}
	r.Register(g)
	s.grpcs = append(s.grpcs, g)
	for _, raw := range s.cfg.ListenPeerURLs {
		u, _ := url.Parse(raw)
		ln, err := net.Listen("tcp", u.Host)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", raw, err)
		}
		s.lns = append(s.lns, ln)
		srv := g
		if u.Scheme == "https" {
			srv = gs
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = srv.Serve(ln)
		}()
	}
	r.Start()
	s.applyMembership()
	return nil
}

// peerTLS is the peers' TLS identity (etcd's --peer-* flags).
func (s *Server) peerTLS() tlsFiles {
	return tlsFiles{flag: "peer-", cert: s.cfg.PeerCertFile, key: s.cfg.PeerKeyFile, ca: s.cfg.PeerTrustedCAFile,
		clientCertAuth: s.cfg.PeerClientCertAuth, selfSigned: s.peerSelfSigned}
}
