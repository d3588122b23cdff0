package replication

import (
	"github.com/continuum-project/continuum/internal/kv/mvcc"
	pb "github.com/continuum-project/continuum/internal/kv/replication/replicationpb"
)

// The messages of replication.proto as the replication code works with them, on mvcc's types.
// They implement Marshal and Unmarshal, which the gRPC codecs (dial.go's, the kv server's) use:
// the code generated from the .proto (replicationpb, `make proto`) encodes and decodes them, by
// way of pbconvert.go. The generated code was chosen over the hand-written protowire code that
// preceded it because it was faster on the replication path, conversion included
// (docs/benchmarks/kv-replication-wire.md); the wire format is unchanged.

// SyncRequest opens a Sync stream.
type SyncRequest struct {
	Caller       Member
	Have         mvcc.VersionVector
	ClusterToken string
	// Direct are the members whose own changes the caller gets from them directly.
	Direct []uint64
}

// SyncBatch is one message of a Sync stream.
type SyncBatch struct {
	Changes  []mvcc.Change
	Have     mvcc.VersionVector
	Sender   Member
	SentNano int64
	Members  []Member
	// Known is what the sender knows each member holds (its own entry included).
	Known map[uint64]mvcc.VersionVector
	// Removed are the members removed from the cluster the sender knows of (first batch and
	// heartbeats), so a MemberRemove spreads like an addition.
	Removed []uint64
	// The sender's frontier and collect bound (mvcc/frontier.go), on heartbeats: every change of
	// its own stamped before FrontierWall has a sequence <= FrontierSeq; it holds every change
	// stamped before CollectBefore. 0: not carried.
	FrontierSeq   uint64
	FrontierWall  int64
	CollectBefore int64
	// Bounds relays the frontiers and collect bounds the sender knows of other members (on
	// heartbeats), so they reach members that do not hear from those directly.
	Bounds []MemberBound
	// State is the layer above's replicated state (Config.State), opaque here.
	State []byte
	// Snapshot transfer (see replication.proto).
	Snapshot     []mvcc.SnapshotEntry
	SnapshotDone bool
	SnapshotHave mvcc.VersionVector
}

// MemberBound is a member's frontier and collect bound (collect.go), as relayed by a peer.
type MemberBound struct {
	ID            uint64
	FrontierSeq   uint64
	FrontierWall  int64
	CollectBefore int64
}

// SyncMessage is what a caller sends on a Sync stream: the request first, then acks.
type SyncMessage struct {
	Request *SyncRequest
	Ack     mvcc.VersionVector // non-nil: an ack
}

// Decoding takes a generated message from its pool, decodes into it without copying (the
// "unsafe" unmarshal: bytes and strings alias b) and converts, copying whatever the result
// keeps; the generated message goes back to the pool. gRPC reuses b after Unmarshal returns, and
// the pool reuses the generated message, so nothing of either may outlive the call: fromPB with
// owned false copies it all.

// Marshal encodes r.
func (r *SyncRequest) Marshal() ([]byte, error) { return r.toPB().MarshalVT() }

// Unmarshal decodes r.
func (r *SyncRequest) Unmarshal(b []byte) error {
	p := pb.SyncRequestFromVTPool()
	defer p.ReturnToVTPool()
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	return r.fromPB(p, false)
}

// Marshal encodes m.
func (m *SyncBatch) Marshal() ([]byte, error) { return m.toPB().MarshalVT() }

// Unmarshal decodes m.
func (m *SyncBatch) Unmarshal(b []byte) error {
	p := pb.SyncBatchFromVTPool()
	defer p.ReturnToVTPool()
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	return m.fromPB(p, false)
}

// Marshal encodes m.
func (m *SyncMessage) Marshal() ([]byte, error) { return m.toPB().MarshalVT() }

// Unmarshal decodes m.
func (m *SyncMessage) Unmarshal(b []byte) error {
	p := pb.SyncMessageFromVTPool()
	defer p.ReturnToVTPool()
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return err
	}
	return m.fromPB(p, false)
}
