package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

type clusterServer struct {
	pb.UnimplementedClusterServer
	s *Server
}

func (c *clusterServer) self() *pb.Member {
	return &pb.Member{
		ID:         c.s.memberID,
		Name:       c.s.cfg.Name,
		PeerURLs:   []string{},
		ClientURLs: c.s.advertiseURLs(),
	}
}

func (c *clusterServer) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	resp := &pb.MemberListResponse{Header: &pb.ResponseHeader{}, Members: []*pb.Member{c.self()}}
	// etcd's cluster service fills no revision in its headers.
	resp.Header.ClusterId, resp.Header.MemberId, resp.Header.RaftTerm = c.s.clusterID, c.s.memberID, raftTerm
	return resp, nil
}

func (c *clusterServer) MemberAdd(context.Context, *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	return nil, errReserved("member add")
}

func (c *clusterServer) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	return nil, errReserved("member remove")
}

func (c *clusterServer) MemberUpdate(context.Context, *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	return nil, errReserved("member update")
}

func (c *clusterServer) MemberPromote(context.Context, *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	return nil, errReserved("member promote")
}
