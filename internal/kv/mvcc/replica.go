package mvcc

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/cockroachdb/pebble/v2"
)

// VersionVector maps each origin member to the highest sequence of its changes that this member
// has applied. Changes of one origin are applied in sequence order with no gaps, so the vector
// says exactly which changes a member holds.
type VersionVector map[uint64]uint64

// Covers reports whether v holds every change that u holds.
func (v VersionVector) Covers(u VersionVector) bool {
	for o, seq := range u {
		if v[o] < seq {
			return false
		}
	}
	return true
}

// Has reports whether v holds change id.
func (v VersionVector) Has(id ChangeID) bool { return id.Seq <= v[id.Origin] }

// Clone returns a copy of v.
func (v VersionVector) Clone() VersionVector { return maps.Clone(v) }

// ErrGap is returned by ApplyRemote for a change whose predecessor from the same origin has not
// been applied: the sender must send the missing changes first (anti-entropy does).
var ErrGap = errors.New("mvcc: change out of order for its origin")

// ErrLogTruncated is returned by LogStart when a peer lacks changes this member no longer holds
// in its log: the peer needs a snapshot.
var ErrLogTruncated = errors.New("mvcc: the change log no longer holds what the peer lacks")

// VersionVector returns the changes this member holds durably: what it may tell peers it has.
func (s *Store) VersionVector() VersionVector {
	s.vvMu.Lock()
	defer s.vvMu.Unlock()
	return s.durableVV.Clone()
}

// Clock returns the store's hybrid logical clock.
func (s *Store) Clock() *Clock { return s.clock }

func (s *Store) advanceDurable(ids []ChangeID) {
	if len(ids) == 0 {
		return
	}
	s.vvMu.Lock()
	defer s.vvMu.Unlock()
	for _, id := range ids {
		if s.durableVV[id.Origin] < id.Seq {
			s.durableVV[id.Origin] = id.Seq
		}
	}
}

// ApplyRemote applies a change made by another member and returns the local revision it got (0
// if this member already had it). Each op takes effect only if the change's stamp is greater
// than the key's current stamp (last writer wins; see Stamp); the ops that win are applied
// atomically at one new revision, watchers see them as ordinary events, and the change is
// recorded (with its original id, time and hash) so that it is forwarded to other peers.
// Changes of one origin must arrive in sequence order: an out-of-order change gets ErrGap.
// Like a local write, ApplyRemote returns once the change is durable and visible.
func (s *Store) ApplyRemote(ctx context.Context, c *Change) (int64, error) {
	revs, err := s.ApplyRemoteBatch(ctx, []Change{*c})
	if err != nil {
		return 0, err
	}
	return revs[0], nil
}

// ApplyRemoteBatch applies changes in order, as ApplyRemote does one, but hands them to the
// writer together so that they share commit groups and fsyncs. It returns each change's local
// revision (0: already held). On an error, the changes before the failing one are applied.
func (s *Store) ApplyRemoteBatch(ctx context.Context, cs []Change) ([]int64, error) {
	p, err := s.SubmitRemote(cs)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}

// PendingApply is a batch of a peer's changes handed to the writer by SubmitRemote.
type PendingApply struct {
	s       *Store
	reqs    []*writeReq
	applied []bool
	err     error // a submit failure after reqs
}

// SubmitRemote queues changes for the writer without waiting for them, so that a receiver can
// read the next batch while this one is committed, and several batches share one fsync. Batches
// submitted one after another from one goroutine apply in that order. Wait for the outcome.
func (s *Store) SubmitRemote(cs []Change) (*PendingApply, error) {
	for i := range cs {
		if cs[i].ID.Origin == 0 || cs[i].ID.Seq == 0 {
			return nil, fmt.Errorf("mvcc: apply change %v: origin and sequence must be non-zero", cs[i].ID)
		}
	}
	p := &PendingApply{s: s, reqs: make([]*writeReq, 0, len(cs)), applied: make([]bool, len(cs))}
	for i := range cs {
		req, err := s.submit(s.applyFn(&cs[i], &p.applied[i]))
		if err != nil {
			p.err = err
			break
		}
		p.reqs = append(p.reqs, req)
	}
	return p, nil
}

// Wait returns, once every change of the batch is durable and visible (or failed), each change's
// local revision (0: already held) and the first error.
func (p *PendingApply) Wait() ([]int64, error) {
	revs := make([]int64, len(p.applied))
	var firstErr error
	for i, req := range p.reqs {
		rev, err := p.s.await(req)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if p.applied[i] && err == nil {
			revs[i] = rev
		}
	}
	if firstErr == nil {
		firstErr = p.err
	}
	return revs, firstErr
}

// applyFn is the write request that applies change c; it sets *applied when c was new here.
func (s *Store) applyFn(c *Change, applied *bool) func(w *writeTxn) error {
	return func(w *writeTxn) error {
		have := s.vv[c.ID.Origin]
		switch {
		case c.ID.Seq <= have:
			w.remote = &Change{} // zero id: nothing to record
			return nil
		case c.ID.Seq > have+1:
			return fmt.Errorf("%w: change %v after sequence %d", ErrGap, c.ID, have)
		}
		s.clock.Observe(c.Time)
		w.stamp = stampOf(c)
		w.remote = c
		*applied = true
		for _, op := range c.Ops {
			if cur := s.ix.stamp(op.Key); !cur.Less(w.stamp) {
				// The key holds a newer write (or this very change, re-sent): the op loses,
				// which is recorded (conflict.go) unless it is this change itself.
				if w.stamp.Less(cur) {
					w.loseOp(op, cur)
				}
				continue
			}
			if !op.Delete {
				w.put(op.Key, op.Value, op.Lease)
				continue
			}
			if e, ok := s.ix.get(op.Key, w.rev); ok {
				w.tombstone(op.Key, e.lease)
				continue
			}
			// Nothing live to delete: only the stamp must win over older puts still to
			// arrive, and the op be forwarded, so it is recorded without a version or an event.
			w.deleteAbsent(op.Key)
		}
		return nil
	}
}

