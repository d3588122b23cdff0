package replication

import (
	"context"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// link follows a puller's streams from one peer for the logs and the catch-up metric: when a
// stream opens (its first batch arrives), when it is lost, and when this member has caught up,
// that is, holds every change the peer held when the stream opened (the version vector of the
// stream's first batch that is not part of a snapshot). A reopening for errDirectChanged is not a
// loss: the stream, as far as the link is concerned, stays open.
//
// The catch-up is only reported for a stream that reopened after a loss, or that found this
// member behind: a member starting with nothing to learn logs nothing, while after a loss the
// line is what tells that the member is whole again, so it is written even if nothing was
// missed. It is checked after each batch from the peer and whenever the store's visible
// revision advances, since the changes may come over other streams (those of the direct
// members, which this peer leaves out).
//
// The puller calls requested and lost; the stream's completer calls received; a waiter
// goroutine per catch-up checks as the store advances. All under mu.
type link struct {
	r   *Replicator
	url string
	ctx context.Context // the puller's

	mu        sync.Mutex
	gen       uint64 // counts opened streams, so a waiter of an older one stands down
	open      bool
	name      string // the peer's, once a batch told it
	openAt    time.Time
	lostAt    time.Time          // when the previous open stream was lost (zero: none was)
	startHave mvcc.VersionVector // this member's vector in the request of the open stream
	targetSet bool
	target    mvcc.VersionVector // the peer's vector as first learned on the open stream
	chasing   bool               // reporting the catch-up to target, not done yet
	changes   uint64             // changes from the peer applied since the stream opened
	stopWait  context.CancelFunc
}

func (r *Replicator) newLink(ctx context.Context, url string) *link {
	return &link{r: r, url: url, ctx: ctx}
}

// requested records this member's version vector as sent in a stream's request.
func (l *link) requested(have mvcc.VersionVector) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open {
		l.startHave = have
	}
}

// received accounts a batch from the peer that arrived at at, once its changes are durable;
// mine is this member's version vector after it.
func (l *link) received(b *SyncBatch, at time.Time, applied uint64, mine mvcc.VersionVector) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b.Sender.Name != "" {
		l.name = b.Sender.Name
	}
	if !l.open {
		l.gen++
		l.open, l.openAt, l.targetSet, l.chasing, l.changes = true, at, false, false, 0
		attrs := []any{"peer", l.peerName(), "url", l.url, "open_at", at.Format(time.RFC3339Nano)}
		if !l.lostAt.IsZero() {
			attrs = append(attrs, "disconnected_for", at.Sub(l.lostAt))
		}
		l.r.log.Info("peer stream open", attrs...)
	}
	if !l.targetSet || l.chasing {
		l.changes += applied
	}
	if !l.targetSet && len(b.Snapshot) == 0 && !b.SnapshotDone {
		l.targetSet, l.target = true, b.Have.Clone()
		if !l.lostAt.IsZero() || !l.startHave.Covers(l.target) {
			l.chasing = true
			if !l.check(mine) {
				ctx, cancel := context.WithCancel(l.ctx)
				l.stopWait = cancel
				l.r.wg.Add(1)
				go l.await(ctx, l.gen)
			}
			return
		}
	}
	if l.chasing {
		l.check(mine)
	}
}

// await checks the catch-up of stream gen whenever the store's visible revision advances.
func (l *link) await(ctx context.Context, gen uint64) {
	defer l.r.wg.Done()
	for {
		// Taken before the vector is read: an advance in between closes it.
		changed := l.r.store.Changed()
		mine := l.r.store.VersionVector()
		l.mu.Lock()
		done := l.gen != gen || !l.chasing || l.check(mine)
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// check reports the catch-up if mine covers the target (l.mu held, l.chasing); it returns
// whether it did.
func (l *link) check(mine mvcc.VersionVector) bool {
	if !mine.Covers(l.target) {
		return false
	}
	now := time.Now()
	l.chasing = false
	l.stopWaiting()
	took := now.Sub(l.openAt)
	l.r.catchUp.WithLabelValues(l.peerName()).Observe(max(took, 0).Seconds())
	attrs := []any{"peer", l.peerName(), "url", l.url,
		"reconnect_at", l.openAt.Format(time.RFC3339Nano), "caught_up_at", now.Format(time.RFC3339Nano),
		"took", took, "changes", l.changes}
	if !l.lostAt.IsZero() {
		attrs = append(attrs, "disconnected_for", l.openAt.Sub(l.lostAt))
	}
	l.r.log.Info("caught up with peer", attrs...)
	if f := l.r.cfg.OnCatchUp; f != nil {
		c := CatchUp{Peer: l.peerName(), URL: l.url, ReconnectAt: l.openAt, CaughtUpAt: now, Changes: l.changes}
		if !l.lostAt.IsZero() {
			c.DisconnectedFor = l.openAt.Sub(l.lostAt)
		}
		f(c)
	}
	return true
}

// lost records the end of a stream; one that never opened (a failed dial) is not a loss.
func (l *link) lost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open {
		return
	}
	now := time.Now()
	attrs := []any{"peer", l.peerName(), "url", l.url, "err", err, "lost_at", now.Format(time.RFC3339Nano),
		"open_for", now.Sub(l.openAt)}
	if l.chasing {
		attrs = append(attrs, "caught_up", false)
	}
	l.r.log.Info("peer stream lost", attrs...)
	l.open, l.lostAt, l.chasing = false, now, false
	l.stopWaiting()
}

// stop ends the waiter when the puller exits.
func (l *link) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopWaiting()
}

func (l *link) stopWaiting() {
	if l.stopWait != nil {
		l.stopWait()
		l.stopWait = nil
	}
}

// peerName is the peer's name, or its URL before it told its name (metrics label, logs).
func (l *link) peerName() string {
	if l.name != "" {
		return l.name
	}
	return l.url
}
