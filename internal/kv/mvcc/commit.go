package mvcc

import (
	"context"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// maxGroup bounds how many write requests one commit group takes.
const maxGroup = 512

// writeReq is a write request waiting for the writer goroutine.
type writeReq struct {
	fn   func(w *writeTxn) error
	rev  int64
	err  error
	done chan struct{} // receives once the request is durable and visible (or failed)
}

var reqPool = sync.Pool{New: func() any { return &writeReq{done: make(chan struct{}, 1)} }}

// commitGroup is the requests the writer evaluated together: one Pebble batch, one WAL fsync.
type commitGroup struct {
	reqs    []*writeReq
	changes []ChangeID // the changes the group commits, for the durable version vector
	batch   *pebble.Batch
	revs    []int64 // revisions made, ascending
	events  [][]mvccpb.Event
	// conflicts: the ops of peers' changes in the group that lost (conflict.go).
	conflicts []Conflict
	// own counts this member's own changes in the group; ownSeq and ownWall are the last one's
	// sequence and the highest stamp wall time among them (for Frontier).
	own     int
	ownSeq  uint64
	ownWall int64
}

// write runs fn as one write request and returns the revision of its response header: its own
// revision if it changed anything, else the current one. fn must do every check that can fail
// before its first put or delete (as etcd's checkTxn does), because a request's writes are all or
// nothing. write returns once the request is durable and visible.
//
// Requests go to one writer goroutine, which evaluates whatever requests are queued, in order, as
// one commit group: their revision records and change headers go into a single Pebble batch
// handed to the commit pipeline, and while a syncer goroutine waits for that batch's fsync and
// then publishes and acknowledges the group, the writer already evaluates the next group. So
// concurrent writers share fsyncs and never convoy on a lock, and revisions are assigned in the
// order they are committed to the WAL.
func (s *Store) write(ctx context.Context, fn func(w *writeTxn) error) (int64, error) {
	req, err := s.submit(fn)
	if err != nil {
		return 0, err
	}
	return s.await(req)
}

// submit queues fn for the writer; requests submitted one after another from one goroutine are
// evaluated in that order.
func (s *Store) submit(fn func(w *writeTxn) error) (*writeReq, error) {
	req := reqPool.Get().(*writeReq)
	req.fn, req.rev, req.err = fn, 0, nil
	select {
	case s.writeCh <- req:
		return req, nil
	case <-s.closing:
		req.fn = nil
		reqPool.Put(req)
		return nil, ErrClosed
	}
}

// await waits for a submitted request to be durable and visible (or to fail).
func (s *Store) await(req *writeReq) (int64, error) {
	select {
	case <-req.done:
	case <-s.closing:
		return 0, ErrClosed // the request may or may not have been committed
	}
	rev, err := req.rev, req.err
	req.fn = nil
	reqPool.Put(req)
	return rev, err
}

// runWriter is the writer goroutine.
func (s *Store) runWriter() {
	defer s.bg.Done()
	defer close(s.syncCh)
	limit := maxGroup
	if s.cfg.Fsync == FsyncAlways {
		limit = 1 // one fsync per write
	}
	for {
		var first *writeReq
		select {
		case first = <-s.writeCh:
		case <-s.closing:
			return
		}
		g := &commitGroup{reqs: append(make([]*writeReq, 0, 8), first)}
	drain:
		for len(g.reqs) < limit {
			select {
			case r := <-s.writeCh:
				g.reqs = append(g.reqs, r)
			default:
				break drain
			}
		}
		s.evaluate(g)
		s.syncCh <- g
	}
}

// evaluate runs a group's requests against the latest state and hands their batch to Pebble.
func (s *Store) evaluate(g *commitGroup) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.failed != nil {
		for _, r := range g.reqs {
			r.err = s.failed
		}
		return
	}
	g.batch = s.db.NewBatch()
	pending := map[revision]*mvccpb.KeyValue{}
	dirty := false
	for _, r := range g.reqs {
		w := &writeTxn{s: s, rev: s.lastRev.Load() + 1, batch: g.batch, pending: pending}
		// The stamp is read before the request runs: its versions order after everything this
		// member has seen (HLC), so a local write always wins over the state it was evaluated on.
		w.stamp = Stamp{Time: s.clock.Now(), Origin: s.member}
		if err := r.fn(w); err != nil {
			if w.sub > 0 {
				// A bug: the index and the batch hold part of the request. Refuse further
				// writes rather than serve a state that a restart would not reproduce.
				s.failIf(err)
			}
			r.err = err
			continue
		}
		dirty = dirty || w.side
		g.changes = append(g.changes, w.raised...)
		if w.snapshot {
			if w.sub > 0 {
				dirty = true
				s.lastRev.Store(w.rev)
				r.rev = w.rev
				g.revs = append(g.revs, w.rev)
				g.events = append(g.events, w.events)
			} else {
				r.rev = s.lastRev.Load()
			}
			continue
		}
		var c Change
		switch {
		case w.remote != nil:
			// A peer's change takes a revision even when none of its ops won here: the
			// header records that this member has it (and forwards it), which the version
			// vector and anti-entropy rely on.
			if w.remote.ID.Seq == 0 {
				continue // already had it: ApplyRemote's fn found nothing to do
			}
			c = Change{ID: w.remote.ID, Time: w.remote.Time, Hash: w.remote.Hash, Revision: w.rev}
		case w.sub == 0:
			r.rev = s.lastRev.Load()
			continue
		default:
			s.seq++
			c = Change{ID: ChangeID{Origin: s.member, Seq: s.seq}, Time: w.stamp.Time, Revision: w.rev}
			c.Hash = ContentHash(c.ID, c.Time, w.ops)
			g.own, g.ownSeq, g.ownWall = g.own+1, s.seq, max(g.ownWall, w.stamp.Time.Wall)
		}
		dirty = true
		_ = g.batch.Set(changeKey(w.rev), encodeHeader(nil, &c, len(w.ops)), nil)
		_ = g.batch.Set(originKey(c.ID), u64(uint64(w.rev)), nil)
		s.logical.Add(9 + changeHeaderLen + 17 + 8)
		s.vv[c.ID.Origin] = c.ID.Seq
		g.changes = append(g.changes, c.ID)
		g.conflicts = append(g.conflicts, w.conflicts...)
		s.lastRev.Store(w.rev)
		r.rev = w.rev
		g.revs = append(g.revs, w.rev)
		g.events = append(g.events, w.events)
	}
	if g.own > 0 {
		s.frontierMu.Lock()
		s.pendingOwn += g.own
		s.frontierMu.Unlock()
	}
	if s.failed != nil {
		for _, r := range g.reqs {
			if r.err == nil {
				r.err = s.failed
			}
		}
		g.batch.Close()
		g.batch = nil
		return
	}
	if !dirty {
		g.batch.Close()
		g.batch = nil
		return
	}
	var err error
	switch s.cfg.Fsync {
	case FsyncNever:
		err = s.db.Apply(g.batch, pebble.NoSync)
	case FsyncAlways:
		err = s.db.Apply(g.batch, pebble.Sync)
	default:
		err = s.db.ApplyNoSyncWait(g.batch, pebble.Sync)
	}
	if err != nil {
		s.failIf(err)
		for _, r := range g.reqs {
			r.err = err
		}
		g.batch.Close()
		g.batch = nil
		g.revs, g.events, g.changes, g.conflicts = nil, nil, nil, nil
	}
	if s.cfg.Fsync != FsyncBatch && g.batch != nil {
		g.batch.Close()
		g.batch = nil
	}
}

