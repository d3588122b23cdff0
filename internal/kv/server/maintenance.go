package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Version is the etcd version Continuum kv reports in Status: the etcd API level it implements.
// Clients gate features on it (Kubernetes uses RequestProgress from 3.4.31/3.5.13 on).
const Version = "3.6.0"

type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s *Server
}

func (m *maintenanceServer) Status(ctx context.Context, r *pb.StatusRequest) (*pb.StatusResponse, error) {
	if err := m.s.requireUser(ctx); err != nil {
		return nil, err
	}
	hdr := &pb.ResponseHeader{}
	m.s.fill(hdr)
	total, inUse := m.s.store.DBSize()
	rev := uint64(m.s.store.Rev())
	resp := &pb.StatusResponse{
		Header:           hdr,
		Version:          Version,
		DbSize:           total,
		DbSizeInUse:      inUse,
		Leader:           m.s.memberID,
		RaftIndex:        rev,
		RaftAppliedIndex: rev,
		RaftTerm:         raftTerm,
		StorageVersion:   Version,
		DbSizeQuota:      m.s.cfg.QuotaBackendBytes,
		DowngradeInfo:    &pb.DowngradeInfo{},
	}
	for _, a := range m.s.store.Alarms() {
		resp.Errors = append(resp.Errors, (&pb.AlarmMember{MemberID: m.s.memberID, Alarm: a}).String())
	}
	return resp, nil
}

func (m *maintenanceServer) Defragment(ctx context.Context, r *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	if err := m.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	if err := m.s.store.Defragment(ctx); err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.DefragmentResponse{Header: &pb.ResponseHeader{}}
	m.s.fill(resp.Header)
	return resp, nil
}

func (m *maintenanceServer) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	check := m.s.checkAdmin
	if r.Action == pb.AlarmRequest_GET {
		check = m.s.requireUser
	}
	if err := check(ctx); err != nil {
		return nil, err
	}
	// Raising or disarming an alarm is a write (etcd's goes through Raft), refused like one
	// by a member cut off from the majority while auth is enabled; Defragment, which etcd's
	// member runs without a leader, is not.
	if r.Action != pb.AlarmRequest_GET && m.s.auth.isEnabled() {
		if err := m.s.checkMajority(writeRefused); err != nil {
			return nil, err
		}
	}
	resp := &pb.AlarmResponse{Header: &pb.ResponseHeader{}}
	switch r.Action {
	case pb.AlarmRequest_GET:
	case pb.AlarmRequest_ACTIVATE:
		if r.Alarm == pb.AlarmType_NOSPACE {
			m.s.store.RaiseNoSpace()
		}
	case pb.AlarmRequest_DEACTIVATE:
		if r.Alarm == pb.AlarmType_NOSPACE || r.Alarm == pb.AlarmType_NONE {
			m.s.store.DisarmNoSpace()
		}
	}
	for _, a := range m.s.store.Alarms() {
		if r.Alarm != pb.AlarmType_NONE && r.Alarm != a {
			continue
		}
		resp.Alarms = append(resp.Alarms, &pb.AlarmMember{MemberID: m.s.memberID, Alarm: a})
	}
	m.s.fill(resp.Header)
	return resp, nil
}

func (m *maintenanceServer) HashKV(ctx context.Context, r *pb.HashKVRequest) (*pb.HashKVResponse, error) {
	if err := m.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	h, rev, compactRev, err := m.s.store.HashKV(r.Revision)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.HashKVResponse{Header: &pb.ResponseHeader{Revision: rev}, Hash: h, CompactRevision: compactRev, HashRevision: rev}
	m.s.fill(resp.Header)
	return resp, nil
}

// Hash is etcd's deprecated whole-backend hash: over every revision record this member holds,
// history included (mvcc.Store.Hash). Members number revisions themselves, so it differs from
// member to member; HashKV is the one to compare them with.
func (m *maintenanceServer) Hash(ctx context.Context, r *pb.HashRequest) (*pb.HashResponse, error) {
	if err := m.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	h, rev, err := m.s.store.Hash(ctx)
	if err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.HashResponse{Header: &pb.ResponseHeader{Revision: rev}, Hash: h}
	m.s.fill(resp.Header)
	return resp, nil
}

func (m *maintenanceServer) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	if err := m.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	return nil, errUnsupported("move leader", "there is no leader; every member takes writes itself (local-first replication)")
}

func (m *maintenanceServer) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	if err := m.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	return nil, errUnsupported("downgrade", "there is no cluster-wide storage version to downgrade")
}
