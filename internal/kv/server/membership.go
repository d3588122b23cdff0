package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/replication"
)

// Runtime membership (etcd's MemberAdd and MemberRemove) in a cluster without consensus: each
// change applies to the member that is asked, which then pulls from the added member (or stops
// pulling from the removed one); the others learn of it through the replication streams, which
// carry the members and the removed members each member knows of. A removed member that learns
// it was removed stops replicating. Changes are kept in <data-dir>/members.json, so a restart
// keeps them.
type membership struct {
	mu      sync.Mutex
	path    string
	Added   []string        `json:"added"`   // peer URLs added with MemberAdd
	Removed []removedMember `json:"removed"` // members removed with MemberRemove, here or elsewhere
	// SelfRemoved: a peer reported this member removed from the cluster.
	SelfRemoved bool `json:"self_removed,omitempty"`
}

type removedMember struct {
	ID       uint64   `json:"id"`
	Name     string   `json:"name,omitempty"`
	PeerURLs []string `json:"peer_urls,omitempty"`
}

const membershipFile = "members.json"

func loadMembership(dataDir string) (*membership, error) {
	m := &membership{path: filepath.Join(dataDir, membershipFile)}
	b, err := os.ReadFile(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%s: %w", m.path, err)
	}
	return m, nil
}

// save writes the file atomically (a crash leaves the old or the new one, never half of one).
func (m *membership) save() error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(m.path, b)
}

func (m *membership) isRemoved(id uint64, name string) bool {
	for _, r := range m.Removed {
		if r.ID == id || (name != "" && r.Name == name) {
			return true
		}
	}
	return false
}

// applyMembership replays members.json on start (after the replicator started).
func (s *Server) applyMembership() {
	s.mship.mu.Lock()
	for _, u := range s.mship.Added {
		_ = s.repl.AddPeer(u)
	}
	for _, r := range s.mship.Removed {
		for _, u := range r.PeerURLs {
			s.repl.RemovePeer(u)
		}
		s.repl.Forget(r.ID)
	}
	self := s.mship.SelfRemoved
	s.mship.mu.Unlock()
	if self {
		s.repl.ApplyRemovals(s.memberID) // calls removedByPeer, which takes the lock
	}
}

// removedByPeer records a removal that reached this member through replication (the
// replicator's OnRemoved), so that a restart keeps it.
func (s *Server) removedByPeer(m replication.Member) {
	s.mship.mu.Lock()
	defer s.mship.mu.Unlock()
	if m.ID == s.memberID {
		if s.mship.SelfRemoved {
			return
		}
		s.mship.SelfRemoved = true
	} else {
		if slices.ContainsFunc(s.mship.Removed, func(r removedMember) bool { return r.ID == m.ID }) {
			return
		}
		s.mship.Added = slices.DeleteFunc(s.mship.Added, func(u string) bool { return slices.Contains(m.PeerURLs, u) })
		s.mship.Removed = append(s.mship.Removed, removedMember{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs})
		s.revokeLeasesOf(m.ID)
	}
	if err := s.mship.save(); err != nil {
		s.log.Error("save membership after a removal a peer reported", "member", fmt.Sprintf("%x", m.ID), "err", err)
	}
}

func placeholderID(token, key string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "continuum-kv-member/%s/%s", token, key)
	return h.Sum64()
}

func (c *clusterServer) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	if err := c.s.checkMemberChange(ctx); err != nil {
		return nil, err
	}
	s := c.s
	if s.repl == nil {
		return nil, status.Error(codes.FailedPrecondition, "member add: this member is not part of a cluster (start it with --initial-cluster and --listen-peer-urls)")
	}
	if len(r.PeerURLs) == 0 {
		return nil, status.Error(codes.InvalidArgument, "member add: at least one peer URL (http://host:port) is required")
	}
	for _, u := range r.PeerURLs {
		if pu, err := url.Parse(u); err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
			return nil, status.Errorf(codes.InvalidArgument, "member add: peer URL %q: want http://host:port or https://host:port", u)
		}
	}
	for _, m := range c.members() {
		for _, u := range m.PeerURLs {
			if slices.Contains(r.PeerURLs, u) {
				return nil, rpctypes.ErrGRPCPeerURLExist
			}
		}
	}
	s.mship.mu.Lock()
	for _, u := range r.PeerURLs {
		if err := s.repl.AddPeer(u); err != nil {
			s.mship.mu.Unlock()
			return nil, status.Errorf(codes.InvalidArgument, "member add: %v", err)
		}
		s.mship.Added = append(s.mship.Added, u)
	}
	err := s.mship.save()
	s.mship.mu.Unlock()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "member add: save membership: %v", err)
	}
	added := &pb.Member{ID: placeholderID(s.cfg.InitialClusterToken, r.PeerURLs[0]), PeerURLs: r.PeerURLs, IsLearner: r.IsLearner}
	resp := &pb.MemberAddResponse{Header: c.header(), Member: added, Members: c.members()}
	return resp, nil
}

func (c *clusterServer) MemberRemove(ctx context.Context, r *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	if err := c.s.checkMemberChange(ctx); err != nil {
		return nil, err
	}
	s := c.s
	if s.repl == nil {
		return nil, status.Error(codes.FailedPrecondition, "member remove: this member is not part of a cluster")
	}
	if r.ID == s.memberID {
		return nil, status.Error(codes.FailedPrecondition, "member remove: a member cannot remove itself; ask another member to remove it (the removal spreads to all), then stop it")
	}
	var victim *pb.Member
	for _, m := range c.members() {
		if m.ID == r.ID {
			victim = m
		}
	}
	if victim == nil {
		return nil, rpctypes.ErrGRPCMemberNotFound
	}
	s.mship.mu.Lock()
	for _, u := range victim.PeerURLs {
		s.repl.RemovePeer(u)
	}
	s.repl.Forget(victim.ID)
	s.mship.Added = slices.DeleteFunc(s.mship.Added, func(u string) bool { return slices.Contains(victim.PeerURLs, u) })
	s.mship.Removed = append(s.mship.Removed, removedMember{ID: victim.ID, Name: victim.Name, PeerURLs: victim.PeerURLs})
	s.revokeLeasesOf(victim.ID)
	err := s.mship.save()
	s.mship.mu.Unlock()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "member remove: save membership: %v", err)
	}
	return &pb.MemberRemoveResponse{Header: c.header(), Members: c.members()}, nil
}

func (c *clusterServer) header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: c.s.clusterID, MemberId: c.s.memberID, RaftTerm: raftTerm}
}

// revokeLeasesOf deletes the keys attached to a removed member's leases (mvcc.RevokeLeasesOf):
// nobody can keep those leases alive or expire them any more. In the background: a removal does
// not wait for it.
func (s *Server) revokeLeasesOf(id uint64) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := s.store.RevokeLeasesOf(ctx, id)
		switch {
		case err != nil:
			s.log.Warn("delete the keys of a removed member's leases", "member", fmt.Sprintf("%x", id), "err", err)
		case n > 0:
			s.log.Info("deleted the keys of a removed member's leases", "member", fmt.Sprintf("%x", id), "keys", n)
		}
	}()
}
