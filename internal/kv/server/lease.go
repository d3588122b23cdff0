package server

import (
	"context"
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

type leaseServer struct {
	pb.UnimplementedLeaseServer
	s *Server
}

// LeaseGrant, LeaseRevoke and LeaseKeepAlive are writes: while auth is enabled, a member cut
// off from the majority past --auth-majority-timeout refuses them (checkMajority), as etcd's
// member without a leader does (codes.Unavailable), so a user whose permission was revoked
// on the majority side cannot keep a leased key alive through it.
func (l *leaseServer) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if l.s.auth.isEnabled() {
		if err := l.s.checkMajority(writeRefused); err != nil {
			return nil, err
		}
	}
	id, ttl, err := l.s.store.LeaseGrant(ctx, r.ID, r.TTL)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.LeaseGrantResponse{Header: &pb.ResponseHeader{}, ID: id, TTL: ttl}
	l.s.fill(resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	if err := l.s.checkLeaseRevoke(ctx, r.ID); err != nil {
		return nil, err
	}
	if err := l.s.store.LeaseRevoke(ctx, r.ID); err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.LeaseRevokeResponse{Header: &pb.ResponseHeader{}}
	l.s.fill(resp.Header)
	return resp, nil
}

// LeaseTimeToLive answers TTL -1 for an unknown lease, without an error, as etcd does.
func (l *leaseServer) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	if err := l.s.checkLeaseKeys(ctx, false, r.ID); err != nil {
		return nil, err
	}
	info, err := l.s.store.LeaseTimeToLive(r.ID, r.Keys)
	if err != nil && !errors.Is(err, mvcc.ErrLeaseNotFound) {
		return nil, togRPCError(err)
	}
	resp := &pb.LeaseTimeToLiveResponse{Header: &pb.ResponseHeader{}, ID: info.ID, TTL: info.TTL, GrantedTTL: info.GrantedTTL, Keys: info.Keys}
	l.s.fill(resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	ids := l.s.store.Leases()
	if err := l.s.checkLeaseKeys(ctx, false, ids...); err != nil {
		return nil, err
	}
	resp := &pb.LeaseLeasesResponse{Header: &pb.ResponseHeader{}, Leases: make([]*pb.LeaseStatus, len(ids))}
	for i, id := range ids {
		resp.Leases[i] = &pb.LeaseStatus{ID: id}
	}
	l.s.fill(resp.Header)
	return resp, nil
}

// LeaseKeepAlive renews leases as requests arrive on the stream; an unknown lease gets TTL 0, as
// in etcd.
func (l *leaseServer) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if status.Code(err) == codes.Canceled {
				return nil
			}
			return err
		}
		if err := l.s.checkLeaseKeys(stream.Context(), true, req.ID); err != nil {
			return err
		}
		if l.s.auth.isEnabled() {
			if err := l.s.checkMajority(writeRefused); err != nil {
				return err
			}
		}
		ttl, err := l.s.store.LeaseKeepAlive(req.ID)
		if err != nil && !errors.Is(err, mvcc.ErrLeaseNotFound) {
			return togRPCError(err)
		}
		resp := &pb.LeaseKeepAliveResponse{Header: &pb.ResponseHeader{}, ID: req.ID, TTL: ttl}
		l.s.fill(resp.Header)
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
