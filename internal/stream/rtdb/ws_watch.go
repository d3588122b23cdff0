package rtdb

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// wsChange is one leaf of a revision: its path from the namespace's root and its new value (a
// leaf, or nil when it was deleted).
type wsChange struct {
	path []string
	val  any
}

// wsSubscriber receives a namespace's changes, one revision at a time and in revision order.
// deliver runs on the namespace's watch goroutine and must not block: it only queues.
type wsSubscriber interface {
	// prefix is the path whose subtree the subscriber wants.
	prefix() []string
	// memo holds the messages encoded for this revision so far, by listen: subscribers that
	// would send the same bytes (plain listens of one path) encode them once.
	deliver(rev int64, chs []wsChange, memo map[string][]byte)
	// fail ends the subscriber when its changes cannot be delivered (the watch was compacted).
	fail(err error)
}

// wsWatcher fans the kv watch of one namespace out to its listens. It stands in for the
// subscription hub of the SSE streams (hub*.go, being built beside it); the WebSocket code
// uses only watch, unwatch and waitRev, so it can move onto that hub.
//
// Invariants: changes are delivered in revision order, each revision's changes in one call;
// done is the last revision every subscriber was handed, and it only grows, so a writer that
// committed revision W and waits for done >= W knows each listener of this namespace has
// queued W's change before the writer queues its acknowledgement (the SDK requires a listener
// to see the server's data for a write before the write's ack, else it shows the old value).
type wsWatcher struct {
	ns   string
	base string // the kv key of the namespace's root
	kv   *clientv3.Client
	sctx context.Context // names the watch's gRPC stream, for RequestProgress

	mu   sync.Mutex
	subs map[wsSubscriber]struct{} // guarded by mu
	done int64                     // guarded by mu
	wake chan struct{}             // guarded by mu; closed and replaced when done grows
	err  error                     // guarded by mu; set when the watch ended for good
}

// wsWatchers holds one wsWatcher per namespace, started on first use and ended with the server.
type wsWatchers struct {
	st     *store
	ctx    context.Context
	wg     *sync.WaitGroup
	mu     sync.Mutex
	byName map[string]*wsWatcher // guarded by mu
}

// get returns the namespace's watcher, starting it (after reading the current revision, which
// it watches from) when there is none.
func (w *wsWatchers) get(ctx context.Context, ns string) (*wsWatcher, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.byName[ns]; x != nil {
		x.mu.Lock()
		ended := x.err != nil
		x.mu.Unlock()
		if !ended {
			return x, nil
		}
		// Compacted away: a new watcher starts from the current revision; its listens read afresh.
	}
	if err := w.ctx.Err(); err != nil {
		return nil, errors.New("server closing")
	}
	base := w.st.key(ns, nil)
	resp, err := w.st.kv.Get(ctx, base, clientv3.WithCountOnly())
	if err != nil {
		return nil, err
	}
	x := &wsWatcher{ns: ns, base: base, kv: w.st.kv, sctx: clientv3.WithRequireLeader(context.Background()), subs: map[wsSubscriber]struct{}{}, done: resp.Header.Revision, wake: make(chan struct{})}
	if w.byName == nil {
		w.byName = map[string]*wsWatcher{}
	}
	w.byName[ns] = x
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		x.run(w.ctx)
	}()
	return x, nil
}

// peek returns the namespace's watcher if one runs.
func (w *wsWatchers) peek(ns string) *wsWatcher {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byName[ns]
}

func (x *wsWatcher) watch(s wsSubscriber) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		return x.err
	}
	x.subs[s] = struct{}{}
	return nil
}

func (x *wsWatcher) unwatch(s wsSubscriber) {
	x.mu.Lock()
	delete(x.subs, s)
	x.mu.Unlock()
}

