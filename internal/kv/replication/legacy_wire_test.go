// The hand-written protowire codec that members up to commit 3fb7822 ran (its wire.go), kept
// verbatim but for its function names as the reference for mixed-version clusters: tests decode
// its output with the generated code and the generated code's output with it, and the wire
// benchmark measures it as "hand". Nothing outside tests uses it.

package replication

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// legacyMaxWireItems bounds repeated fields on decode, so a corrupt or hostile message cannot make a
// member allocate without limit.
const legacyMaxWireItems = 1 << 20

func legacyAppendMember(b []byte, num protowire.Number, m *Member) []byte {
	var mb []byte
	mb = protowire.AppendTag(mb, 1, protowire.VarintType)
	mb = protowire.AppendVarint(mb, m.ID)
	mb = legacyAppendString(mb, 2, m.Name)
	for _, u := range m.PeerURLs {
		mb = legacyAppendString(mb, 3, u)
	}
	for _, u := range m.ClientURLs {
		mb = legacyAppendString(mb, 4, u)
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, mb)
}

func legacyAppendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func legacyAppendVV(b []byte, num protowire.Number, vv mvcc.VersionVector) []byte {
	for _, o := range slices.Sorted(maps.Keys(vv)) {
		var eb []byte
		eb = protowire.AppendTag(eb, 1, protowire.VarintType)
		eb = protowire.AppendVarint(eb, o)
		eb = protowire.AppendTag(eb, 2, protowire.VarintType)
		eb = protowire.AppendVarint(eb, vv[o])
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, eb)
	}
	return b
}

func legacyAppendChange(b []byte, num protowire.Number, c *mvcc.Change) []byte {
	var cb []byte
	cb = protowire.AppendTag(cb, 1, protowire.VarintType)
	cb = protowire.AppendVarint(cb, c.ID.Origin)
	cb = protowire.AppendTag(cb, 2, protowire.VarintType)
	cb = protowire.AppendVarint(cb, c.ID.Seq)
	cb = protowire.AppendTag(cb, 3, protowire.VarintType)
	cb = protowire.AppendVarint(cb, uint64(c.Time.Wall))
	cb = protowire.AppendTag(cb, 4, protowire.VarintType)
	cb = protowire.AppendVarint(cb, uint64(c.Time.Logical))
	cb = protowire.AppendTag(cb, 5, protowire.BytesType)
	cb = protowire.AppendBytes(cb, c.Hash[:])
	for _, op := range c.Ops {
		var ob []byte
		if op.Delete {
			ob = protowire.AppendTag(ob, 1, protowire.VarintType)
			ob = protowire.AppendVarint(ob, 1)
		}
		ob = protowire.AppendTag(ob, 2, protowire.BytesType)
		ob = protowire.AppendBytes(ob, op.Key)
		if len(op.Value) > 0 {
			ob = protowire.AppendTag(ob, 3, protowire.BytesType)
			ob = protowire.AppendBytes(ob, op.Value)
		}
		if op.Lease != 0 {
			ob = protowire.AppendTag(ob, 4, protowire.VarintType)
			ob = protowire.AppendVarint(ob, uint64(op.Lease))
		}
		cb = protowire.AppendTag(cb, 6, protowire.BytesType)
		cb = protowire.AppendBytes(cb, ob)
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, cb)
}

func legacyMarshalSyncRequest(r *SyncRequest) ([]byte, error) {
	b := legacyAppendMember(nil, 1, &r.Caller)
	b = legacyAppendVV(b, 2, r.Have)
	if r.ClusterToken != "" {
		b = legacyAppendString(b, 3, r.ClusterToken)
	}
	for _, id := range r.Direct {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, id)
	}
	return b, nil
}

