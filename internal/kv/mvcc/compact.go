package mvcc

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// Compact discards the history before revision rev: reads below it fail with ErrCompacted from
// now on, and the superseded versions are deleted from the index and from Pebble in the
// background, in small chunks, so that compaction never stalls reads or writes. With physical,
// Compact returns once the versions are gone from Pebble (space is reclaimed by Pebble's own
// background compactions, or at once by Defragment).
func (s *Store) Compact(ctx context.Context, rev int64, physical bool) error {
	s.compactMu.Lock()
	if rev > s.lastRev.Load() {
		s.compactMu.Unlock()
		return ErrFutureRev
	}
	if rev <= s.compactRev.Load() {
		s.compactMu.Unlock()
		return ErrCompacted
	}
	if err := s.waitVisible(ctx, rev); err != nil {
		s.compactMu.Unlock()
		return err
	}
	// Persist the decision first: a restart must not serve the history this compaction
	// promised to discard (a client may rely on ErrCompacted), and redoes the deletion.
	if err := s.db.Set(metaCompactSched, u64(uint64(rev)), pebble.Sync); err != nil {
		s.compactMu.Unlock()
		return err
	}
	s.compactRev.Store(rev)
	prev := s.compactDone
	done := make(chan struct{})
	s.compactDone = done
	s.bg.Add(1)
	s.compactMu.Unlock()
	go func() {
		if prev != nil {
			<-prev // compactions run one after another, in revision order
		}
		s.compactIndex(rev, nil)
		s.compactBackend(rev, done)
	}()
	if !physical {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// compactIndex compacts the index at rev chunk by chunk and returns the versions kept at or
// below rev (nil keep: only compact).
func (s *Store) compactIndex(rev int64, keep map[revision]struct{}) {
	if keep == nil {
		keep = map[revision]struct{}{}
	}
	from := []byte{}
	for from != nil {
		from = s.ix.compactChunk(from, rev, s.cfg.CompactionBatch, keep, s.collectBefore.Load())
	}
}

// compactBackend deletes from Pebble the revision records at or below rev that the index no
// longer references, and the change headers below rev, then records the compaction as finished.
// It is idempotent, so a restart simply runs it again. It runs in the background (s.bg).
//
// A replicated store keeps the deletion records (a deletion must keep winning over older puts
// still to arrive) until they are stamped before the collect bound (frontier.go), and keeps the
// change log of every change that some member may still lack (see compactLog). Superseded puts
// go, which is safe to forward without (see ReadLog). Records are visited in revision order, so
// an older put of a key always goes before the deletion that followed it, even across a crash.
func (s *Store) compactBackend(rev int64, done chan struct{}) {
	defer s.bg.Done()
	defer close(done)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRev}, UpperBound: revKey(nil, rev+1, 0)})
	if err != nil {
		s.log.Error("compaction", "err", err)
		return
	}
	defer it.Close()
	s.vvMu.Lock()
	stable := s.stableVV.Clone()
	s.vvMu.Unlock()
	b := s.db.NewBatch()
	n := 0
	flush := func() bool {
		if n == 0 {
			return true
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			s.log.Error("compaction", "err", err)
			return false
		}
		b.Close()
		b = s.db.NewBatch()
		n = 0
		select {
		case <-s.closing:
			return false
		default:
			return true
		}
	}
	for it.First(); it.Valid(); it.Next() {
		r, sub, ok := parseRevKey(it.Key())
		if !ok {
			continue
		}
		kind, kv, st, err := decodeRecord(it.Value())
		if err != nil {
			continue
		}
		if kind == recPut && s.ix.has(kv.Key, revision{r, sub}) {
			continue
		}
		if kind == recPut && s.cfg.Replicated && !s.changeStable(r, stable) {
			// A superseded put of a change some member may still lack: forwarding the change
			// without it would be safe only if the newer write always arrived too, and it
			// may not (its member may be lost before it sends it), leaving a peer that holds
			// the change without its effect.
			continue
		}
		if kind != recPut && s.cfg.Replicated && !s.collectible(st) {
			continue
		}
		_ = b.Delete(it.Key(), nil)
		s.logical.Add(-int64(len(it.Key()) + len(it.Value())))
		n++
		if n >= s.cfg.CompactionBatch && !flush() {
			b.Close()
			return
		}
	}
	if rev > 1 {
		n += s.compactLog(b, rev)
	}
	_ = b.Set(metaCompactFinished, binary.BigEndian.AppendUint64(nil, uint64(rev)), nil)
	n++
	if err := b.Commit(pebble.Sync); err != nil {
		s.log.Error("compaction", "err", err)
	}
	b.Close()
	s.log.Debug("compacted", "revision", rev)
}

// compactLog adds to b the deletion of the change log below rev: the headers and o-records of
// changes that no peer can need any more — every change on a single member; on a replicated
// one, the changes every member is known to hold (SetStable) — except the last o-record of each
// origin, which recovery rebuilds the version vector from. It returns the number of deletions.
func (s *Store) compactLog(b *pebble.Batch, rev int64) int {
	s.vvMu.Lock()
	last := s.durableVV.Clone()
	stable := s.stableVV.Clone()
	s.vvMu.Unlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: changeKey(0), UpperBound: changeKey(rev)})
	if err != nil {
		s.log.Error("compaction", "err", err)
		return 0
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if !isChangeKey(it.Key()) {
			continue // a revision record (compactBackend's business)
		}
		c, _, err := decodeHeader(it.Value())
		if err != nil {
			continue
		}
		if s.cfg.Replicated && !stable.Has(c.ID) {
			continue
		}
		_ = b.Delete(it.Key(), nil)
		s.logical.Add(-int64(len(it.Key()) + len(it.Value())))
		n++
		if c.ID.Seq < last[c.ID.Origin] {
			_ = b.Delete(originKey(c.ID), nil)
			s.logical.Add(-(17 + 8))
			n++
		}
	}
	return n
}

// SetStable tells the store which changes every member of its cluster holds durably (package
// replication computes it from the members' acknowledgements); compaction may then drop their
// change log entries, since no peer will ask for them again.
func (s *Store) SetStable(vv VersionVector) {
	s.vvMu.Lock()
	defer s.vvMu.Unlock()
	s.stableVV = vv.Clone()
}

// changeStable reports whether the change applied at revision rev is held by every member
// (within stable), or is not in the log at all (its header was collected, which happens only
// once it is stable, or it came with a snapshot and has none).
func (s *Store) changeStable(rev int64, stable VersionVector) bool {
	v, closer, err := s.db.Get(changeKey(rev))
	if err != nil {
		return errors.Is(err, pebble.ErrNotFound)
	}
	c, _, err := decodeHeader(v)
	closer.Close()
	return err == nil && stable.Has(c.ID)
}

// Defragment compacts Pebble's whole key space now, reclaiming the space of deleted versions.
// It runs alongside reads and writes (Pebble compactions never block the commit pipeline).
func (s *Store) Defragment(ctx context.Context) error {
	return s.db.Compact(ctx, []byte{0}, []byte{0xff}, true)
}
