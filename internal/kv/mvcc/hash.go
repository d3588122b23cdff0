package mvcc

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2"
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

// Hash is etcd's deprecated Maintenance.Hash: CRC-32C over every revision record the store
// holds (each record's Pebble key, which carries its revision, and its value), history and
// deletions included, up to the current revision, which it returns with the hash. A store
// hashes the same until it is written to or compacted, also across restarts, and so does a copy
// restored from its snapshot. Members of a cluster hash differently even with the same data,
// as each numbers revisions itself: HashKV is the hash to compare replicas with.
func (s *Store) Hash(ctx context.Context) (hash uint32, rev int64, err error) {
	// Every record up to the visible revision is in Pebble before that revision is published,
	// and a Pebble iterator reads one point in time: the records above rev (not yet durable,
	// or written after it) are left out by the bound, so the hash is that of revision rev. A
	// compaction running meanwhile deletes records in chunks: the hash then shows the chunks
	// deleted so far, as etcd's shows its backend mid-compaction.
	rev = s.visible.Load()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRev}, UpperBound: revKey(nil, rev+1, 0)})
	if err != nil {
		return 0, 0, fmt.Errorf("hash: %w", err)
	}
	defer it.Close()
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var buf [binary.MaxVarintLen64]byte
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		if isChangeKey(it.Key()) {
			// Change headers are the member's log, not its data (their ids, times and
			// revisions differ between members holding the same data).
			continue
		}
		// Revision keys have a fixed length; the value's length keeps one record's bytes
		// from running into the next's.
		h.Write(it.Key())
		v := it.Value()
		h.Write(binary.AppendUvarint(buf[:0], uint64(len(v))))
		h.Write(v)
	}
	if err := it.Error(); err != nil {
		return 0, 0, fmt.Errorf("hash: %w", err)
	}
	return h.Sum32(), rev, nil
}