func legacyMarshalSyncBatch(m *SyncBatch) ([]byte, error) {
	var b []byte
	for i := range m.Changes {
		b = legacyAppendChange(b, 1, &m.Changes[i])
	}
	b = legacyAppendVV(b, 2, m.Have)
	b = legacyAppendMember(b, 3, &m.Sender)
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(m.SentNano))
	for i := range m.Members {
		b = legacyAppendMember(b, 5, &m.Members[i])
	}
	b = legacyAppendKnown(b, 6, m.Known)
	for i := range m.Snapshot {
		b = legacyAppendSnapshotEntry(b, 7, &m.Snapshot[i])
	}
	if m.SnapshotDone {
		b = protowire.AppendTag(b, 8, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
		b = legacyAppendVV(b, 9, m.SnapshotHave)
	}
	for _, id := range m.Removed {
		b = protowire.AppendTag(b, 10, protowire.VarintType)
		b = protowire.AppendVarint(b, id)
	}
	if m.FrontierWall != 0 {
		b = protowire.AppendTag(b, 11, protowire.VarintType)
		b = protowire.AppendVarint(b, m.FrontierSeq)
		b = protowire.AppendTag(b, 12, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(m.FrontierWall))
	}
	if m.CollectBefore != 0 {
		b = protowire.AppendTag(b, 13, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(m.CollectBefore))
	}
	for _, mb := range m.Bounds {
		var eb []byte
		for i, v := range []uint64{mb.ID, mb.FrontierSeq, uint64(mb.FrontierWall), uint64(mb.CollectBefore)} {
			if v != 0 {
				eb = protowire.AppendTag(eb, protowire.Number(i+1), protowire.VarintType)
				eb = protowire.AppendVarint(eb, v)
			}
		}
		b = protowire.AppendTag(b, 14, protowire.BytesType)
		b = protowire.AppendBytes(b, eb)
	}
	return b, nil
}

func legacyDecodeMemberBound(b []byte) (MemberBound, error) {
	var mb MemberBound
	err := legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
		if typ != protowire.VarintType {
			return nil
		}
		switch num {
		case 1:
			mb.ID = v
		case 2:
			mb.FrontierSeq = v
		case 3:
			mb.FrontierWall = int64(v)
		case 4:
			mb.CollectBefore = int64(v)
		}
		return nil
	})
	if err == nil && mb.ID == 0 {
		err = errors.New("member bound without id")
	}
	return mb, err
}

// fields walks the fields of a message, calling fn with each field's number, type, varint value
// (for varints) and bytes (for length-delimited legacyFields).
func legacyFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error) error {
	items := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var bs []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bs, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b) // unknown types are skipped
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if items++; items > legacyMaxWireItems {
			return errors.New("too many fields")
		}
		if err := fn(num, typ, v, bs); err != nil {
			return err
		}
	}
	return nil
}

// appendRepeatedVarint adds one occurrence of a repeated varint field to dst: a single value
// (unpacked, as this package sends them, so members running older code can read them) or a
// packed run of values, which proto3 encoders send by default and parsers must accept.
func legacyAppendRepeatedVarint(dst []uint64, typ protowire.Type, v uint64, packed []byte) ([]uint64, error) {
	switch typ {
	case protowire.VarintType:
		return append(dst, v), nil
	case protowire.BytesType:
		for len(packed) > 0 {
			x, n := protowire.ConsumeVarint(packed)
			if n < 0 {
				return dst, protowire.ParseError(n)
			}
			if len(dst) >= legacyMaxWireItems {
				return dst, errors.New("too many repeated values")
			}
			dst = append(dst, x)
			packed = packed[n:]
		}
	}
	return dst, nil
}

func legacyDecodeMember(b []byte, m *Member) error {
	return legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			m.ID = v
		case num == 2 && typ == protowire.BytesType:
			m.Name = string(bs)
		case num == 3 && typ == protowire.BytesType:
			m.PeerURLs = append(m.PeerURLs, string(bs))
		case num == 4 && typ == protowire.BytesType:
			m.ClientURLs = append(m.ClientURLs, string(bs))
		}
		return nil
	})
}

