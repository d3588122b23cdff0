package replication

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
	pb "github.com/continuum-project/continuum/internal/kv/replication/replicationpb"
)

// Conversion between the messages the replication code works with (wire.go's types, built on
// mvcc's) and the code generated from replication.proto (replicationpb). Encoding converts, then
// the generated code marshals; decoding unmarshals, then converts and checks what the protocol
// requires and the .proto cannot say (non-zero ids, 16-byte hashes, keys).
//
// owned (fromPB's argument) says whether the generated message's bytes, strings and slices are
// its own, as after the safe unmarshal into a fresh message: then they are taken as they are.
// Otherwise (the pooled, aliasing decode of wire.go) everything kept is copied.
//
// The conversion keeps the encoding deterministic (version vectors and known members by
// ascending id) and sends the fields the hand-written encoder sent, with the same numbers and
// encodings (repeated varints unpacked), so members running either code read each other.
// Slices of the generated structs are allocated per batch, not per element: a batch of 1024
// changes costs a few allocations, not thousands.

func vvToPB(vv mvcc.VersionVector) []*pb.VersionVectorEntry {
	if len(vv) == 0 {
		return nil
	}
	es := make([]pb.VersionVectorEntry, len(vv))
	ps := make([]*pb.VersionVectorEntry, len(vv))
	for i, o := range slices.Sorted(maps.Keys(vv)) {
		es[i].Origin, es[i].Seq = o, vv[o]
		ps[i] = &es[i]
	}
	return ps
}

// vvFromPB adds es to vv.
func vvFromPB(vv mvcc.VersionVector, es []*pb.VersionVectorEntry) error {
	for _, e := range es {
		if e.Origin == 0 {
			return errors.New("version vector entry without origin")
		}
		vv[e.Origin] = e.Seq
	}
	return nil
}

func changesToPB(cs []mvcc.Change) []*pb.Change {
	if len(cs) == 0 {
		return nil
	}
	nops := 0
	for i := range cs {
		nops += len(cs[i].Ops)
	}
	pcs := make([]pb.Change, len(cs))
	pps := make([]*pb.Change, len(cs))
	ops := make([]pb.Op, nops)
	opps := make([]*pb.Op, nops)
	for i := range cs {
		c, p := &cs[i], &pcs[i]
		p.Origin, p.Seq, p.Wall, p.Logical = c.ID.Origin, c.ID.Seq, c.Time.Wall, c.Time.Logical
		p.Hash = c.Hash[:]
		p.Ops = opps[:len(c.Ops):len(c.Ops)]
		for j := range c.Ops {
			o := &ops[j]
			o.Delete, o.Key, o.Value, o.Lease = c.Ops[j].Delete, c.Ops[j].Key, c.Ops[j].Value, c.Ops[j].Lease
			p.Ops[j] = o
		}
		ops, opps = ops[len(c.Ops):], opps[len(c.Ops):]
		pps[i] = p
	}
	return pps
}

func changesFromPB(ps []*pb.Change, owned bool) ([]mvcc.Change, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	nops := 0
	for _, p := range ps {
		nops += len(p.Ops)
	}
	cs := make([]mvcc.Change, len(ps))
	ops := make([]mvcc.Op, nops)
	for i, p := range ps {
		c := &cs[i]
		c.ID = mvcc.ChangeID{Origin: p.Origin, Seq: p.Seq}
		c.Time = mvcc.Timestamp{Wall: p.Wall, Logical: p.Logical}
		if c.ID.Origin == 0 || c.ID.Seq == 0 {
			return nil, fmt.Errorf("change %d: change id %v: origin and sequence must be non-zero", i, c.ID)
		}
		switch len(p.Hash) {
		case 0: // absent: the zero hash, which proto3 does not tell from an empty one
		case len(c.Hash):
			copy(c.Hash[:], p.Hash)
		default:
			return nil, fmt.Errorf("change %d: hash of %d bytes, want %d", i, len(p.Hash), len(c.Hash))
		}
		if len(p.Ops) > 0 {
			c.Ops = ops[:len(p.Ops):len(p.Ops)]
			ops = ops[len(p.Ops):]
		}
		for j, po := range p.Ops {
			if len(po.Key) == 0 {
				return nil, fmt.Errorf("change %d: op without key", i)
			}
			c.Ops[j] = mvcc.Op{Delete: po.Delete, Key: own(po.Key, owned), Value: own(po.Value, owned), Lease: po.Lease}
		}
	}
	return cs, nil
}

