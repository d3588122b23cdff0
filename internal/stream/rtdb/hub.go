package rtdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrHubClosed ends the subscriptions of a hub that was closed (the server is shutting down).
var ErrHubClosed = errors.New("realtime database is shutting down")

// HubConfig configures a Hub.
type HubConfig struct {
	// Prefix is the kv prefix every database lives under (the server's Config.Prefix).
	Prefix string
	// ListenerBufferBytes bounds the event bytes queued for one subscription that its reader has
	// not taken yet (default 4 MiB). Past it the queue is folded into the set of the listened
	// node's children it touched, sent as one patch of their current values when the reader is
	// back (see the package doc, "Slow listeners").
	ListenerBufferBytes int
	Logger              *slog.Logger
}

// Event is one notification to a listener, as Firebase expresses it: a "put" replaces the value
// at Path (relative to the listener's path, "/" for the listener's own node) by Data, a "patch"
// replaces each named child of the node at Path by its value in Data (null deletes it). Events
// are shared by every subscription of the same path and query: never modify one.
type Event struct {
	Type string          // "put" or "patch"
	Path string          // "/" or "/a/b", relative to the subscribed path
	Data json.RawMessage // JSON; for a patch an object of children
	Rev  int64           // the kv revision whose state the event brings the listener to

	// kids names the children a patch at "/" replaces (set by the hub): a slow listener's
	// overflowing queue folds events into the children they touched (hub_subscription.go).
	kids []string

	sseOnce sync.Once
	sse     []byte
	// The WebSocket data push of an untagged listen (ws_listen.go), encoded once: an event is
	// shared only by the subscriptions of one topic, so every reader asks for the same path.
	wsOnce sync.Once
	ws     []byte
}

// SSE is the event as a text/event-stream frame, encoded once for all its listeners.
func (e *Event) SSE() []byte {
	e.sseOnce.Do(func() {
		b := make([]byte, 0, len(e.Data)+len(e.Path)+40)
		b = append(b, "event: "...)
		b = append(b, e.Type...)
		b = append(b, "\ndata: {\"path\":"...)
		p, _ := json.Marshal(e.Path)
		b = append(b, p...)
		b = append(b, ",\"data\":"...)
		b = append(b, e.Data...)
		b = append(b, "}\n\n"...)
		e.sse = b
	})
	return e.sse
}

// Query is a parsed listener query (orderBy with limits and bounds), as REST's parameters give it.
type Query struct {
	q   *query
	key string // identifies equal queries, so their listeners share one cache
}

// ParseQuery parses orderBy, limitToFirst, limitToLast, startAt, endAt and equalTo (JSON values,
// as in a REST URL); it returns nil, nil when there is no orderBy (the plain value is listened to).
func ParseQuery(v url.Values) (*Query, error) {
	q, err := parseQuery(v)
	if err != nil || q == nil {
		return nil, err
	}
	return queryOf(q), nil
}

// queryOf wraps a parsed query; equal queries, from REST or the WebSocket protocol, get equal
// keys and so share one topic.
func queryOf(q *query) *Query {
	return &Query{q: q, key: fmt.Sprintf("%q|%v|%v|%v|%v|%v|%d|%v|%d", q.orderBy, q.hasStart, q.start,
		q.hasEnd, q.end, q.limitF, q.first, q.limit, q.last)}
}

// Hub turns one kv watch over every database into per-listener notifications. See the package
// doc ("Listeners") for what a subscription receives and why it has neither gaps nor duplicates.
type Hub struct {
	kv  *clientv3.Client
	cfg HubConfig
	log *slog.Logger

	ctx    context.Context // ends when the hub closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the watch loop and loaders

	startMu sync.Mutex // serializes starting the watch
	started bool       // guarded by startMu

	mu      sync.Mutex
	closed  bool                 // guarded by mu
	roots   map[string]*trieNode // per namespace, the topics by path; guarded by mu
	applied int64                // last revision dispatched; guarded by mu
	// appliedCh is closed and replaced when applied grows (hub_wait.go); guarded by mu.
	appliedCh chan struct{}
	// rulesCh, per namespace, is closed and dropped when its rules change (hub_rules.go);
	// guarded by mu.
	rulesCh map[string]chan struct{}
}

// trieNode holds the topics at one path and the nodes below it; guarded by Hub.mu.
type trieNode struct {
	parent *trieNode
	seg    string
	kids   map[string]*trieNode
	topics map[string]*topic // by query key ("" for none)
}

// topic is what the listeners of one (namespace, path, query) share: the cached subtree, kept
// current by the dispatcher, and the view they were last sent. All fields are guarded by Hub.mu.
type topic struct {
	ns        string
	path      []string
	qkey      string
	q         *query
	node      *trieNode
	subs      map[*Subscription]struct{}
	loading   bool           // the initial (or resync) read has not been applied yet
	pending   []pendingBatch // revisions dispatched while loading
	gen       int            // increments per load, so a stale loader does nothing
	tree      any            // the subtree at path, at revision rev
	view      any            // tree with the query applied (tree when none)
	rev       int64
	snap      *Event // full put of view at rev, encoded once; nil when stale
	removed   bool
	keyPrefix string
}

