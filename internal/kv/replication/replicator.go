package replication

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// Config configures a Replicator.
type Config struct {
	// Store is this member's store; it must be opened with Replicated set.
	Store *mvcc.Store
	// Name, PeerURLs and ClientURLs describe this member to its peers (ID is the store's).
	Name       string
	PeerURLs   []string
	ClientURLs []string
	// ClusterToken must be equal on all members; a peer with another token is refused, so two
	// clusters on one network never merge by mistake.
	ClusterToken string
	// Peers are the peer URLs this member pulls from: all other members, or a subset (partial
	// mesh; changes still reach every member through the others).
	Peers []string
	// ClusterSize is the number of members (this one included). Until this member knows what
	// that many members hold, it keeps its whole change log (see Stable).
	ClusterSize int
	// Heartbeat is how often an idle Sync stream carries the sender's version vector. A stream
	// silent for three heartbeats is taken for dead and reopened on a new connection.
	Heartbeat time.Duration
	// DialTimeout bounds one attempt to connect to a peer (the TCP and HTTP/2 handshakes, about
	// two round trips); MaxBackoff bounds the wait between two attempts to open a stream. A link
	// that heals is found within about DialTimeout + MaxBackoff (750 ms by default) plus a round
	// trip. On links slower than about 150 ms round trip, raise DialTimeout to at least three
	// round trips, or no attempt ever completes.
	DialTimeout time.Duration
	MaxBackoff  time.Duration
	// MaxBatchChanges and MaxBatchBytes bound one SyncBatch.
	MaxBatchChanges int
	MaxBatchBytes   int
	// Linger is how long a Sync stream waits after sending changes before it sends the next
	// ones, so that a busy writer's changes travel several to a message (0: each as soon as it
	// is visible). It adds at most Linger to replication lag and bounds a stream to about
	// 1/Linger messages per second.
	Linger time.Duration
	// MaxClockOffset is how far ahead of this member's clock a peer's clock may run before it is
	// reported (0: never). A batch whose send time or change timestamps are further ahead is
	// counted, logged and exported (continuum_kv_replication_peer_clock_offset_exceeded_total), as
	// CockroachDB's max-offset check does; the changes are still applied: the hybrid logical
	// clock keeps order across any skew, but a clock far ahead drags every member's timestamps
	// with it, which an operator should see.
	MaxClockOffset time.Duration
	// Now is the physical clock the offset is measured against (nil: time.Now; tests inject one).
	Now func() time.Time
	// Compressor compresses the Sync streams this member opens: CompressorS2, CompressorGzip,
	// or "" (none). Both ends must have it registered; this package registers both.
	Compressor string
	// TLS is the client configuration for https:// peer URLs (its certificate is this member's
	// client certificate, its RootCAs verify the peers); nil: the system's roots, no client
	// certificate. http:// peers are dialed in plaintext.
	TLS *tls.Config
	// DialOptions are added to the peer connections (e.g. a test dialer).
	DialOptions []grpc.DialOption
	// Logger receives the replicator's logs (nil: discard).
	Logger *slog.Logger
	// OnRemoved, if set, is called when a peer reports a member removed from the cluster
	// (MemberRemove asked of some member) that this member did not know was removed, with the
	// member as this one knew it (only its ID if it never heard of it). The replicator has
	// already stopped pulling from it and forgotten it; if it is this member, it has stopped
	// pulling from every peer. Called from a puller: it must not block for long.
	OnRemoved func(m Member)
	// OnCatchUp, if set, is called each time this member, after a stream to a peer (re)opened,
	// holds everything the peer held at that moment (the "caught up with peer" log line). It
	// is how a member reports convergence after a partition heals. Called with a link's lock
	// held: it must not block for long.
	OnCatchUp func(c CatchUp)
	// StateOut and StateIn replicate a small state of the layer above beside the data (the kv
	// server's auth store): StateOut's copy rides on each Sync stream's first batch and on its
	// heartbeats (with the frontier, also under a steady stream of changes), and StateIn gets
	// every copy a peer sends, with the sender's id. The layer above decides which copy wins
	// (it must be a deterministic choice, so that every member ends with the same). StateIn is
	// called from a puller: it must not block for long.
	StateOut func() []byte
	StateIn  func(from uint64, state []byte)
}

// CatchUp is one catch-up with a peer: its stream opened at ReconnectAt and at CaughtUpAt this
// member held everything the peer held at ReconnectAt.
type CatchUp struct {
	Peer, URL   string
	ReconnectAt time.Time
	CaughtUpAt  time.Time
	// DisconnectedFor is how long the peer had been unreachable (0 for a first connection).
	DisconnectedFor time.Duration
	Changes         uint64
}