func legacyDecodeVVEntry(b []byte, vv mvcc.VersionVector) error {
	var origin, seq uint64
	if err := legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
		if typ == protowire.VarintType {
			switch num {
			case 1:
				origin = v
			case 2:
				seq = v
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if origin == 0 {
		return errors.New("version vector entry without origin")
	}
	vv[origin] = seq
	return nil
}

func legacyDecodeChange(b []byte, c *mvcc.Change) error {
	err := legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			c.ID.Origin = v
		case num == 2 && typ == protowire.VarintType:
			c.ID.Seq = v
		case num == 3 && typ == protowire.VarintType:
			c.Time.Wall = int64(v)
		case num == 4 && typ == protowire.VarintType:
			if v > 1<<32-1 {
				return fmt.Errorf("logical time %d out of range", v)
			}
			c.Time.Logical = uint32(v)
		case num == 5 && typ == protowire.BytesType:
			if len(bs) != len(c.Hash) {
				return fmt.Errorf("hash of %d bytes, want %d", len(bs), len(c.Hash))
			}
			copy(c.Hash[:], bs)
		case num == 6 && typ == protowire.BytesType:
			var op mvcc.Op
			if err := legacyFields(bs, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
				switch {
				case num == 1 && typ == protowire.VarintType:
					op.Delete = v != 0
				case num == 2 && typ == protowire.BytesType:
					op.Key = bytes.Clone(bs)
				case num == 3 && typ == protowire.BytesType:
					if len(bs) > 0 {
						op.Value = bytes.Clone(bs) // empty stays nil, as Marshal omits it
					}
				case num == 4 && typ == protowire.VarintType:
					op.Lease = int64(v)
				}
				return nil
			}); err != nil {
				return err
			}
			if len(op.Key) == 0 {
				return errors.New("op without key")
			}
			c.Ops = append(c.Ops, op)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if c.ID.Origin == 0 || c.ID.Seq == 0 {
		return fmt.Errorf("change id %v: origin and sequence must be non-zero", c.ID)
	}
	return nil
}

func legacyUnmarshalSyncRequest(b []byte, r *SyncRequest) error {
	*r = SyncRequest{Have: mvcc.VersionVector{}}
	return legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		if num == 4 {
			var err error
			r.Direct, err = legacyAppendRepeatedVarint(r.Direct, typ, v, bs)
			return err
		}
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			return legacyDecodeMember(bs, &r.Caller)
		case 2:
			return legacyDecodeVVEntry(bs, r.Have)
		case 3:
			r.ClusterToken = string(bs)
		}
		return nil
	})
}

