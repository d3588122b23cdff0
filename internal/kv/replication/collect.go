package replication

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
// member of the cluster directly, so a partial mesh (where some members are never heard from
// directly) collects nothing; the bounds would have to travel with the gossiped tables for that.

// frontierReport is a frontier a member reported (mvcc.Store.Frontier).
type frontierReport struct {
	seq  uint64
	wall int64
}

// noteFrontier records what a peer's batch carried.
func (r *Replicator) noteFrontier(b *SyncBatch) {
	if b.Sender.ID == 0 || b.FrontierWall == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed[b.Sender.ID] {
		return
	}
	// Reports not reached yet, oldest first: under a steady write load the newest report is
	// always a little ahead of what has arrived, but an older one is soon reached.
	q := r.frontier[b.Sender.ID]
	if n := len(q); n == 0 || q[n-1].wall < b.FrontierWall {
		if n >= maxPendingReports {
			q = q[1:]
		}
		r.frontier[b.Sender.ID] = append(q, frontierReport{seq: b.FrontierSeq, wall: b.FrontierWall})
	}
	r.collectOf[b.Sender.ID] = max(r.collectOf[b.Sender.ID], b.CollectBefore)
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
	self := r.store.MemberID()
	r.mu.Lock()
	ids := map[uint64]bool{}
	for id := range r.members {
		ids[id] = true
	}
	for id := range r.known {
		ids[id] = true
	}
	delete(ids, self)
	for id, q := range r.frontier {
		for len(q) > 0 && held[id] >= q[0].seq {
			r.reached[id], q = q[0], q[1:]
		}
		r.frontier[id] = q
	}
	own, global := int64(0), int64(0)
	if len(ids) > 0 && len(ids)+1 >= r.cfg.ClusterSize-len(r.removed) {
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
