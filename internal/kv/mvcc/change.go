package mvcc

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// ChangeID identifies a change across all replicas: the member that made it and that member's
// sequence number for it (1, 2, 3, ... with no gaps per origin).
type ChangeID struct {
	Origin uint64
	Seq    uint64
}

func (id ChangeID) String() string { return fmt.Sprintf("%016x/%d", id.Origin, id.Seq) }

// Op is one key's effect within a change: a put of Value (attached to Lease, 0 for none) or a
// delete. A DeleteRange becomes one Op per deleted key, so a change states its effect, not the
// request that produced it: replicas merge per key without re-evaluating ranges.
type Op struct {
	Delete bool
	Key    []byte
	Value  []byte
	Lease  int64
}

// Change is the unit of replication: everything one write request (a Put, a DeleteRange or a
// whole Txn) changed, stamped with its global id and HLC time. Revision is local: the revision this
// member applied it at (replicas apply the same change at different revisions).
type Change struct {
	ID       ChangeID
	Time     Timestamp
	Revision int64
	Hash     [16]byte
	Ops      []Op
}

// ContentHash is the hash that identifies a change's content: SHA-256 (truncated to 128 bits) of
// its id, time and ops, so two replicas holding a change with the same id can verify they hold the
// same bytes, and anti-entropy can compare sets of changes by hash.
func ContentHash(id ChangeID, ts Timestamp, ops []Op) [16]byte {
	h := sha256.New()
	var buf [binary.MaxVarintLen64 * 4]byte
	n := binary.PutUvarint(buf[:], id.Origin)
	n += binary.PutUvarint(buf[n:], id.Seq)
	n += binary.PutVarint(buf[n:], ts.Wall)
	n += binary.PutUvarint(buf[n:], uint64(ts.Logical))
	h.Write(buf[:n])
	for _, op := range ops {
		n = 0
		if op.Delete {
			buf[0] = 'd'
		} else {
			buf[0] = 'p'
		}
		n = 1
		n += binary.PutUvarint(buf[n:], uint64(len(op.Key)))
		h.Write(buf[:n])
		h.Write(op.Key)
		n = binary.PutUvarint(buf[:], uint64(len(op.Value)))
		n += binary.PutVarint(buf[n:], op.Lease)
		h.Write(buf[:n])
		h.Write(op.Value)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	var out [16]byte
	copy(out[:], sum[:16])
	return out
}

// changeHeaderLen is the encoded size of a change header (the ops are stored as revision
// records, see keys.go).
const changeHeaderLen = 8 + 8 + 8 + 4 + 8 + 8 + 16

// encodeHeader encodes everything of c but its ops, plus the number of ops.
func encodeHeader(dst []byte, c *Change, nops int) []byte {
	var b [changeHeaderLen]byte
	binary.BigEndian.PutUint64(b[0:], c.ID.Origin)
	binary.BigEndian.PutUint64(b[8:], c.ID.Seq)
	binary.BigEndian.PutUint64(b[16:], uint64(c.Time.Wall))
	binary.BigEndian.PutUint32(b[24:], c.Time.Logical)
	binary.BigEndian.PutUint64(b[28:], uint64(c.Revision))
	binary.BigEndian.PutUint64(b[36:], uint64(nops))
	copy(b[44:], c.Hash[:])
	return append(dst, b[:]...)
}

func decodeHeader(b []byte) (c Change, nops int, err error) {
	if len(b) != changeHeaderLen {
		return c, 0, fmt.Errorf("change header: %d bytes, want %d", len(b), changeHeaderLen)
	}
	c.ID.Origin = binary.BigEndian.Uint64(b[0:])
	c.ID.Seq = binary.BigEndian.Uint64(b[8:])
	c.Time.Wall = int64(binary.BigEndian.Uint64(b[16:]))
	c.Time.Logical = binary.BigEndian.Uint32(b[24:])
	c.Revision = int64(binary.BigEndian.Uint64(b[28:]))
	nops = int(binary.BigEndian.Uint64(b[36:]))
	copy(c.Hash[:], b[44:])
	return c, nops, nil
}