func legacyUnmarshalSyncBatch(b []byte, m *SyncBatch) error {
	*m = SyncBatch{Have: mvcc.VersionVector{}}
	// Fields that only mean something with another are dropped without it, as the encoder
	// never sends them alone: a frontier is (frontier_seq, frontier_wall), carried when the wall
	// is set; snapshot_have is the vector of a finished snapshot (snapshot_done).
	defer func() {
		if m.FrontierWall == 0 {
			m.FrontierSeq = 0
		}
		if !m.SnapshotDone {
			m.SnapshotHave = nil
		}
	}()
	return legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			var c mvcc.Change
			if err := legacyDecodeChange(bs, &c); err != nil {
				return fmt.Errorf("change %d: %w", len(m.Changes), err)
			}
			m.Changes = append(m.Changes, c)
		case num == 2 && typ == protowire.BytesType:
			return legacyDecodeVVEntry(bs, m.Have)
		case num == 3 && typ == protowire.BytesType:
			return legacyDecodeMember(bs, &m.Sender)
		case num == 4 && typ == protowire.VarintType:
			m.SentNano = int64(v)
		case num == 5 && typ == protowire.BytesType:
			var mem Member
			if err := legacyDecodeMember(bs, &mem); err != nil {
				return err
			}
			m.Members = append(m.Members, mem)
		case num == 6 && typ == protowire.BytesType:
			if m.Known == nil {
				m.Known = map[uint64]mvcc.VersionVector{}
			}
			return legacyDecodeMemberHave(bs, m.Known)
		case num == 7 && typ == protowire.BytesType:
			var e mvcc.SnapshotEntry
			if err := legacyDecodeSnapshotEntry(bs, &e); err != nil {
				return fmt.Errorf("snapshot entry %d: %w", len(m.Snapshot), err)
			}
			m.Snapshot = append(m.Snapshot, e)
		case num == 8 && typ == protowire.VarintType:
			m.SnapshotDone = v != 0
		case num == 9 && typ == protowire.BytesType:
			if m.SnapshotHave == nil {
				m.SnapshotHave = mvcc.VersionVector{}
			}
			return legacyDecodeVVEntry(bs, m.SnapshotHave)
		case num == 10:
			var err error
			m.Removed, err = legacyAppendRepeatedVarint(m.Removed, typ, v, bs)
			return err
		case num == 11 && typ == protowire.VarintType:
			m.FrontierSeq = v
		case num == 12 && typ == protowire.VarintType:
			m.FrontierWall = int64(v)
		case num == 13 && typ == protowire.VarintType:
			m.CollectBefore = int64(v)
		case num == 14 && typ == protowire.BytesType:
			mb, err := legacyDecodeMemberBound(bs)
			if err != nil {
				return fmt.Errorf("member bound %d: %w", len(m.Bounds), err)
			}
			m.Bounds = append(m.Bounds, mb)
		}
		return nil
	})
}

func legacyAppendSnapshotEntry(b []byte, num protowire.Number, e *mvcc.SnapshotEntry) []byte {
	var eb []byte
	eb = protowire.AppendTag(eb, 1, protowire.BytesType)
	eb = protowire.AppendBytes(eb, e.Key)
	if len(e.Value) > 0 {
		eb = protowire.AppendTag(eb, 2, protowire.BytesType)
		eb = protowire.AppendBytes(eb, e.Value)
	}
	if e.Lease != 0 {
		eb = protowire.AppendTag(eb, 3, protowire.VarintType)
		eb = protowire.AppendVarint(eb, uint64(e.Lease))
	}
	if e.Deleted {
		eb = protowire.AppendTag(eb, 4, protowire.VarintType)
		eb = protowire.AppendVarint(eb, 1)
	}
	eb = protowire.AppendTag(eb, 5, protowire.VarintType)
	eb = protowire.AppendVarint(eb, uint64(e.Stamp.Time.Wall))
	eb = protowire.AppendTag(eb, 6, protowire.VarintType)
	eb = protowire.AppendVarint(eb, uint64(e.Stamp.Time.Logical))
	eb = protowire.AppendTag(eb, 7, protowire.VarintType)
	eb = protowire.AppendVarint(eb, e.Stamp.Origin)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, eb)
}

func legacyDecodeSnapshotEntry(b []byte, e *mvcc.SnapshotEntry) error {
	err := legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			e.Key = bytes.Clone(bs)
		case num == 2 && typ == protowire.BytesType:
			if len(bs) > 0 {
				e.Value = bytes.Clone(bs)
			}
		case num == 3 && typ == protowire.VarintType:
			e.Lease = int64(v)
		case num == 4 && typ == protowire.VarintType:
			e.Deleted = v != 0
		case num == 5 && typ == protowire.VarintType:
			e.Stamp.Time.Wall = int64(v)
		case num == 6 && typ == protowire.VarintType:
			if v > 1<<32-1 {
				return fmt.Errorf("logical time %d out of range", v)
			}
			e.Stamp.Time.Logical = uint32(v)
		case num == 7 && typ == protowire.VarintType:
			e.Stamp.Origin = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(e.Key) == 0 || e.Stamp.Origin == 0 {
		return errors.New("a snapshot entry needs a key and a stamp with an origin")
	}
	return nil
}