// waitRev returns once every subscriber was handed the changes of revision rev.
func (x *wsWatcher) waitRev(ctx context.Context, rev int64) error {
	for {
		x.mu.Lock()
		done, wake, err := x.done, x.wake, x.err
		x.mu.Unlock()
		if done >= rev {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// run watches the namespace's keys from done+1 until ctx ends, restarting the watch where it
// stopped when the kv connection drops.
func (x *wsWatcher) run(ctx context.Context) {
	defer x.end(errors.New("server closing"))
	for ctx.Err() == nil {
		x.mu.Lock()
		from := x.done + 1
		x.mu.Unlock()
		// The watch's context carries the same metadata as sctx (so RequestProgress on sctx
		// reaches its stream) and ends with ctx.
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for resp := range x.kv.Watch(wctx, x.base, clientv3.WithPrefix(), clientv3.WithRev(from)) {
			if err := resp.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) {
					cancel()
					x.end(errors.New("the listen fell behind the kv store's compaction; listen again"))
					return
				}
				break
			}
			x.dispatch(resp.Events)
			if resp.IsProgressNotify() {
				x.advance(resp.Header.Revision)
			}
		}
		cancel()
	}
}

// dispatch hands each revision's changes to the subscribers under their prefix.
func (x *wsWatcher) dispatch(evs []*clientv3.Event) {
	x.mu.Lock()
	subs := make([]wsSubscriber, 0, len(x.subs))
	for s := range x.subs {
		subs = append(subs, s)
	}
	x.mu.Unlock()
	last := int64(0)
	for i := 0; i < len(evs); {
		rev := evs[i].Kv.ModRevision
		var chs []wsChange
		for ; i < len(evs) && evs[i].Kv.ModRevision == rev; i++ {
			ev := evs[i]
			path, ok := x.path(string(ev.Kv.Key))
			if !ok {
				continue
			}
			var val any
			if ev.Type == mvccpb.PUT {
				val = leaf(ev.Kv.Value)
			}
			chs = append(chs, wsChange{path, val})
		}
		memo := map[string][]byte{}
		for _, s := range subs {
			if sel := under(chs, s.prefix()); len(sel) > 0 {
				s.deliver(rev, sel, memo)
			}
		}
		last = rev
	}
	x.advance(last)
}

// advance records that every change up to rev was handed out.
func (x *wsWatcher) advance(rev int64) {
	x.mu.Lock()
	if rev > x.done {
		x.done = rev
		close(x.wake)
		x.wake = make(chan struct{})
	}
	x.mu.Unlock()
}

// waitRead returns once every subscriber was handed the changes up to rev, a revision a read
// was made at: unlike a write's, it may hold no change of this namespace, so the kv store is
// asked for a progress notification, which says the watch has seen everything up to it.
func (x *wsWatcher) waitRead(ctx context.Context, rev int64) error {
	for {
		x.mu.Lock()
		done, wake, err := x.done, x.wake, x.err
		x.mu.Unlock()
		if done >= rev {
			return nil
		}
		if err != nil {
			return err
		}
		if err := x.kv.RequestProgress(x.sctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// path is the tree path of a kv key of this namespace (false for "<base>x/..." keys of
// another namespace sharing the prefix).
func (x *wsWatcher) path(key string) ([]string, bool) {
	rest, ok := strings.CutPrefix(key, x.base)
	if !ok || (rest != "" && rest[0] != '/') {
		return nil, false
	}
	if rest == "" {
		return []string{}, true
	}
	return strings.Split(rest[1:], "/"), true
}

// end fails every subscriber and wakes the writers waiting on this watcher.
func (x *wsWatcher) end(err error) {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return
	}
	x.err = err
	subs := x.subs
	x.subs = map[wsSubscriber]struct{}{}
	close(x.wake)
	x.wake = make(chan struct{})
	x.mu.Unlock()
	for s := range subs {
		s.fail(err)
	}
}

// under selects the changes at or below prefix, or at one of its ancestors (a leaf written or
// deleted above the prefix replaces the prefix's value).
func under(chs []wsChange, prefix []string) []wsChange {
	var out []wsChange
	for _, c := range chs {
		if isPrefix(prefix, c.path) || isPrefix(c.path, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func isPrefix(p, of []string) bool {
	if len(p) > len(of) {
		return false
	}
	for i := range p {
		if p[i] != of[i] {
			return false
		}
	}
	return true
}