// LogStart returns the lowest local revision holding a change that a peer with version vector
// peer lacks (0: the peer lacks nothing), or ErrLogTruncated when such a change is no longer in
// the log.
func (s *Store) LogStart(peer VersionVector) (int64, error) {
	mine := s.VersionVector()
	start := int64(0)
	for origin, seq := range mine {
		if peer[origin] >= seq {
			continue
		}
		v, closer, err := s.db.Get(originKey(ChangeID{Origin: origin, Seq: peer[origin] + 1}))
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, fmt.Errorf("%w: change %v", ErrLogTruncated, ChangeID{Origin: origin, Seq: peer[origin] + 1})
		}
		if err != nil {
			return 0, err
		}
		rev := int64(decodeU64(v))
		closer.Close()
		if rev == 0 {
			// Held through a merged snapshot, not in the log.
			return 0, fmt.Errorf("%w: change %v", ErrLogTruncated, ChangeID{Origin: origin, Seq: peer[origin] + 1})
		}
		// Compaction keeps each origin's last o-record (recovery rebuilds the version vector
		// from it) while it drops the change's header: then the change is not in the log.
		_, hc, err := s.db.Get(changeKey(rev))
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, fmt.Errorf("%w: change %v", ErrLogTruncated, ChangeID{Origin: origin, Seq: peer[origin] + 1})
		}
		if err != nil {
			return 0, err
		}
		hc.Close()
		if start == 0 || rev < start {
			start = rev
		}
	}
	return start, nil
}

// ReadLog calls fn for each change in the log at revisions [from, to] that are durable (to <= 0:
// up to the visible revision), in revision order, until fn returns false. A change's ops are the
// ones it applied here and that compaction has not removed: an op that lost to a newer write is
// left out, and so is one whose version a newer write superseded once every member holds the
// change (compaction keeps it until then, see compactBackend), which is safe to forward because
// no member needs it. It returns the last revision read.
func (s *Store) ReadLog(from, to int64, fn func(c *Change) bool) (int64, error) {
	visible := s.visible.Load()
	if to <= 0 || to > visible {
		to = visible
	}
	last := from - 1
	if from > to {
		return last, nil
	}
	// A change's header sorts right before its records (keys.go): one pass reads both.
	// Records of a revision without a header (a merged snapshot's) are not in the log.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: changeKey(from), UpperBound: changeKey(to + 1)})
	if err != nil {
		return last, err
	}
	defer it.Close()
	var c *Change
	for it.First(); it.Valid(); it.Next() {
		if isChangeKey(it.Key()) {
			if c != nil {
				last = c.Revision
				if !fn(c) {
					return last, nil
				}
			}
			h, nops, err := decodeHeader(it.Value())
			if err != nil {
				return last, err
			}
			h.Ops = make([]Op, 0, nops)
			c = &h
			continue
		}
		rev, _, ok := parseRevKey(it.Key())
		if !ok || c == nil || rev != c.Revision {
			continue
		}
		kind, kv, _, err := decodeRecord(it.Value())
		if err != nil {
			return last, err
		}
		c.Ops = append(c.Ops, Op{Delete: kind != recPut, Key: kv.Key, Value: kv.Value, Lease: kv.Lease})
	}
	if err := it.Error(); err != nil {
		return last, err
	}
	if c != nil {
		last = c.Revision
		fn(c)
	}
	return last, nil
}

// WaitVisible blocks until revision rev is visible (durable and published) or ctx is done.
func (s *Store) WaitVisible(ctx context.Context, rev int64) error { return s.waitVisible(ctx, rev) }

// recoverReplicaState rebuilds the version vector and this member's sequence from the o-records.
func (s *Store) recoverReplicaState() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixOrigin}, UpperBound: []byte{prefixOrigin + 1}})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if id, ok := parseOriginKey(it.Key()); ok && s.vv[id.Origin] < id.Seq {
			s.vv[id.Origin] = id.Seq
		}
		s.logical.Add(int64(len(it.Key()) + len(it.Value())))
	}
	if err := it.Close(); err != nil {
		return err
	}
	s.durableVV = s.vv.Clone()
	s.seq = s.vv[s.member]
	return nil
}

// ChangeAt returns the header (no ops) of the change applied at revision rev: ErrFutureRev past
// the visible revision, ErrCompacted when no change is recorded there (compacted away, or rev
// is 1, the empty store).
func (s *Store) ChangeAt(rev int64) (Change, error) {
	if rev > s.visible.Load() {
		return Change{}, ErrFutureRev
	}
	v, closer, err := s.db.Get(changeKey(rev))
	if errors.Is(err, pebble.ErrNotFound) {
		return Change{}, ErrCompacted
	}
	if err != nil {
		return Change{}, err
	}
	defer closer.Close()
	c, _, err := decodeHeader(v)
	return c, err
}
