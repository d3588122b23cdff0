package mvcc

import "encoding/binary"

// Pebble key space (format 2). Big-endian numbers make Pebble's byte order the numeric order.
//
//	r <rev:8>          -> change header (change.go): the change applied at rev, whose ops follow
//	r <rev:8> <sub:8>  -> revision record: 'p' or 'd' + mvccpb.KeyValue; sub numbers a change's
//	                      ops from 0, so iterating r-records yields events in revision order
//	s <origin:8> <seq:8> -> the local revision a change was applied at (replication: where to
//	                      start sending a peer what it lacks; the last per origin is the
//	                      version vector)
//	l <lease id:8>     -> lease record
//	m <name>           -> metadata (member id, compaction progress, format)
//
// Why this order: everything a commit writes is one run of adjacent keys at the end of the
// r-space, followed by small s-records. A memtable flush then makes L0 files that overlap only
// the newest revisions and the origin index, so moving them down rewrites little. Format 1
// kept headers under 'c' and the origin index under 'o', both below 'r': every flushed file
// spanned from the newest header to the newest record, i.e. every revision record in the
// store, and each L0 compaction rewrote nearly the whole store (docs/kv.md). Open migrates a
// format-1 store (migrate.go).
const (
	prefixRev    = 'r'
	prefixLease  = 'l'
	prefixMeta   = 'm'
	prefixOrigin = 's'
	// Format 1's prefixes, read only by the migration.
	prefixChangeV1 = 'c'
	prefixOriginV1 = 'o'
)

// storeFormat is the key layout this code writes; metaFormat records a store's.
const storeFormat = 2

const (
	recPut           = 'p'
	recDelete        = 'd'
	recPutStamped    = 'P'
	recDeleteStamped = 'D'
	// recDeleteAbsent is a peer's deletion of a key that had no live version here: no version,
	// no event, only the stamp (which must keep winning over older puts still to arrive) and
	// the op to forward.
	recDeleteAbsent = 'X'
)

var (
	metaMember          = []byte("mmember")
	metaCompactSched    = []byte("mcompact-scheduled")
	metaCompactFinished = []byte("mcompact-finished")
	metaFormat          = []byte("mformat")
)

func revKey(dst []byte, rev, sub int64) []byte {
	dst = append(dst, prefixRev)
	dst = binary.BigEndian.AppendUint64(dst, uint64(rev))
	return binary.BigEndian.AppendUint64(dst, uint64(sub))
}

func parseRevKey(k []byte) (rev, sub int64, ok bool) {
	if len(k) != 17 || k[0] != prefixRev {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[1:])), int64(binary.BigEndian.Uint64(k[9:])), true
}

func changeKey(rev int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixRev}, uint64(rev))
}

// isChangeKey reports whether k is a change header's key (as opposed to a revision record's,
// which shares its prefix and is 8 bytes longer).
func isChangeKey(k []byte) bool { return len(k) == 9 && k[0] == prefixRev }

func leaseKey(id int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixLease}, uint64(id))
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func originKey(id ChangeID) []byte {
	k := binary.BigEndian.AppendUint64([]byte{prefixOrigin}, id.Origin)
	return binary.BigEndian.AppendUint64(k, id.Seq)
}

func parseOriginKey(k []byte) (ChangeID, bool) {
	if len(k) != 17 || k[0] != prefixOrigin {
		return ChangeID{}, false
	}
	return ChangeID{Origin: binary.BigEndian.Uint64(k[1:]), Seq: binary.BigEndian.Uint64(k[9:])}, true
}

func decodeU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
