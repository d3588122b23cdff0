package mvcc

// Collecting deletion records in a cluster.
//
// A replicated store keeps a deleted key's stamp (and the deletion record that holds it on disk)
// after compaction, because a put of that key with an older stamp may still arrive from a peer
// and must lose. The record may go once no such put can arrive anywhere and every member holds
// the deletion. Both follow from one time bound per member, made of hybrid-logical-clock walls:
//
//   - A member's frontier (Frontier) is a pair (seq, wall): every change of its own stamped
//     before wall has a sequence <= seq and is visible, and every later change of its own will be
//     stamped after wall (its clock only moves forward). Peers send it in their batches.
//   - A member X that holds, for every other member Y, Y's changes up to the seq of a frontier
//     Y reported, holds every change stamped before the smallest of those walls: call it T_X.
//     Members send their T in their batches too.
//   - Before T = min over all members of T_Y, every member holds every change there is, and will
//     never receive another: a deletion stamped before T is held everywhere and can never be
//     overtaken by an older put. Package replication computes T and calls SetCollectBefore.
//
// Compaction then drops the stamp-only index entries and the deletion records stamped before T;
// a snapshot entry stamped before T is skipped on install (its change is already held here, and
// if it is a put of a key whose deletion was dropped, the deletion won).

// Frontier returns this member's frontier: every change of its own stamped with a wall time
// before wall has a sequence <= seq and is visible, and every later one will carry a later stamp.
func (s *Store) Frontier() (seq uint64, wall int64) {
	// Stamps of own changes are taken under writeMu (evaluate): holding it, none is being
	// taken, so what is pending now is all that is not visible yet.
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.frontierMu.Lock()
	defer s.frontierMu.Unlock()
	if s.pendingOwn == 0 {
		// Everything made so far is visible; anything made later is stamped after a reading
		// taken now (a reading, not the latest stamp: so an idle member's frontier still
		// moves with time).
		return s.seq, s.clock.Now().Wall
	}
	// In-flight changes were stamped after every visible one, so at or after pubWall.
	return s.pubSeq, s.pubWall
}

// SetCollectBefore lets compaction forget deletions stamped before wall (HLC wall time, ns): the
// caller guarantees that every member holds every change stamped before it and will never
// receive another (package replication). It only moves forward.
func (s *Store) SetCollectBefore(wall int64) {
	for {
		cur := s.collectBefore.Load()
		if wall <= cur || s.collectBefore.CompareAndSwap(cur, wall) {
			return
		}
	}
}

// CollectBefore returns the bound SetCollectBefore set (0: none).
func (s *Store) CollectBefore() int64 { return s.collectBefore.Load() }

// collectible reports whether a deletion (or a snapshot entry) with this stamp is before the
// collect bound.
func (s *Store) collectible(st Stamp) bool {
	return !st.IsZero() && st.Time.Wall < s.collectBefore.Load()
}
