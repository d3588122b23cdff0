package mvcc

import (
	"encoding/binary"
	"fmt"
)

// Stamp orders versions of one key across members: last writer wins by the change's HLC time,
// ties (two members reading the same HLC value, which HLC allows) broken by the origin member id.
// Every version and every deletion carries the stamp of the change that made it, and a member
// applies an op from a peer only if its stamp is greater than the key's current stamp, so all
// members that hold the same set of changes hold the same state, whatever the order they
// received them in.
type Stamp struct {
	Time   Timestamp
	Origin uint64
}

// Less reports whether a orders before b.
func (a Stamp) Less(b Stamp) bool {
	if a.Time != b.Time {
		return a.Time.Less(b.Time)
	}
	return a.Origin < b.Origin
}

// IsZero reports whether a is the zero stamp (a version written before replication existed).
func (a Stamp) IsZero() bool { return a == Stamp{} }

func (a Stamp) String() string { return fmt.Sprintf("%s@%016x", a.Time, a.Origin) }

const stampLen = 8 + 4 + 8

func encodeStamp(b []byte, st Stamp) {
	binary.BigEndian.PutUint64(b[0:], uint64(st.Time.Wall))
	binary.BigEndian.PutUint32(b[8:], st.Time.Logical)
	binary.BigEndian.PutUint64(b[12:], st.Origin)
}

func decodeStamp(b []byte) Stamp {
	return Stamp{
		Time:   Timestamp{Wall: int64(binary.BigEndian.Uint64(b[0:])), Logical: binary.BigEndian.Uint32(b[8:])},
		Origin: binary.BigEndian.Uint64(b[12:]),
	}
}

// stampOf is the stamp of change c's ops.
func stampOf(c *Change) Stamp { return Stamp{Time: c.Time, Origin: c.ID.Origin} }
