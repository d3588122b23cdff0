package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// ErrClosed ends the subscriptions of a hub that was closed (the server is shutting down).
var ErrClosed = errors.New("realtime database is shutting down")

// Config configures a Hub.
type Config struct {
	// Prefix is the kv prefix every database lives under (the server's Config.Prefix).
	Prefix string
	// ListenerBufferBytes bounds the event bytes queued for one subscription that its reader has
	// not taken yet (default 4 MiB). Past it the queue is folded into the set of the listened
	// node's children it touched, sent as one patch of their current values when the reader is
	// back (see the package doc, "Slow listeners").
	ListenerBufferBytes int
	Logger              *slog.Logger
}

// Hub turns one kv watch over every database into per-listener notifications. See the package
// doc ("Listeners") for what a subscription receives and why it has neither gaps nor duplicates.
type Hub struct {
	kv  *clientv3.Client
	cfg Config
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
	// appliedCh is closed and replaced when applied grows (wait.go); guarded by mu.
	appliedCh chan struct{}
	// rulesCh, per namespace, is closed and dropped when its rules change (rules.go);
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
	ns      string
	path    []string
	qkey    string
	q       *tree.Query
	node    *trieNode
	subs    map[*Subscription]struct{}
	loading bool           // the initial (or resync) read has not been applied yet
	pending []pendingBatch // revisions dispatched while loading
	gen     int            // increments per load, so a stale loader does nothing
	tree    any            // the subtree at path, at revision rev
	view    any            // tree with the query applied (tree when none)
	rev     int64
	snap    *Event // full put of view at rev, encoded once; nil when stale
	removed bool
}

// change is one kv event below a topic: the leaf at rel is now val, or is deleted (val nil); clear
// means a leaf was put at an ancestor of the topic's path, which makes its whole value null.
type change struct {
	rel   []string
	val   tree.Leaf
	del   bool
	clear bool
}

type pendingBatch struct {
	rev     int64
	changes []change
}

// New returns a hub over kv; it starts watching at the first Subscribe.
func New(kv *clientv3.Client, cfg Config) *Hub {
	if cfg.ListenerBufferBytes <= 0 {
		cfg.ListenerBufferBytes = 4 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{kv: kv, cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, roots: map[string]*trieNode{}}
}

// Close ends every subscription with ErrClosed and stops the watch; it waits for the hub's
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
		s.end(ErrClosed)
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
		return nil, ErrClosed
	}
	qkey := ""
	var qq *tree.Query
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