func legacyAppendKnown(b []byte, num protowire.Number, known map[uint64]mvcc.VersionVector) []byte {
	for _, id := range slices.Sorted(maps.Keys(known)) {
		var mb []byte
		mb = protowire.AppendTag(mb, 1, protowire.VarintType)
		mb = protowire.AppendVarint(mb, id)
		mb = legacyAppendVV(mb, 2, known[id])
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, mb)
	}
	return b
}

func legacyDecodeMemberHave(b []byte, known map[uint64]mvcc.VersionVector) error {
	var id uint64
	vv := mvcc.VersionVector{}
	if err := legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			id = v
		case num == 2 && typ == protowire.BytesType:
			return legacyDecodeVVEntry(bs, vv)
		}
		return nil
	}); err != nil {
		return err
	}
	if id == 0 {
		return errors.New("member entry without id")
	}
	known[id] = vv
	return nil
}

func legacyMarshalSyncMessage(m *SyncMessage) ([]byte, error) {
	var b []byte
	if m.Request != nil {
		rb, _ := legacyMarshalSyncRequest(m.Request)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, rb)
	}
	if m.Ack != nil {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, legacyAppendVV(nil, 1, m.Ack))
	}
	return b, nil
}

func legacyUnmarshalSyncMessage(b []byte, m *SyncMessage) error {
	*m = SyncMessage{}
	return legacyFields(b, func(num protowire.Number, typ protowire.Type, _ uint64, bs []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			m.Request = new(SyncRequest)
			return legacyUnmarshalSyncRequest(bs, m.Request)
		case 2:
			m.Ack = mvcc.VersionVector{}
			return legacyFields(bs, func(num protowire.Number, typ protowire.Type, _ uint64, eb []byte) error {
				if num == 1 && typ == protowire.BytesType {
					return legacyDecodeVVEntry(eb, m.Ack)
				}
				return nil
			})
		}
		return nil
	})
}

func legacyMarshalHoldersRequest(r *HoldersRequest) ([]byte, error) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(r.Revision))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, r.ID.Origin)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	return protowire.AppendVarint(b, r.ID.Seq), nil
}

func legacyUnmarshalHoldersRequest(b []byte, r *HoldersRequest) error {
	*r = HoldersRequest{}
	return legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
		if typ == protowire.VarintType {
			switch num {
			case 1:
				r.Revision = int64(v)
			case 2:
				r.ID.Origin = v
			case 3:
				r.ID.Seq = v
			}
		}
		return nil
	})
}

func legacyMarshalHoldersResponse(r *HoldersResponse) ([]byte, error) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, r.ID.Origin)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, r.ID.Seq)
	for i := range r.Holders {
		h := &r.Holders[i]
		hb := legacyAppendMember(nil, 1, &h.Member)
		if h.Has {
			hb = protowire.AppendTag(hb, 2, protowire.VarintType)
			hb = protowire.AppendVarint(hb, 1)
		}
		if h.LastContact != 0 {
			hb = protowire.AppendTag(hb, 3, protowire.VarintType)
			hb = protowire.AppendVarint(hb, uint64(h.LastContact))
		}
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, hb)
	}
	return b, nil
}

func legacyUnmarshalHoldersResponse(b []byte, r *HoldersResponse) error {
	*r = HoldersResponse{}
	return legacyFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			r.ID.Origin = v
		case num == 2 && typ == protowire.VarintType:
			r.ID.Seq = v
		case num == 3 && typ == protowire.BytesType:
			var h Holder
			if err := legacyFields(bs, func(num protowire.Number, typ protowire.Type, v uint64, mb []byte) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					return legacyDecodeMember(mb, &h.Member)
				case num == 2 && typ == protowire.VarintType:
					h.Has = v != 0
				case num == 3 && typ == protowire.VarintType:
					h.LastContact = int64(v)
				}
				return nil
			}); err != nil {
				return err
			}
			r.Holders = append(r.Holders, h)
		}
		return nil
	})
}
