package mvcc

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// SnapshotEntry is one key of a snapshot: its latest version (Value, Lease) or, with Deleted,
// the deletion that holds its stamp; Stamp is the last-writer-wins stamp either carries.
type SnapshotEntry struct {
	Key     []byte
	Value   []byte
	Lease   int64
	Deleted bool
	Stamp   Stamp
}

// Snapshot streams this member's current state to fn, key by key, and returns the version vector
// the state reflects exactly (every change within it and none beyond) and the revision it was
// taken at (the log after it holds every later change). A member whose peers no
// longer hold the changes it lacks in their logs (a new member, or one away for long) merges a
// snapshot instead (InstallSnapshot), then takes changes from the log after it. Writes are held
// only while the key list and the vector are captured; values are read afterwards.
func (s *Store) Snapshot(ctx context.Context, fn func(SnapshotEntry) error) (VersionVector, int64, error) {
	type item struct {
		key   []byte
		e     entry
		live  bool
		stamp Stamp
	}
	var items []item
	s.writeMu.Lock()
	vv := s.vv.Clone()
	rev := s.lastRev.Load()
	s.ix.ascendLatest(func(key []byte, st Stamp, e entry, has bool) bool {
		it := item{key: key, stamp: st, e: e, live: has && !e.tomb}
		if it.live || !it.stamp.IsZero() {
			items = append(items, it)
		}
		return true
	})
	s.writeMu.Unlock()
	// Versions written before rev may not be durable yet: wait, so that the snapshot never
	// hands out what a crash here could still lose.
	if err := s.waitVisible(ctx, rev); err != nil {
		return nil, 0, err
	}
	var kv mvccpb.KeyValue
	for _, it := range items {
		e := SnapshotEntry{Key: it.key, Stamp: it.stamp, Deleted: !it.live}
		if it.live {
			if err := s.readRecord(it.e.rev, &kv); err != nil {
				// Superseded and compacted since the capture: the snapshot is stale, and
				// the caller retries.
				return nil, 0, fmt.Errorf("snapshot: key %q: %w", it.key, err)
			}
			e.Value, e.Lease = kv.Value, kv.Lease
		}
		if err := fn(e); err != nil {
			return nil, 0, err
		}
	}
	return vv, rev, nil
}

// InstallSnapshot merges part of a peer's snapshot: each entry wins over this member's version
// of its key only if its stamp is greater, exactly as the changes it summarises would have; the
// winners are applied at one new revision, as ordinary events. Merging is idempotent, so a
// snapshot cut short can be merged again from the start. After the last part, RaiseVersionVector
// records that this member now holds the snapshot's changes.
func (s *Store) InstallSnapshot(ctx context.Context, entries []SnapshotEntry) error {
	if len(entries) == 0 {
		return nil
	}
	_, err := s.write(ctx, func(w *writeTxn) error {
		w.snapshot = true
		for _, e := range entries {
			if len(e.Key) == 0 {
				return errors.New("mvcc: snapshot entry without a key")
			}
			if !s.ix.stamp(e.Key).Less(e.Stamp) || s.collectible(e.Stamp) {
				// Older than what is here, or stamped before the collect bound: its change
				// is held here already (and if the key's deletion was collected, it won).
				continue
			}
			s.clock.Observe(e.Stamp.Time)
			w.stamp = e.Stamp
			switch cur, live := s.ix.get(e.Key, w.rev); {
			case !e.Deleted:
				w.put(e.Key, e.Value, e.Lease)
			case live:
				w.tombstone(e.Key, cur.lease)
			default:
				w.deleteAbsent(e.Key)
			}
		}
		return nil
	})
	return err
}

// RaiseVersionVector records, durably, that this member holds every change within vv (a
// merged snapshot's). Those changes are not in its log, so LogStart reports ErrLogTruncated
// to a peer that needs one of them from here.
func (s *Store) RaiseVersionVector(ctx context.Context, vv VersionVector) error {
	_, err := s.write(ctx, func(w *writeTxn) error {
		for o, seq := range vv {
			if s.vv[o] >= seq {
				continue
			}
			// Revision 0 in the o-record: held, but through a snapshot, not in the log.
			w.sideWrite(originKey(ChangeID{Origin: o, Seq: seq}), u64(0))
			w.raised = append(w.raised, ChangeID{Origin: o, Seq: seq})
			s.vv[o] = seq
		}
		return nil
	})
	return err
}
