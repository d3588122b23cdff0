package replication

import (
	"cmp"
	"slices"
)

// Collecting deletion records (the invariants are in internal/kv/mvcc/frontier.go): every
// heartbeat a member sends its frontier and its collect bound; from what it hears, each member
// computes
//
//	T_self   = min over the other members Y of the wall of the latest frontier of Y whose
//	           changes this member holds durably (it holds every change stamped before it), and
//	T_global = min(T_self, every other member's T): every member holds every change stamped
//	           before it, and none will ever receive another,
//
// and lets its store forget deletions stamped before T_global. It needs to have heard from every
// member of the cluster, directly or through the bounds each heartbeat relays (Bounds: the
// claims are the members' own, true whatever path they took), so it works through a partial
// mesh too, only later.

// frontierReport is a frontier a member reported (mvcc.Store.Frontier).
type frontierReport struct {
	seq  uint64
	wall int64
}

// noteFrontier records what a peer's batch carried: the sender's own frontier and bound, and
// those it relays for other members (Bounds).
func (r *Replicator) noteFrontier(b *SyncBatch) {
	if b.Sender.ID != 0 && b.FrontierWall != 0 {
		r.noteBound(MemberBound{ID: b.Sender.ID, FrontierSeq: b.FrontierSeq, FrontierWall: b.FrontierWall, CollectBefore: b.CollectBefore})
	}
	for _, mb := range b.Bounds {
		r.noteBound(mb)
	}
}

// noteBound records a member's frontier and collect bound, heard directly or relayed: both are
// the member's own claims, true whatever path they took.
func (r *Replicator) noteBound(mb MemberBound) {
	if mb.ID == 0 || mb.ID == r.store.MemberID() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed[mb.ID] {
		return
	}
	if mb.FrontierWall > 0 {
		// Reports not reached yet, oldest first: under a steady write load the newest report
		// is always a little ahead of what has arrived, but an older one is soon reached.
		q := r.frontier[mb.ID]
		last := r.reached[mb.ID].wall
		if n := len(q); n > 0 {
			last = q[n-1].wall
		}
		if mb.FrontierWall > last {
			if len(q) >= maxPendingReports {
				q = q[1:]
			}
			r.frontier[mb.ID] = append(q, frontierReport{seq: mb.FrontierSeq, wall: mb.FrontierWall})
		}
	}
	r.collectOf[mb.ID] = max(r.collectOf[mb.ID], mb.CollectBefore)
}

// bounds lists what this member knows of the other members' frontiers and collect bounds (the
// latest of each), for its heartbeats, so they reach members that do not hear from them
// directly (a partial mesh).
func (r *Replicator) bounds() []MemberBound {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []MemberBound
	for id := range r.collectOf {
		mb := MemberBound{ID: id, CollectBefore: r.collectOf[id]}
		f := r.reached[id]
		if q := r.frontier[id]; len(q) > 0 {
			f = q[len(q)-1]
		}
		mb.FrontierSeq, mb.FrontierWall = f.seq, f.wall
		out = append(out, mb)
	}
	slices.SortFunc(out, func(a, b MemberBound) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// maxPendingReports bounds the frontier reports kept per member while they are not reached.
const maxPendingReports = 16

// ownCollect is this member's collect bound, for its batches.
func (r *Replicator) ownCollect() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.collectOwn
}

// updateCollect recomputes the bounds and hands T_global to the store (each heartbeat).
func (r *Replicator) updateCollect() {
	held := r.store.VersionVector() // durable: a crash must not lose a change counted here
	r.mu.Lock()
	ids, complete := r.othersLocked()
	for id, q := range r.frontier {
		for len(q) > 0 && held[id] >= q[0].seq {
			r.reached[id], q = q[0], q[1:]
		}
		r.frontier[id] = q
	}
	own, global := int64(0), int64(0)
	if complete {
		own = -1
		for id := range ids {
			f, ok := r.reached[id]
			if !ok {
				own = 0
				break
			}
			if own < 0 || f.wall < own {
				own = f.wall
			}
		}
		own = max(own, 0)
		global = own
		for id := range ids {
			c := r.collectOf[id]
			if c < global {
				global = c
			}
		}
	}
	r.collectOwn = max(r.collectOwn, own)
	r.mu.Unlock()
	if global > 0 {
		r.store.SetCollectBefore(global)
	}
}
