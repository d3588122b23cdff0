package mvcc

import (
	"encoding/binary"
	"hash/crc32"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// HashKV hashes the key-value pairs live at revision rev (0: the current one): CRC-32C over
// each key, value and lease in key order. Unlike etcd's HashKV it leaves revisions and history
// out, so that two replicas holding the same data hash the same even though each numbers
// revisions itself (replication compares replicas with it). It returns the hash, the revision
// hashed and the compaction revision.
func (s *Store) HashKV(rev int64) (hash uint32, hashRev, compactRev int64, err error) {
	v := s.readView()
	if rev <= 0 {
		rev = v.rev
	}
	if rev > v.rev {
		return 0, 0, 0, ErrFutureRev
	}
	compactRev = s.compactRev.Load()
	if rev < compactRev {
		return 0, 0, 0, ErrCompacted
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	type hit struct {
		key []byte
		e   entry
	}
	var hits []hit
	s.ix.visit([]byte{0}, []byte{}, rev, func(k []byte, e entry) bool {
		hits = append(hits, hit{k, e})
		return true
	})
	var buf [binary.MaxVarintLen64]byte
	var kv mvccpb.KeyValue
	for _, x := range hits {
		if err := s.readRecord(x.e.rev, &kv); err != nil {
			return 0, 0, 0, err
		}
		h.Write(binary.AppendUvarint(buf[:0], uint64(len(kv.Key))))
		h.Write(kv.Key)
		h.Write(binary.AppendUvarint(buf[:0], uint64(len(kv.Value))))
		h.Write(kv.Value)
		h.Write(binary.AppendVarint(buf[:0], kv.Lease))
	}
	return h.Sum32(), rev, compactRev, nil
}
