package replication

import (
	"bytes"
	"context"

	"google.golang.org/grpc"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	pb "github.com/continuum-project/continuum/internal/kv/replication/replicationpb"
)

const conflictsMethod = "/continuum.kv.replication.v1.Status/Conflicts"

// ConflictsRequest asks a member for its conflict log (mvcc.Conflict), for keys under Prefix.
type ConflictsRequest struct {
	Prefix []byte
}

// ConflictsResponse is a member's conflict log, oldest first, with the members it knows (to
// name the origins of the stamps).
type ConflictsResponse struct {
	MemberID  uint64
	Total     uint64 // recorded since the member started, those the bounded log dropped included
	Conflicts []mvcc.Conflict
	Members   []Member
}

// Name returns the name of member id as the response knows it ("" if unknown).
func (r *ConflictsResponse) Name(id uint64) string {
	for _, m := range r.Members {
		if m.ID == id {
			return m.Name
		}
	}
	return ""
}

func (r *Replicator) conflicts(_ context.Context, req *ConflictsRequest) (*ConflictsResponse, error) {
	resp := &ConflictsResponse{MemberID: r.store.MemberID(), Total: r.store.ConflictsTotal(), Members: r.Members()}
	for _, c := range r.store.Conflicts() {
		if bytes.HasPrefix(c.Key, req.Prefix) {
			resp.Conflicts = append(resp.Conflicts, c)
		}
	}
	return resp, nil
}

// QueryConflicts asks a member's Status service (over conn, a client connection to its client
// URL) for its conflict log, for keys starting with prefix. A server that is not a continuum kv
// member (etcd, or a kv member started without a cluster) answers codes.Unimplemented.
func QueryConflicts(ctx context.Context, conn grpc.ClientConnInterface, prefix []byte) (*ConflictsResponse, error) {
	resp := new(ConflictsResponse)
	err := conn.Invoke(ctx, conflictsMethod, &ConflictsRequest{Prefix: prefix}, resp, grpc.ForceCodec(wireCodec{}))
	return resp, err
}

// Marshal encodes r.
func (r *ConflictsRequest) Marshal() ([]byte, error) {
	return (&pb.ConflictsRequest{Prefix: r.Prefix}).MarshalVT()
}

// Unmarshal decodes r, copying what it keeps (the unsafe decode aliases b, which gRPC reuses).
func (r *ConflictsRequest) Unmarshal(b []byte) error {
	var p pb.ConflictsRequest
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	*r = ConflictsRequest{Prefix: bytes.Clone(p.Prefix)}
	return nil
}

// Marshal encodes r.
func (r *ConflictsResponse) Marshal() ([]byte, error) {
	p := &pb.ConflictsResponse{MemberId: r.MemberID, Total: r.Total}
	for i := range r.Conflicts {
		c := &r.Conflicts[i]
		p.Conflicts = append(p.Conflicts, &pb.Conflict{Key: c.Key,
			KeptOrigin: c.Kept.Origin, KeptWall: c.Kept.Time.Wall, KeptLogical: c.Kept.Time.Logical, KeptDeleted: c.KeptDeleted,
			LostOrigin: c.Lost.Origin, LostWall: c.Lost.Time.Wall, LostLogical: c.Lost.Time.Logical, LostSeq: c.Change.Seq,
			LostValue: c.LostValue, LostDeleted: c.LostDeleted, Revision: c.Revision})
	}
	for i := range r.Members {
		p.Members = append(p.Members, memberToPB(&r.Members[i], new(pb.Member)))
	}
	return p.MarshalVT()
}

// Unmarshal decodes r.
func (r *ConflictsResponse) Unmarshal(b []byte) error {
	var p pb.ConflictsResponse
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	*r = ConflictsResponse{MemberID: p.MemberId, Total: p.Total}
	for _, c := range p.Conflicts {
		mc := mvcc.Conflict{Key: bytes.Clone(c.Key),
			Kept:        mvcc.Stamp{Origin: c.KeptOrigin, Time: mvcc.Timestamp{Wall: c.KeptWall, Logical: c.KeptLogical}},
			KeptDeleted: c.KeptDeleted,
			Lost:        mvcc.Stamp{Origin: c.LostOrigin, Time: mvcc.Timestamp{Wall: c.LostWall, Logical: c.LostLogical}},
			Change:      mvcc.ChangeID{Origin: c.LostOrigin, Seq: c.LostSeq},
			LostDeleted: c.LostDeleted, Revision: c.Revision}
		if !c.LostDeleted {
			mc.LostValue = append([]byte{}, c.LostValue...)
		}
		r.Conflicts = append(r.Conflicts, mc)
	}
	for _, m := range p.Members {
		r.Members = append(r.Members, memberFromPB(m, false))
	}
	return nil
}