// Defaults of the Config fields that `continuum kv` exposes as flags (declared once, here).
const (
	DefaultDialTimeout = 500 * time.Millisecond
	DefaultMaxBackoff  = 250 * time.Millisecond
	// DefaultLinger gathers a peer's next changes for 3 ms after a send: fewer, larger messages
	// under load for at most 3 ms more replication lag.
	DefaultLinger = 3 * time.Millisecond
)

// DefaultConfig returns the defaults for a member replicating store.
func DefaultConfig(store *mvcc.Store) Config {
	return Config{Store: store, Heartbeat: time.Second, DialTimeout: DefaultDialTimeout, MaxBackoff: DefaultMaxBackoff,
		MaxBatchChanges: 512, MaxBatchBytes: 1 << 20, Linger: DefaultLinger, MaxClockOffset: DefaultMaxClockOffset}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("replication: Store is required")
	case c.Heartbeat <= 0:
		return errors.New("replication: Heartbeat must be > 0")
	case c.DialTimeout <= 0:
		return errors.New("replication: DialTimeout must be > 0")
	case c.MaxBackoff <= 0:
		return errors.New("replication: MaxBackoff must be > 0")
	case c.Linger < 0 || c.Linger >= c.Heartbeat:
		// A stream silent for three heartbeats is taken for dead; a linger that long is no
		// batching any more.
		return errors.New("replication: Linger must be >= 0 and shorter than Heartbeat")
	case c.MaxBatchChanges <= 0 || c.MaxBatchBytes <= 0:
		return errors.New("replication: MaxBatchChanges and MaxBatchBytes must be > 0")
	case c.MaxClockOffset < 0:
		return errors.New("replication: MaxClockOffset must be >= 0 (0: no check)")
	}
	for _, p := range c.Peers {
		if _, _, err := peerTarget(p); err != nil {
			return err
		}
	}
	return nil
}

// peerTarget turns a peer URL (http://host:port or https://host:port) into a gRPC target and
// whether to dial it with TLS.
func peerTarget(raw string) (target string, secure bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false, fmt.Errorf("peer URL %q: want http://host:port or https://host:port", raw)
	}
	return u.Host, u.Scheme == "https", nil
}

// PeerStatus is what a member knows of one peer it pulls from.
type PeerStatus struct {
	URL         string
	Member      Member // as the peer described itself (zero until first contact)
	Connected   bool
	LastContact time.Time
	// Have is the peer's version vector as of its last batch; Behind is how many changes this
	// member still lacks from it, by that vector.
	Have   mvcc.VersionVector
	Behind uint64
	// Applied counts the changes this member took from the peer (new to it); Received counts
	// every change the peer sent, duplicates included, and Batches the messages that carried
	// them (Received / Batches is how well the peer's sends are batched, see Config.Linger).
	Applied  uint64
	Received uint64
	Batches  uint64
	// Lag is how old (by its HLC wall time, so clock skew adds to it) the newest change from
	// this peer was when this member had applied it.
	Lag     time.Duration
	LastErr string
	// ClockAhead is how far the peer's clock ran ahead of this member's at its last batch (its
	// send time minus the arrival time here, so a network delay makes it read low; negative: the
	// peer's clock is behind). OffsetExceeded counts the batches whose send time or change
	// timestamps were more than Config.MaxClockOffset ahead.
	ClockAhead     time.Duration
	OffsetExceeded uint64
	// Direct are the members whose own changes the current stream asked this peer to leave out,
	// because this member streams from them directly; a stream is reopened when that set changes.
	Direct []uint64
}