// nilIfEmpty: an empty value decodes as nil, as the encoder omits it (both mean "empty").
// own returns s, or a copy of it unless owned; empty as nil, as the encoder omits empty fields
// (an empty value and none both mean "empty" to the store).
func own[T any](s []T, owned bool) []T {
	if len(s) == 0 {
		return nil
	}
	if owned {
		return s
	}
	return slices.Clone(s)
}

func snapshotToPB(es []mvcc.SnapshotEntry) []*pb.SnapshotEntry {
	if len(es) == 0 {
		return nil
	}
	ps := make([]pb.SnapshotEntry, len(es))
	pps := make([]*pb.SnapshotEntry, len(es))
	for i := range es {
		e, p := &es[i], &ps[i]
		p.Key, p.Value, p.Lease, p.Deleted = e.Key, e.Value, e.Lease, e.Deleted
		p.Wall, p.Logical, p.Origin = e.Stamp.Time.Wall, e.Stamp.Time.Logical, e.Stamp.Origin
		pps[i] = p
	}
	return pps
}

func snapshotFromPB(ps []*pb.SnapshotEntry, owned bool) ([]mvcc.SnapshotEntry, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	es := make([]mvcc.SnapshotEntry, len(ps))
	for i, p := range ps {
		if len(p.Key) == 0 || p.Origin == 0 {
			return nil, fmt.Errorf("snapshot entry %d: a snapshot entry needs a key and a stamp with an origin", i)
		}
		es[i] = mvcc.SnapshotEntry{Key: own(p.Key, owned), Value: own(p.Value, owned), Lease: p.Lease, Deleted: p.Deleted,
			Stamp: mvcc.Stamp{Time: mvcc.Timestamp{Wall: p.Wall, Logical: p.Logical}, Origin: p.Origin}}
	}
	return es, nil
}

func (m *SyncBatch) toPB() *pb.SyncBatch {
	p := &pb.SyncBatch{
		Changes:       changesToPB(m.Changes),
		Have:          vvToPB(m.Have),
		Sender:        kvclient.MemberToPB(&m.Sender, new(pb.Member)),
		SentUnixNano:  m.SentNano,
		Snapshot:      snapshotToPB(m.Snapshot),
		SnapshotDone:  m.SnapshotDone,
		Removed:       m.Removed,
		CollectBefore: m.CollectBefore,
	}
	if len(m.Members) > 0 {
		ms := make([]pb.Member, len(m.Members))
		p.Members = make([]*pb.Member, len(m.Members))
		for i := range m.Members {
			p.Members[i] = kvclient.MemberToPB(&m.Members[i], &ms[i])
		}
	}
	if len(m.Known) > 0 {
		ks := make([]pb.MemberHave, len(m.Known))
		p.Known = make([]*pb.MemberHave, len(m.Known))
		for i, id := range slices.Sorted(maps.Keys(m.Known)) {
			ks[i].MemberId, ks[i].Have = id, vvToPB(m.Known[id])
			p.Known[i] = &ks[i]
		}
	}
	if m.SnapshotDone { // a snapshot's vector means nothing before it is done
		p.SnapshotHave = vvToPB(m.SnapshotHave)
	}
	if m.FrontierWall != 0 { // a frontier is (seq, wall), carried when the wall is set
		p.FrontierSeq, p.FrontierWall = m.FrontierSeq, m.FrontierWall
	}
	if len(m.Bounds) > 0 {
		bs := make([]pb.MemberBound, len(m.Bounds))
		p.Bounds = make([]*pb.MemberBound, len(m.Bounds))
		for i, b := range m.Bounds {
			bs[i].MemberId, bs[i].FrontierSeq, bs[i].FrontierWall, bs[i].CollectBefore = b.ID, b.FrontierSeq, b.FrontierWall, b.CollectBefore
			p.Bounds[i] = &bs[i]
		}
	}
	p.State = m.State
	return p
}