// change is one kv event below a topic: the leaf at rel is now val, or is deleted (val nil); clear
// means a leaf was put at an ancestor of the topic's path, which makes its whole value null.
type change struct {
	rel   []string
	val   leaf
	del   bool
	clear bool
}

type pendingBatch struct {
	rev     int64
	changes []change
}

// NewHub returns a hub over kv; it starts watching at the first Subscribe.
func NewHub(kv *clientv3.Client, cfg HubConfig) *Hub {
	if cfg.ListenerBufferBytes <= 0 {
		cfg.ListenerBufferBytes = 4 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{kv: kv, cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, roots: map[string]*trieNode{}}
}

// Close ends every subscription with ErrHubClosed and stops the watch; it waits for the hub's
// goroutines.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	var subs []*Subscription
	for _, root := range h.roots {
		walkTopics(root, func(t *topic) {
			for s := range t.subs {
				subs = append(subs, s)
			}
		})
	}
	h.roots = map[string]*trieNode{}
	h.rulesChangedLocked("", true) // its waiters then find their connection or stream ending
	h.mu.Unlock()
	h.cancel()
	for _, s := range subs {
		s.end(ErrHubClosed)
	}
	h.wg.Wait()
}

// Subscribe listens to the value at path in database ns (with q, or nil for the whole value).
// The subscription's first event is a put of the whole value (path "/"), then one event per kv
// revision that changed what it sees. ctx bounds only the call (the first one starts the kv
// watch); the subscription lasts until Close or the hub's Close. Close it when done.
func (h *Hub) Subscribe(ctx context.Context, ns string, path []string, q *Query) (*Subscription, error) {
	return h.SubscribeNotify(ctx, ns, path, q, make(chan struct{}, 1))
}

// SubscribeNotify is Subscribe with the subscription signalling notify (capacity 1, signalled
// without blocking) instead of a channel of its own, so that one reader can serve several
// subscriptions from one goroutine: after each signal it calls TryNext on every one of them
// (a signal stands for any of them, so none is lost). Such a reader must not call Next, which
// would take a signal meant for another subscription. Ready returns notify.
func (h *Hub) SubscribeNotify(ctx context.Context, ns string, path []string, q *Query, notify chan struct{}) (*Subscription, error) {
	if cap(notify) != 1 {
		return nil, fmt.Errorf("subscribe: notify channel has capacity %d, want 1", cap(notify))
	}
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	s := &Subscription{h: h, wake: notify, limit: h.cfg.ListenerBufferBytes}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrHubClosed
	}
	qkey := ""
	var qq *query
	if q != nil {
		qkey, qq = q.key, q.q
	}
	root := h.roots[ns]
	if root == nil {
		root = &trieNode{}
		h.roots[ns] = root
	}
	n := root
	for _, seg := range path {
		k := n.kids[seg]
		if k == nil {
			if n.kids == nil {
				n.kids = map[string]*trieNode{}
			}
			k = &trieNode{parent: n, seg: seg}
			n.kids[seg] = k
		}
		n = k
	}
	t := n.topics[qkey]
	if t == nil {
		t = &topic{ns: ns, path: append([]string(nil), path...), qkey: qkey, q: qq, node: n, subs: map[*Subscription]struct{}{}}
		if n.topics == nil {
			n.topics = map[string]*topic{}
		}
		n.topics[qkey] = t
		h.load(t)
	}
	s.t = t
	t.subs[s] = struct{}{}
	if !t.loading { // a loading topic sends its snapshot to all its subscriptions when the read is in
		s.push(t.snapshot())
	}
	return s, nil
}

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
		return ErrHubClosed
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
		st := &store{kv: h.kv, prefix: h.cfg.Prefix}
		var snap *snapshot
		var err error
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
			snap, err = st.read(ctx, t.ns, [][]string{t.path})
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
		t.tree, t.rev = snap.trees[0], snap.rev
		for _, b := range t.pending {
			if b.rev > snap.rev {
				for _, c := range b.changes {
					t.tree = applyChange(t.tree, c)
				}
				t.rev = b.rev
			}
		}
		t.pending, t.loading = nil, false
		t.view = t.tree
		if t.q != nil {
			t.view = t.q.apply(t.tree)
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
		t.snap = &Event{Type: "put", Path: "/", Data: encode(t.view, false), Rev: t.rev}
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
				rev = r + 1
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
		rev = h.resync()
	}
}

// resync finds the current revision (retrying until the kv answers), marks every topic loading
// and reloads it; the next watch starts after that revision.
func (h *Hub) resync() int64 {
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
				add(t, change{rel: segs[d:], val: leaf(ev.Kv.Value), del: del})
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

// unsubscribe removes s from its topic, and the topic (and empty trie nodes) when it was the last.
func (h *Hub) unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := s.t
	if t == nil || t.removed {
		return
	}
	delete(t.subs, s)
	if len(t.subs) > 0 {
		return
	}
	t.removed = true
	n := t.node
	delete(n.topics, t.qkey)
	for n.parent != nil && len(n.topics) == 0 && len(n.kids) == 0 {
		delete(n.parent.kids, n.seg)
		n = n.parent
	}
	if n.parent == nil && len(n.topics) == 0 && len(n.kids) == 0 && h.roots[t.ns] == n {
		delete(h.roots, t.ns)
	}
}