// Replicator runs a member's side of replication.
type Replicator struct {
	cfg   Config
	log   *slog.Logger
	store *mvcc.Store

	mu      sync.Mutex
	members map[uint64]Member      // learned from Sync requests and batches, by id
	peers   map[string]*PeerStatus // by peer URL
	// offsetLogged is when the clock-offset alarm last logged for a peer (by URL).
	offsetLogged map[string]time.Time
	order        []string // the peer URLs pulled from, in the order added
	pullers      map[string]context.CancelFunc
	removed      map[uint64]bool // members removed (MemberRemove): never learned again
	// selfRemoved: a peer reported this member removed; it no longer pulls from anyone.
	selfRemoved bool
	// Collecting deletions (mvcc/frontier.go), by member: the latest frontier it reported,
	// the latest one this member holds the changes of, and its collect bound; collectOwn is
	// this member's own bound, sent to peers.
	frontier   map[uint64][]frontierReport
	reached    map[uint64]frontierReport
	collectOf  map[uint64]int64
	collectOwn int64
	// known is what each other member is known to hold (from its acks, its batches, and the
	// tables peers gossip), with when that was last learned; changed is closed and replaced
	// whenever known grows, to wake WaitHolders.
	known   map[uint64]mvcc.VersionVector
	knownAt map[uint64]time.Time
	changed chan struct{}
	// connChanged is closed and replaced whenever a peer stream opens or closes, so pullers
	// can reopen their streams with the new set of direct members.
	connChanged chan struct{}
	// hurry is closed and replaced whenever a client starts waiting for a change to reach
	// other members (WaitHolders), so that Sync streams lingering after a send (Config.Linger)
	// send it at once: batching must not delay a write whose client waits for its copies.
	hurry chan struct{}

	applyDelay prometheus.Histogram
	catchUp    *prometheus.HistogramVec // by peer (see link)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a replicator; Register its service on the peer listener's gRPC server, then Start.
func New(cfg Config) (*Replicator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replicator{cfg: cfg, log: log, store: cfg.Store, members: map[uint64]Member{}, peers: map[string]*PeerStatus{}, offsetLogged: map[string]time.Time{}, ctx: ctx, cancel: cancel,
		known: map[uint64]mvcc.VersionVector{}, knownAt: map[uint64]time.Time{}, changed: make(chan struct{}), connChanged: make(chan struct{}), hurry: make(chan struct{}),
		applyDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "continuum_kv_replication_apply_delay_seconds",
			Help:    "Time from a change's HLC wall time at its origin to its application here (includes clock skew).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		catchUp: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "continuum_kv_replication_catchup_seconds",
			Help: "Time from a Sync stream's opening to this member holding every change the peer held then " +
				"(reconnections, and streams that found this member behind).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"peer"})}
	r.pullers, r.removed = map[string]context.CancelFunc{}, map[uint64]bool{}
	r.frontier, r.reached, r.collectOf = map[uint64][]frontierReport{}, map[uint64]frontierReport{}, map[uint64]int64{}
	return r, nil
}

// Self describes this member.
func (r *Replicator) Self() Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Member{ID: r.store.MemberID(), Name: r.cfg.Name, PeerURLs: r.cfg.PeerURLs, ClientURLs: r.cfg.ClientURLs}
}

// SetClientURLs sets the client URLs this member announces (before Start).
func (r *Replicator) SetClientURLs(urls []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg.ClientURLs = urls
}

// Start starts pulling from every peer, and keeps the store told which changes are stable.
func (r *Replicator) Start() {
	for _, p := range r.cfg.Peers {
		_ = r.AddPeer(p)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(r.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-r.ctx.Done():
				return
			case <-t.C:
				r.store.SetStable(r.Stable())
				r.updateCollect()
			}
		}
	}()
}

// AddPeer starts pulling from the member at peer URL (MemberAdd); a URL already pulled from is
// left as it is.
func (r *Replicator) AddPeer(peer string) error {
	if _, _, err := peerTarget(peer); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.peers[peer]; ok || r.ctx.Err() != nil {
		return nil
	}
	if r.selfRemoved {
		return errors.New("this member was removed from the cluster")
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.peers[peer] = &PeerStatus{URL: peer}
	r.order = append(r.order, peer)
	r.pullers[peer] = cancel
	r.wg.Add(1)
	go r.pull(ctx, peer)
	return nil
}

// RemovePeer stops pulling from peer URL.
func (r *Replicator) RemovePeer(peer string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.pullers[peer]; ok {
		cancel()
		delete(r.pullers, peer)
	}
	if ps, ok := r.peers[peer]; ok {
		r.setConnected(ps, false)
		delete(r.peers, peer)
	}
	r.order = slices.DeleteFunc(r.order, func(p string) bool { return p == peer })
}

// Forget removes member id from this member's view of the cluster (MemberRemove): it is no longer
// listed, no longer counted for Stable (so the change log can be collected without it), and is
// not learned again from peers' gossip.
func (r *Replicator) Forget(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed[id] = true
	delete(r.members, id)
	delete(r.known, id)
	delete(r.knownAt, id)
	delete(r.frontier, id)
	delete(r.reached, id)
	delete(r.collectOf, id)
}

// RemovedIDs lists the members removed from the cluster that this member knows of, ascending.
// Batches carry the list, so a removal asked of one member spreads to all.
func (r *Replicator) RemovedIDs() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.removed))
}