func (m *SyncBatch) fromPB(p *pb.SyncBatch, owned bool) error {
	*m = SyncBatch{Have: mvcc.VersionVector{}, Sender: kvclient.MemberFromPB(p.Sender, owned), SentNano: p.SentUnixNano,
		Removed: own(p.Removed, owned), SnapshotDone: p.SnapshotDone, CollectBefore: p.CollectBefore}
	var err error
	if m.Changes, err = changesFromPB(p.Changes, owned); err != nil {
		return err
	}
	if err := vvFromPB(m.Have, p.Have); err != nil {
		return err
	}
	if len(p.Members) > 0 {
		m.Members = make([]Member, len(p.Members))
		for i, pm := range p.Members {
			m.Members[i] = kvclient.MemberFromPB(pm, owned)
		}
	}
	if len(p.Known) > 0 {
		m.Known = make(map[uint64]mvcc.VersionVector, len(p.Known))
		for _, k := range p.Known {
			if k.MemberId == 0 {
				return errors.New("member entry without id")
			}
			vv := mvcc.VersionVector{}
			if err := vvFromPB(vv, k.Have); err != nil {
				return err
			}
			m.Known[k.MemberId] = vv
		}
	}
	if m.Snapshot, err = snapshotFromPB(p.Snapshot, owned); err != nil {
		return err
	}
	// Fields that only mean something with another are dropped without it, as the encoder never
	// sends them alone.
	if p.SnapshotDone && len(p.SnapshotHave) > 0 {
		m.SnapshotHave = mvcc.VersionVector{}
		if err := vvFromPB(m.SnapshotHave, p.SnapshotHave); err != nil {
			return err
		}
	}
	if p.FrontierWall != 0 {
		m.FrontierSeq, m.FrontierWall = p.FrontierSeq, p.FrontierWall
	}
	if len(p.Bounds) > 0 {
		m.Bounds = make([]MemberBound, len(p.Bounds))
		for i, b := range p.Bounds {
			if b.MemberId == 0 {
				return fmt.Errorf("member bound %d: member bound without id", i)
			}
			m.Bounds[i] = MemberBound{ID: b.MemberId, FrontierSeq: b.FrontierSeq, FrontierWall: b.FrontierWall, CollectBefore: b.CollectBefore}
		}
	}
	if len(p.State) > 0 {
		// Copied: an unsafe unmarshal aliases the receive buffer, and the state outlives it.
		m.State = append([]byte(nil), p.State...)
	}
	return nil
}

func (r *SyncRequest) toPB() *pb.SyncRequest {
	return &pb.SyncRequest{Caller: kvclient.MemberToPB(&r.Caller, new(pb.Member)), Have: vvToPB(r.Have),
		ClusterToken: r.ClusterToken, Direct: r.Direct}
}

func (r *SyncRequest) fromPB(p *pb.SyncRequest, owned bool) error {
	*r = SyncRequest{Caller: kvclient.MemberFromPB(p.Caller, owned), Have: mvcc.VersionVector{}, ClusterToken: kvclient.OwnString(p.ClusterToken, owned),
		Direct: own(p.Direct, owned)}
	return vvFromPB(r.Have, p.Have)
}

func (m *SyncMessage) toPB() *pb.SyncMessage {
	var p pb.SyncMessage
	if m.Request != nil {
		p.Request = m.Request.toPB()
	}
	if m.Ack != nil {
		p.Ack = &pb.Ack{Have: vvToPB(m.Ack)}
	}
	return &p
}

func (m *SyncMessage) fromPB(p *pb.SyncMessage, owned bool) error {
	*m = SyncMessage{}
	if p.Request != nil {
		m.Request = new(SyncRequest)
		if err := m.Request.fromPB(p.Request, owned); err != nil {
			return err
		}
	}
	if p.Ack != nil {
		m.Ack = mvcc.VersionVector{}
		return vvFromPB(m.Ack, p.Ack.Have)
	}
	return nil
}
