package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/replication"
)

// Per-request durability: a client asks that a write be acknowledged only once k members hold
// it durably by sending gRPC metadata, e.g. with clientv3:
//
//	ctx = metadata.AppendToOutgoingContext(ctx, "continuum-durability", "2")
//
// The write is made and fsynced on this member as always; the response then waits until k
// members (this one included) hold the change at the response's revision, or until
// continuum-durability-timeout (a Go duration, default 5s, and never past the call's deadline).
// When k members are not reached, the call fails with Unavailable and a message that says so,
// but the write is not undone: it is durable here and keeps replicating. (Not
// DeadlineExceeded: clientv3 silently retries a call whose own deadline has not passed on that
// code, even a Put, which would write again.)
const (
	durabilityKey         = "continuum-durability"
	durabilityTimeoutKey  = "continuum-durability-timeout"
	defaultDurabilityWait = 5 * time.Second
)

func isWrite(method string) bool {
	switch method {
	case "/etcdserverpb.KV/Put", "/etcdserverpb.KV/DeleteRange", "/etcdserverpb.KV/Txn":
		return true
	}
	return false
}

// durability parses the request's durability metadata; k is 1 when none was sent.
func (s *Server) durability(ctx context.Context) (k int, wait time.Duration, err error) {
	// ValueFromIncomingContext copies only the key's values; FromIncomingContext would copy
	// every header of every write (a twentieth of a request's allocations).
	k, wait = 1, defaultDurabilityWait
	members := 1
	if s.repl != nil {
		members = len(s.cfg.InitialCluster)
	}
	if v := metadata.ValueFromIncomingContext(ctx, durabilityKey); len(v) > 0 {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > members {
			return 0, 0, status.Errorf(codes.InvalidArgument, "%s %q: want an integer from 1 to %d (the members of this cluster)", durabilityKey, v[0], members)
		}
		k = n
	}
	if v := metadata.ValueFromIncomingContext(ctx, durabilityTimeoutKey); len(v) > 0 {
		d, err := time.ParseDuration(v[0])
		if err != nil || d <= 0 {
			return 0, 0, status.Errorf(codes.InvalidArgument, "%s %q: want a positive duration such as 2s or 500ms", durabilityTimeoutKey, v[0])
		}
		wait = d
	}
	return k, wait, nil
}

// durabilityInterceptor enforces continuum-durability on writes.
func (s *Server) durabilityInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !isWrite(info.FullMethod) {
		return handler(ctx, req)
	}
	k, wait, err := s.durability(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	if err != nil || k <= 1 {
		return resp, err
	}
	var rev int64
	switch r := resp.(type) {
	case *pb.PutResponse:
		rev = r.Header.Revision
	case *pb.DeleteRangeResponse:
		rev = r.Header.Revision
	case *pb.TxnResponse:
		rev = r.Header.Revision
	}
	c, err := s.store.ChangeAt(rev)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: revision %d: %v", durabilityKey, rev, err)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		// Answer before the client gives up, so it gets the explanation rather than its own
		// deadline error.
		if d := time.Until(dl) * 9 / 10; d < wait {
			wctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	n, err := s.repl.WaitHolders(wctx, c.ID, k)
	if errors.Is(err, replication.ErrNotReplicated) {
		return nil, status.Errorf(codes.Unavailable, "%s %d: the write is durable on this member at revision %d, but only %d of %d members held it in time; it keeps replicating", durabilityKey, k, rev, n, k)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", durabilityKey, fmt.Sprint(err))
	}
	return resp, nil
}
