package replication

import (
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
)

// Peer connections: how a member connects to its peers, and notices that a link died or healed.
//
// A partition that drops packets sends no reset: the TCP connection, and gRPC's HTTP/2
// transport over it, stay "ready" for as long as the kernel retransmits (many minutes), and
// once the link heals, the retransmission timer has backed off so far that the old connection
// may stay mute for many seconds more. A stream opened on it would hang. So the silence of a
// stream (three heartbeats, see pullOnce) is what detects a dead link, and a puller never opens
// a stream on a connection whose stream broke: every attempt after a failure dials a new
// connection (see pull). One dial is bounded by DialTimeout, and the waits between attempts by
// MaxBackoff, so that a healed link is found within about their sum; gRPC's own reconnect
// backoff never comes into play, since a connection is dropped at its first failure.
//
// Keepalive pings are only a backstop (gRPC does not let a client ping more often than every 10
// seconds, and the heartbeats already show a live link): they close a connection whose peer
// stopped answering even while no stream watches it.

const (
	// keepaliveTime is gRPC's floor for client pings (it raises lower values, with a warning).
	keepaliveTime = 10 * time.Second
	// minRetryDelay is the first wait before reopening a broken stream.
	minRetryDelay = 50 * time.Millisecond
)

// dialOptions returns the options of the connections to peers (secure: an https:// peer URL).
func (r *Replicator) dialOptions(secure bool) []grpc.DialOption {
	hb := r.cfg.Heartbeat
	creds := insecure.NewCredentials()
	if secure {
		tc := r.cfg.TLS
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tc)
	}
	return append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(wireCodec{})),
		// A connection is dropped at its first failure, so only MinConnectTimeout (the
		// deadline of the first dial) matters; the backoff is set as tight for completeness
		// (gRPC's default grows to two minutes).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: min(minRetryDelay, r.cfg.MaxBackoff), Multiplier: 1.6, Jitter: 0.2, MaxDelay: r.cfg.MaxBackoff},
			MinConnectTimeout: r.cfg.DialTimeout,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                max(hb, keepaliveTime),
			Timeout:             max(3*hb, time.Second),
			PermitWithoutStream: true,
		}),
	}, r.cfg.DialOptions...)
}

// ServerOptions returns the options the gRPC server on the peer listener needs: an enforcement
// policy that accepts the pullers' keepalive pings (gRPC's default answers a client pinging
// more often than every 5 minutes with GOAWAY too_many_pings), and pings of its own, so that
// the Sync streams of a caller that vanished behind a partition end instead of waiting on a
// dead connection. Peers dial only the peer listener: the client listeners need none of this.
func (r *Replicator) ServerOptions() []grpc.ServerOption {
	hb := r.cfg.Heartbeat
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: max(hb, keepaliveTime), Timeout: max(3*hb, time.Second)}),
	}
}

// wireCodec is the client-side codec for the peer protocol's messages: kvclient's, for
// messages that encode themselves.
type wireCodec = kvclient.Codec