// isRemoved reports whether member id was removed from the cluster.
func (r *Replicator) isRemoved(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed[id]
}

// ApplyRemovals applies removals learned elsewhere (a restart replaying what a peer reported)
// as if a peer reported them now.
func (r *Replicator) ApplyRemovals(ids ...uint64) { r.learnRemovals(ids) }

// learnRemovals applies the removals a peer reports: a removed member is forgotten and no longer
// pulled from; if this member is the one removed, it stops pulling from everyone (as etcd's
// removed member stops taking part in the cluster) and keeps serving its own clients alone.
func (r *Replicator) learnRemovals(ids []uint64) {
	self := r.store.MemberID()
	for _, id := range ids {
		r.mu.Lock()
		if r.removed[id] || (id == self && r.selfRemoved) {
			r.mu.Unlock()
			continue
		}
		m, ok := r.members[id]
		if !ok {
			m = Member{ID: id}
		}
		var stop []string
		if id == self {
			r.selfRemoved = true
			m = Member{ID: id, Name: r.cfg.Name, PeerURLs: r.cfg.PeerURLs}
			stop = slices.Clone(r.order)
		}
		r.mu.Unlock()
		if id == self {
			r.log.Error("a peer reports this member removed from the cluster (MemberRemove): it no longer replicates and serves its clients alone; start it with a new data directory to join again")
		} else {
			r.log.Info("member removed from the cluster, as a peer reports", "member", fmt.Sprintf("%x", id), "name", m.Name)
			r.Forget(id)
			stop = m.PeerURLs
		}
		for _, u := range stop {
			r.RemovePeer(u)
		}
		if r.cfg.OnRemoved != nil {
			r.cfg.OnRemoved(m)
		}
	}
}

// Stable is what every member of the cluster is known to hold durably: per origin, the minimum
// over the members of what each acknowledged (directly or through gossip). Changes within it are
// never needed by a peer again, so compaction may drop them from the change log. It is empty
// while fewer than ClusterSize members have been heard of: a member that was never heard from
// may hold nothing.
func (r *Replicator) Stable() mvcc.VersionVector {
	out := r.store.VersionVector()
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, complete := r.othersLocked()
	if !complete {
		return mvcc.VersionVector{}
	}
	for id := range ids {
		vv := r.known[id]
		for o, seq := range out {
			if vv[o] < seq {
				out[o] = vv[o]
			}
		}
	}
	return out
}

// othersLocked returns the other members this member has heard of (directly or through gossip),
// and whether that is the whole cluster as far as it can tell: at least ClusterSize members with
// itself, and at least one other (r.mu held). Removed members no longer count towards the size
// to wait for. (One that was added at run time and removed lowers the count below the initial
// cluster's size: a member not heard from yet may then get a snapshot rather than the log, and
// hold collection back once heard from, which is correct, only later.)
func (r *Replicator) othersLocked() (ids map[uint64]bool, complete bool) {
	ids = map[uint64]bool{}
	for id := range r.members {
		ids[id] = true
	}
	for id := range r.known {
		ids[id] = true
	}
	delete(ids, r.store.MemberID())
	return ids, len(ids) > 0 && len(ids)+1 >= r.cfg.ClusterSize-len(r.removed)
}

// Close stops the pullers and ends the Sync streams this member serves.
func (r *Replicator) Close() {
	r.cancel()
	r.wg.Wait()
}

// Members returns this member and every member it has heard of, by id.
func (r *Replicator) Members() []Member {
	self := r.Self()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Member{self}
	for id, m := range r.members {
		if id != out[0].ID {
			out = append(out, m)
		}
	}
	slices.SortFunc(out[1:], func(a, b Member) int { return cmpString(a.Name, b.Name) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Peers returns the status of every peer this member pulls from.
func (r *Replicator) Peers() []PeerStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PeerStatus, 0, len(r.peers))
	for _, p := range r.order {
		ps := *r.peers[p]
		ps.Have = ps.Have.Clone()
		out = append(out, ps)
	}
	return out
}

func (r *Replicator) learn(m Member) {
	if m.ID == 0 || m.ID == r.store.MemberID() {
		return
	}
	r.mu.Lock()
	if !r.removed[m.ID] {
		r.members[m.ID] = m
	}
	r.mu.Unlock()
}
