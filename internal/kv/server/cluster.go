package server

import (
	"context"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/continuum-project/continuum/internal/kv/replication"
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

// members lists this member and, in a cluster, every member of --initial-cluster: with the id
// and client URLs it announced once it has been heard from, and before that with an id derived
// from its name (etcdctl needs a non-zero id) and no client URLs.
func (c *clusterServer) members() []*pb.Member {
	self := c.self()
	if c.s.repl == nil {
		return []*pb.Member{self}
	}
	self.PeerURLs = c.s.repl.Self().PeerURLs
	out := []*pb.Member{self}
	known := map[string]replication.Member{}
	for _, m := range c.s.repl.Members()[1:] {
		known[m.Name] = m
	}
	names := make([]string, 0, len(c.s.cfg.InitialCluster))
	for n := range c.s.cfg.InitialCluster {
		if n != c.s.cfg.Name {
			names = append(names, n)
		}
	}
	for n := range known {
		if _, ok := c.s.cfg.InitialCluster[n]; !ok {
			names = append(names, n) // learned from a peer, not in this member's flags
		}
	}
	sort.Strings(names)
	c.s.mship.mu.Lock()
	defer c.s.mship.mu.Unlock()
	listed := map[string]bool{}
	for _, u := range self.PeerURLs {
		listed[u] = true
	}
	for _, n := range names {
		m, ok := known[n]
		if !ok {
			m = replication.Member{ID: placeholderID(c.s.cfg.InitialClusterToken, n), Name: n, PeerURLs: c.s.cfg.InitialCluster[n]}
		}
		if c.s.mship.isRemoved(m.ID, n) {
			continue
		}
		for _, u := range m.PeerURLs {
			listed[u] = true
		}
		out = append(out, &pb.Member{ID: m.ID, Name: n, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs})
	}
	// Added with MemberAdd and not heard from yet: no name, as etcd lists an unstarted member.
	for _, u := range c.s.mship.Added {
		if !listed[u] {
			out = append(out, &pb.Member{ID: placeholderID(c.s.cfg.InitialClusterToken, u), PeerURLs: []string{u}})
		}
	}
	return out
}

func (c *clusterServer) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	resp := &pb.MemberListResponse{Header: &pb.ResponseHeader{}, Members: c.members()}
	// etcd's cluster service fills no revision in its headers.
	resp.Header.ClusterId, resp.Header.MemberId, resp.Header.RaftTerm = c.s.clusterID, c.s.memberID, raftTerm
	return resp, nil
}

func (c *clusterServer) MemberUpdate(ctx context.Context, _ *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	if err := c.s.checkMemberChange(ctx); err != nil {
		return nil, err
	}
	return nil, errUnsupported("member update", "start the member with a new data directory at its new peer URLs, add it (member add), then remove the old one")
}

func (c *clusterServer) MemberPromote(ctx context.Context, _ *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	if err := c.s.checkMemberChange(ctx); err != nil {
		return nil, err
	}
	return nil, errUnsupported("member promote", "there are no learners; every member is a full member from the start")
}
