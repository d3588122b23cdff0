package kvclient

import (
	"bytes"
	"strings"

	pb "github.com/continuum-project/continuum/internal/kv/replication/replicationpb"
)

// The Status service's messages (replication.proto), encoded by the code generated from the
// .proto (replicationpb). They carry plain copies of the member's values: Timestamp, Stamp,
// ChangeID and Conflict have the fields of package mvcc's types of the same names.

// Timestamp is a hybrid logical clock reading (mvcc.Timestamp).
type Timestamp struct {
	Wall    int64
	Logical uint32
}

// Stamp orders writes to one key: the HLC time, then the origin member (mvcc.Stamp).
type Stamp struct {
	Time   Timestamp
	Origin uint64
}

// Less reports whether a orders before b (the greater stamp wins a conflict).
func (a Stamp) Less(b Stamp) bool {
	if a.Time != b.Time {
		return a.Time.Wall < b.Time.Wall || (a.Time.Wall == b.Time.Wall && a.Time.Logical < b.Time.Logical)
	}
	return a.Origin < b.Origin
}

// ChangeID names a change: the member that made it and its sequence there (mvcc.ChangeID).
type ChangeID struct {
	Origin uint64
	Seq    uint64
}

// Conflict is one write that lost to a concurrent one (mvcc.Conflict).
type Conflict struct {
	Key []byte
	// Kept is the stamp of what the key keeps (KeptDeleted: a deletion); Lost the stamp of the
	// op that lost, whose origin (Lost.Origin) made the change Change.
	Kept        Stamp
	KeptDeleted bool
	Lost        Stamp
	Change      ChangeID
	// LostValue is the value the lost op would have written (nil with LostDeleted).
	LostValue   []byte
	LostDeleted bool
	// Revision is the local revision at which the losing change was applied (and recorded).
	Revision int64
}

// Member describes a cluster member as peers learn it.
type Member struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
}

// ConflictsRequest asks a member for its conflict log, for keys under Prefix.
type ConflictsRequest struct {
	Prefix []byte
}

// ConflictsResponse is a member's conflict log, oldest first, with the members it knows (to
// name the origins of the stamps).
type ConflictsResponse struct {
	MemberID  uint64
	Total     uint64 // recorded since the member started, those the bounded log dropped included
	Conflicts []Conflict
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

// HoldersRequest asks which members hold a change (by revision of the member asked, or by id).
type HoldersRequest struct {
	Revision int64
	ID       ChangeID
}

// Holder is one member's part of a HoldersResponse.
type Holder struct {
	Member      Member
	Has         bool
	LastContact int64 // unix nanoseconds; 0: the member answering, or never heard from
}

// HoldersResponse answers a HoldersRequest.
type HoldersResponse struct {
	ID      ChangeID
	Holders []Holder
}

// Decoding uses the "unsafe" unmarshal (bytes and strings alias b): gRPC reuses b after
// Unmarshal returns, so everything kept is copied.

// Marshal encodes r.
func (r *ConflictsRequest) Marshal() ([]byte, error) {
	return (&pb.ConflictsRequest{Prefix: r.Prefix}).MarshalVT()
}

// Unmarshal decodes r.
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
		p.Members = append(p.Members, MemberToPB(&r.Members[i], new(pb.Member)))
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
		mc := Conflict{Key: bytes.Clone(c.Key),
			Kept:        Stamp{Origin: c.KeptOrigin, Time: Timestamp{Wall: c.KeptWall, Logical: c.KeptLogical}},
			KeptDeleted: c.KeptDeleted,
			Lost:        Stamp{Origin: c.LostOrigin, Time: Timestamp{Wall: c.LostWall, Logical: c.LostLogical}},
			Change:      ChangeID{Origin: c.LostOrigin, Seq: c.LostSeq},
			LostDeleted: c.LostDeleted, Revision: c.Revision}
		if !c.LostDeleted {
			mc.LostValue = append([]byte{}, c.LostValue...)
		}
		r.Conflicts = append(r.Conflicts, mc)
	}
	for _, m := range p.Members {
		r.Members = append(r.Members, MemberFromPB(m, false))
	}
	return nil
}

// Marshal encodes r.
func (r *HoldersRequest) Marshal() ([]byte, error) {
	return (&pb.HoldersRequest{Revision: r.Revision, Origin: r.ID.Origin, Seq: r.ID.Seq}).MarshalVT()
}

// Unmarshal decodes r.
func (r *HoldersRequest) Unmarshal(b []byte) error {
	p := pb.HoldersRequestFromVTPool()
	defer p.ReturnToVTPool()
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	*r = HoldersRequest{Revision: p.Revision, ID: ChangeID{Origin: p.Origin, Seq: p.Seq}}
	return nil
}

// Marshal encodes r.
func (r *HoldersResponse) Marshal() ([]byte, error) {
	p := &pb.HoldersResponse{Origin: r.ID.Origin, Seq: r.ID.Seq}
	if len(r.Holders) > 0 {
		hs := make([]pb.Holder, len(r.Holders))
		ms := make([]pb.Member, len(r.Holders))
		p.Holders = make([]*pb.Holder, len(r.Holders))
		for i := range r.Holders {
			h := &r.Holders[i]
			hs[i].Member, hs[i].Has, hs[i].LastContactUnixNano = MemberToPB(&h.Member, &ms[i]), h.Has, h.LastContact
			p.Holders[i] = &hs[i]
		}
	}
	return p.MarshalVT()
}

// Unmarshal decodes r.
func (r *HoldersResponse) Unmarshal(b []byte) error {
	p := pb.HoldersResponseFromVTPool()
	defer p.ReturnToVTPool()
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	*r = HoldersResponse{ID: ChangeID{Origin: p.Origin, Seq: p.Seq}}
	if len(p.Holders) > 0 {
		r.Holders = make([]Holder, len(p.Holders))
		for i, h := range p.Holders {
			r.Holders[i] = Holder{Member: MemberFromPB(h.Member, false), Has: h.Has, LastContact: h.LastContactUnixNano}
		}
	}
	return nil
}

// MemberToPB fills p from m (sharing m's strings) and returns it.
func MemberToPB(m *Member, p *pb.Member) *pb.Member {
	p.Id, p.Name, p.PeerUrls, p.ClientUrls = m.ID, m.Name, m.PeerURLs, m.ClientURLs
	return p
}

// MemberFromPB converts p; owned says whether p's strings are its own (a safe decode) or alias a
// buffer that will be reused (then they are copied).
func MemberFromPB(p *pb.Member, owned bool) Member {
	if p == nil {
		return Member{}
	}
	return Member{ID: p.Id, Name: OwnString(p.Name, owned), PeerURLs: OwnStrings(p.PeerUrls, owned), ClientURLs: OwnStrings(p.ClientUrls, owned)}
}

// OwnString is s, copied unless owned.
func OwnString(s string, owned bool) string {
	if owned {
		return s
	}
	return strings.Clone(s)
}

// OwnStrings is ss, each copied unless owned.
func OwnStrings(ss []string, owned bool) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = OwnString(s, owned)
	}
	return out
}