// runSyncer is the syncer goroutine: it waits for each group's fsync, in order, then publishes
// the group's revisions and acknowledges its requests.
func (s *Store) runSyncer() {
	defer s.bg.Done()
	for g := range s.syncCh {
		if g.batch != nil {
			err := g.batch.SyncWait()
			g.batch.Close()
			if err != nil {
				s.writeMu.Lock()
				s.failIf(err)
				s.writeMu.Unlock()
				for _, r := range g.reqs {
					r.err = err
				}
				g.revs, g.changes, g.conflicts = nil, nil, nil
			}
		}
		s.advanceDurable(g.changes)
		s.publishConflicts(g.conflicts)
		for i, rev := range g.revs {
			s.publish(rev, g.events[i])
		}
		if g.own > 0 {
			s.frontierMu.Lock()
			s.pendingOwn -= g.own
			s.pubSeq, s.pubWall = max(s.pubSeq, g.ownSeq), max(s.pubWall, g.ownWall)
			s.frontierMu.Unlock()
		}
		// Requests that changed nothing read state up to their revision: wait until it is
		// visible (a previous group's revisions are published before this group's).
		for _, r := range g.reqs {
			if r.err == nil && r.rev > s.visible.Load() {
				r.err = s.waitVisible(context.Background(), r.rev)
			}
			r.done <- struct{}{}
		}
	}
}
