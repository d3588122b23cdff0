package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// start begins the hub's watch, once, at the revision after the current one: every topic read
// later is at a revision at least that one's, so the watch covers everything after the read.
func (h *Hub) start(ctx context.Context) error {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	if h.started {
		return nil
	}
	resp, err := h.kv.Get(ctx, h.cfg.Prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	h.setAppliedLocked(resp.Header.Revision)
	h.wg.Add(1)
	h.mu.Unlock()
	h.started = true
	go h.watch(resp.Header.Revision + 1)
	return nil
}

// load reads t's subtree in its own goroutine (the caller holds mu and has marked nothing yet).
// Revisions the dispatcher sees meanwhile are kept in t.pending; when the read (at revision R)
// is in, those after R are applied to it, so the cache misses nothing and counts nothing twice.
func (h *Hub) load(t *topic) {
	t.loading, t.pending, t.snap = true, nil, nil
	t.gen++
	gen := t.gen
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		st := store.WithoutRules(h.kv, h.cfg.Prefix)
		var snap *store.Snapshot
		var err error
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
			snap, err = st.Read(ctx, t.ns, [][]string{t.path})
			cancel()
			if err == nil || h.ctx.Err() != nil {
				break
			}
			h.log.Warn("listener read failed; retrying", "ns", t.ns, "path", "/"+strings.Join(t.path, "/"), "err", err)
			select {
			case <-h.ctx.Done():
			case <-time.After(time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond):
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil || t.removed || t.gen != gen || h.closed {
			return
		}
		t.tree, t.rev = snap.Trees[0], snap.Rev
		for _, b := range t.pending {
			if b.rev > snap.Rev {
				for _, c := range b.changes {
					t.tree = applyChange(t.tree, c)
				}
				t.rev = b.rev
			}
		}
		t.pending, t.loading = nil, false
		t.view = t.tree
		if t.q != nil {
			t.view = t.q.Apply(t.tree)
		}
		ev := t.snapshot()
		for s := range t.subs {
			s.drop() // a resync replaces whatever was queued before it
			s.push(ev)
		}
	}()
}

// snapshot is the full put of t's view (encoded once per revision).
func (t *topic) snapshot() *Event {
	if t.snap == nil {
		t.snap = &Event{Type: "put", Path: "/", Data: tree.Encode(t.view, false), Rev: t.rev}
	}
	return t.snap
}

// watch runs the kv watch from rev and dispatches it; when the watch fails (its start revision
// was compacted, or the watch was cancelled), it restarts at the current revision and reloads
// every topic, whose listeners then get a full put.
func (h *Hub) watch(rev int64) {
	defer h.wg.Done()
	for h.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(h.ctx)
		wch := h.kv.Watch(wctx, h.cfg.Prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(rev))
		var failure error
		for resp := range wch {
			if err := resp.Err(); err != nil {
				failure = err
				break
			}
			if resp.IsProgressNotify() {
				h.progress(resp.Header.Revision)
				continue
			}
			// Continuum kv and etcd send whole revisions per response (no fragments were asked
			// for), in order: split the response at revision boundaries.
			evs := resp.Events
			for len(evs) > 0 {
				r := evs[0].Kv.ModRevision
				n := 1
				for n < len(evs) && evs[n].Kv.ModRevision == r {
					n++
				}
				h.dispatch(r, evs[:n])
				evs = evs[n:]
			}
		}
		cancel()
		if h.ctx.Err() != nil {
			return
		}
		if failure == nil {
			failure = errors.New("watch channel closed")
		}
		h.log.Warn("kv watch failed; restarting it and sending listeners the full value", "err", failure)
		rev = h.Resync()
	}
}

// Resync finds the current revision (retrying until the kv answers), marks every topic loading
// and reloads it; the next watch starts after that revision.
func (h *Hub) Resync() int64 {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		resp, err := h.kv.Get(ctx, h.cfg.Prefix+"/", clientv3.WithCountOnly())
		cancel()
		if err == nil {
			h.mu.Lock()
			h.setAppliedLocked(resp.Header.Revision)
			for _, root := range h.roots {
				walkTopics(root, func(t *topic) { h.load(t) })
			}
			h.rulesChangedLocked("", true) // the failed watch may have missed a change
			h.mu.Unlock()
			return resp.Header.Revision + 1
		}
		select {
		case <-h.ctx.Done():
			return 0
		case <-time.After(time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond):
		}
	}
}

// dispatch hands the events of revision rev to the topics they concern: the topics at the
// events' keys and above them, and, for a leaf put, the topics below it (now null).
func (h *Hub) dispatch(rev int64, evs []*clientv3.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev <= h.applied {
		return // already seen by the reads of a resync, and applied by their loaders
	}
	h.setAppliedLocked(rev)
	touched := map[*topic][]change{}
	var order []*topic
	add := func(t *topic, c change) {
		if _, ok := touched[t]; !ok {
			order = append(order, t)
		}
		touched[t] = append(touched[t], c)
	}
	base := h.cfg.Prefix + "/"
	for _, ev := range evs {
		k := string(ev.Kv.Key)
		if !strings.HasPrefix(k, base) {
			continue
		}
		if ns, ok := h.rulesNamespace(k); ok {
			h.rulesChangedLocked(ns, false) // before any event of this revision is queued
			continue
		}
		segs := strings.Split(k[len(base):], "/")
		root := h.roots[segs[0]]
		if root == nil {
			continue
		}
		segs = segs[1:]
		del := ev.Type == clientv3.EventTypeDelete
		n := root
		for d := 0; n != nil; d++ {
			for _, t := range n.topics {
				add(t, change{rel: segs[d:], val: tree.Leaf(ev.Kv.Value), del: del})
			}
			if d == len(segs) {
				break
			}
			n = n.kids[segs[d]]
		}
		if n != nil && !del { // a leaf at k: every topic below it is null now
			for _, kid := range n.kids {
				walkTopics(kid, func(t *topic) { add(t, change{clear: true}) })
			}
		}
	}
	for _, t := range order {
		cs := touched[t]
		// Deletes first: one revision never touches a key twice, and a write replacing a leaf
		// by children (or the reverse) deletes the one and puts the others in the same revision.
		sortDeletesFirst(cs)
		if t.loading {
			t.pending = append(t.pending, pendingBatch{rev, cs})
			continue
		}
		if rev <= t.rev {
			continue // the topic's read was at rev or later (the watch lags reads): already in it
		}
		if ev := t.advance(rev, cs); ev != nil {
			for s := range t.subs {
				s.push(ev)
			}
		}
	}
}

func sortDeletesFirst(cs []change) {
	j := 0
	for i := range cs {
		if cs[i].del || cs[i].clear {
			cs[i], cs[j] = cs[j], cs[i]
			j++
		}
	}
}

// walkTopics calls f for every topic at or below n.
func walkTopics(n *trieNode, f func(*topic)) {
	for _, t := range n.topics {
		f(t)
	}
	for _, k := range n.kids {
		walkTopics(k, f)
	}
}
