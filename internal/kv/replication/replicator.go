package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // registers the compressor peers use
	"google.golang.org/grpc/status"

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
	// Heartbeat is how often an idle Sync stream carries the sender's version vector.
	Heartbeat time.Duration
	// MaxBatchChanges and MaxBatchBytes bound one SyncBatch.
	MaxBatchChanges int
	MaxBatchBytes   int
	// Compress gzips the Sync streams this member opens.
	Compress bool
	// DialOptions are added to the peer connections (e.g. TLS credentials, a test dialer).
	DialOptions []grpc.DialOption
	// Logger receives the replicator's logs (nil: discard).
	Logger *slog.Logger
}

// DefaultConfig returns the defaults for a member replicating store.
func DefaultConfig(store *mvcc.Store) Config {
	return Config{Store: store, Heartbeat: time.Second, MaxBatchChanges: 512, MaxBatchBytes: 1 << 20}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("replication: Store is required")
	case c.Heartbeat <= 0:
		return errors.New("replication: Heartbeat must be > 0")
	case c.MaxBatchChanges <= 0 || c.MaxBatchBytes <= 0:
		return errors.New("replication: MaxBatchChanges and MaxBatchBytes must be > 0")
	}
	for _, p := range c.Peers {
		if _, err := peerTarget(p); err != nil {
			return err
		}
	}
	return nil
}

// peerTarget turns a peer URL (http://host:port) into a gRPC target.
func peerTarget(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("peer URL %q: want http://host:port", raw)
	}
	if u.Scheme == "https" {
		return "", fmt.Errorf("peer URL %q: https peers are not supported yet", raw)
	}
	return u.Host, nil
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
	// every change the peer sent, duplicates included.
	Applied  uint64
	Received uint64
	// Lag is how old (by its HLC wall time, so clock skew adds to it) the newest change from
	// this peer was when this member had applied it.
	Lag     time.Duration
	LastErr string
}

// Replicator runs a member's side of replication.
type Replicator struct {
	cfg   Config
	log   *slog.Logger
	store *mvcc.Store

	mu      sync.Mutex
	members map[uint64]Member      // learned from Sync requests and batches, by id
	peers   map[string]*PeerStatus // by peer URL
	order   []string               // the peer URLs pulled from, in the order added
	pullers map[string]context.CancelFunc
	removed map[uint64]bool // members removed (MemberRemove): never learned again
	// known is what each other member is known to hold (from its acks, its batches, and the
	// tables peers gossip), with when that was last learned; changed is closed and replaced
	// whenever known grows, to wake WaitHolders.
	known   map[uint64]mvcc.VersionVector
	knownAt map[uint64]time.Time
	changed chan struct{}
	// connChanged is closed and replaced whenever a peer stream opens or closes, so pullers
	// can reopen their streams with the new set of direct members.
	connChanged chan struct{}

	applyDelay prometheus.Histogram

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
	r := &Replicator{cfg: cfg, log: log, store: cfg.Store, members: map[uint64]Member{}, peers: map[string]*PeerStatus{}, ctx: ctx, cancel: cancel,
		known: map[uint64]mvcc.VersionVector{}, knownAt: map[uint64]time.Time{}, changed: make(chan struct{}), connChanged: make(chan struct{}),
		applyDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "continuum_kv_replication_apply_delay_seconds",
			Help:    "Time from a change's HLC wall time at its origin to its application here (includes clock skew).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		})}
	r.pullers, r.removed = map[string]context.CancelFunc{}, map[uint64]bool{}
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
			}
		}
	}()
}

// AddPeer starts pulling from the member at peer URL (MemberAdd); a URL already pulled from is
// left as it is.
func (r *Replicator) AddPeer(peer string) error {
	if _, err := peerTarget(peer); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.peers[peer]; ok || r.ctx.Err() != nil {
		return nil
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
	ids := map[uint64]bool{}
	for id := range r.members {
		ids[id] = true
	}
	for id := range r.known {
		ids[id] = true
	}
	delete(ids, r.store.MemberID())
	if len(ids)+1 < r.cfg.ClusterSize || len(ids) == 0 {
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

// The Sync service.

const syncMethod = "/continuum.kv.replication.v1.Replication/Sync"

type syncServer interface {
	serveSync(ss grpc.ServerStream) error
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "continuum.kv.replication.v1.Replication",
	HandlerType: (*syncServer)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Sync",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(srv any, ss grpc.ServerStream) error {
			return srv.(syncServer).serveSync(ss)
		},
	}},
	Metadata: "replication.proto",
}

// Register adds the Sync service to g (the server on the peer listener). g's codec must call
// the messages' Marshal and Unmarshal methods, as the kv server's codec does.
func (r *Replicator) Register(g *grpc.Server) { g.RegisterService(&serviceDesc, r) }

func (r *Replicator) serveSync(ss grpc.ServerStream) error {
	var first SyncMessage
	if err := ss.RecvMsg(&first); err != nil {
		return err
	}
	req := first.Request
	if req == nil {
		return status.Error(codes.InvalidArgument, "a Sync stream must start with a request")
	}
	if req.ClusterToken != r.cfg.ClusterToken {
		return status.Errorf(codes.FailedPrecondition, "cluster token %q does not match this member's %q", req.ClusterToken, r.cfg.ClusterToken)
	}
	if req.Caller.ID == r.store.MemberID() {
		return status.Error(codes.FailedPrecondition, "a member cannot sync from itself")
	}
	r.learn(req.Caller)
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	go func() { // end the stream when the replicator closes
		select {
		case <-r.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	r.observe(req.Caller.ID, req.Have)
	go func() { // the caller's acks: what it now holds durably
		defer cancel()
		for {
			var m SyncMessage
			if err := ss.RecvMsg(&m); err != nil {
				return
			}
			if m.Ack != nil {
				r.observe(req.Caller.ID, m.Ack)
			}
		}
	}()
	peerHas := req.Have.Clone()
	start, err := r.store.LogStart(req.Have)
	if errors.Is(err, mvcc.ErrLogTruncated) {
		// The caller lacks changes this log no longer holds (a new member, or one away for
		// longer than the log is kept): send the state, then the log after it.
		snapVV, snapRev, err := r.sendSnapshot(ctx, ss)
		if err != nil {
			return status.Errorf(codes.Unavailable, "snapshot: %v", err)
		}
		for o, seq := range snapVV {
			peerHas[o] = max(peerHas[o], seq)
		}
		start, err = snapRev+1, nil
	}
	if err != nil {
		return status.Errorf(codes.Internal, "log start: %v", err)
	}
	// Left out: the caller's own changes (it made them; echoing them back doubled the
	// traffic of every write) and the changes of members it streams from directly.
	skip := map[uint64]bool{req.Caller.ID: true}
	for _, id := range req.Direct {
		skip[id] = true
	}
	next := start
	if next == 0 {
		next = r.store.Rev() + 1
	}
	lastSent := time.Time{}
	for {
		to := r.store.Rev()
		batch := SyncBatch{}
		size := 0
		full := false
		last, err := r.store.ReadLog(next, to, func(c *mvcc.Change) bool {
			if peerHas.Has(c.ID) || skip[c.ID.Origin] {
				return true
			}
			peerHas[c.ID.Origin] = c.ID.Seq
			batch.Changes = append(batch.Changes, *c)
			for _, op := range c.Ops {
				size += len(op.Key) + len(op.Value) + 16
			}
			full = len(batch.Changes) >= r.cfg.MaxBatchChanges || size >= r.cfg.MaxBatchBytes
			return !full
		})
		if err != nil {
			return status.Errorf(codes.Internal, "read log: %v", err)
		}
		if full {
			next = last + 1
		} else if to >= next {
			next = to + 1
		}
		if len(batch.Changes) > 0 || time.Since(lastSent) >= r.cfg.Heartbeat {
			batch.Have = r.store.VersionVector()
			batch.Sender = r.Self()
			batch.SentNano = time.Now().UnixNano()
			if len(batch.Changes) == 0 || lastSent.IsZero() {
				batch.Members = r.Members()
				batch.Known = r.knownTable()
			}
			if err := ss.SendMsg(&batch); err != nil {
				return err
			}
			lastSent = time.Now()
			if full {
				continue
			}
		}
		wctx, wcancel := context.WithTimeout(ctx, r.cfg.Heartbeat-time.Since(lastSent))
		err = r.store.WaitVisible(wctx, next)
		wcancel()
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return status.Errorf(codes.Unavailable, "%v", err)
		}
	}
}

// sendSnapshot streams this member's state in batches and returns the version vector and
// revision it reflects.
func (r *Replicator) sendSnapshot(ctx context.Context, ss grpc.ServerStream) (mvcc.VersionVector, int64, error) {
	batch := SyncBatch{}
	size := 0
	send := func() error {
		batch.Sender = r.Self()
		batch.SentNano = time.Now().UnixNano()
		err := ss.SendMsg(&batch)
		batch, size = SyncBatch{}, 0
		return err
	}
	vv, rev, err := r.store.Snapshot(ctx, func(e mvcc.SnapshotEntry) error {
		batch.Snapshot = append(batch.Snapshot, e)
		size += len(e.Key) + len(e.Value) + 32
		if len(batch.Snapshot) >= r.cfg.MaxBatchChanges || size >= r.cfg.MaxBatchBytes {
			return send()
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	batch.SnapshotDone, batch.SnapshotHave = true, vv
	r.log.Info("sent a snapshot", "revision", rev, "have", vv)
	return vv, rev, send()
}

// The pullers.

func (r *Replicator) pull(ctx context.Context, peer string) {
	defer r.wg.Done()
	target, _ := peerTarget(peer)
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(wireCodec{})),
		// gRPC's default reconnect backoff grows to two minutes: a member healed after a
		// long partition would wait that long to catch up. Peers are few and a dial is cheap,
		// so retry at most every second (convergence after a heal is bounded by it).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		}),
	}, r.cfg.DialOptions...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		r.setPeerErr(peer, err)
		return
	}
	defer conn.Close()
	delay := 50 * time.Millisecond
	for ctx.Err() == nil {
		progressed, err := r.pullOnce(ctx, conn, peer)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errDirectChanged) {
			continue // the link is fine: reopen at once, still counted as connected
		}
		r.setPeerErr(peer, err)
		if progressed {
			delay = 50 * time.Millisecond
		}
		// Jittered, growing wait: a member that was down is not hammered by all its peers
		// at the same instant when it returns.
		wait := delay/2 + rand.N(delay/2+1)
		r.log.Debug("peer stream ended", "peer", peer, "err", err, "retry-in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func (r *Replicator) setPeerErr(peer string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.peers[peer]
	if ps == nil {
		return // removed meanwhile
	}
	r.setConnected(ps, false)
	if err != nil {
		ps.LastErr = err.Error()
	}
}

// setConnected records a stream opening or closing (r.mu held).
func (r *Replicator) setConnected(ps *PeerStatus, up bool) {
	if ps.Connected == up {
		return
	}
	ps.Connected = up
	close(r.connChanged)
	r.connChanged = make(chan struct{})
}

// direct returns the members this member currently streams from, but for except, and a channel
// closed when that set may have changed.
func (r *Replicator) direct(except uint64) ([]uint64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []uint64
	for _, ps := range r.peers {
		if ps.Connected && ps.Member.ID != 0 && ps.Member.ID != except {
			ids = append(ids, ps.Member.ID)
		}
	}
	slices.Sort(ids)
	return ids, r.connChanged
}

// pullOnce runs one Sync stream from peer until it breaks; progressed says it received anything.
func (r *Replicator) pullOnce(parent context.Context, conn *grpc.ClientConn, peer string) (progressed bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var callOpts []grpc.CallOption
	if r.cfg.Compress {
		callOpts = append(callOpts, grpc.UseCompressor("gzip"))
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, syncMethod, callOpts...)
	if err != nil {
		return false, err
	}
	// peerID is learned from the first batch when this peer was never heard from; the watcher
	// below reads it concurrently.
	var peerID atomic.Uint64
	r.mu.Lock()
	if ps := r.peers[peer]; ps != nil {
		peerID.Store(ps.Member.ID)
	}
	r.mu.Unlock()
	direct, connChanged := r.direct(peerID.Load())
	req := &SyncRequest{Caller: r.Self(), Have: r.store.VersionVector(), ClusterToken: r.cfg.ClusterToken, Direct: direct}
	if err := stream.SendMsg(&SyncMessage{Request: req}); err != nil {
		return false, err
	}
	// The stream is reopened when the set of direct members changes (this peer must then send
	// changes it was told to leave out, or may leave out more), and when the peer goes silent
	// for three heartbeats: a partitioned link can keep a TCP connection open for minutes.
	var reopen error
	var reopenMu sync.Mutex
	stop := func(why error) {
		reopenMu.Lock()
		if reopen == nil {
			reopen = why
		}
		reopenMu.Unlock()
		cancel()
	}
	silence := time.AfterFunc(3*r.cfg.Heartbeat, func() { stop(fmt.Errorf("no batch from %s for %v", peer, 3*r.cfg.Heartbeat)) })
	defer silence.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-connChanged:
			}
			var now []uint64
			now, connChanged = r.direct(peerID.Load())
			if !slices.Equal(now, direct) {
				stop(errDirectChanged)
				return
			}
		}
	}()
	// Received batches are handed to the writer at once and completed (awaited, acked,
	// accounted) by a second goroutine in order, so the next batch is read while this one is
	// fsynced, and batches that arrive together share one fsync. The completer is also the only
	// sender of acks on the stream.
	type pending struct {
		batch SyncBatch
		apply *mvcc.PendingApply // nil: nothing to apply (heartbeat, snapshot part)
		ack   bool               // ack even if nothing new was applied (after a snapshot)
	}
	queue := make(chan pending, 64)
	completed := make(chan struct{})
	go func() {
		defer close(completed)
		for p := range queue {
			if err := r.complete(stream, peer, p.batch, p.apply, p.ack); err != nil {
				stop(err)
				for range queue { // drain: the receiver stops sending soon
				}
				return
			}
		}
	}()
	defer func() {
		close(queue)
		<-completed
	}()
	for {
		var batch SyncBatch
		if err := stream.RecvMsg(&batch); err != nil {
			cancel()
			close(queue)
			<-completed
			queue = make(chan pending) // for the deferred close
			reopenMu.Lock()
			defer reopenMu.Unlock()
			if reopen != nil {
				return progressed, reopen
			}
			return progressed, err
		}
		silence.Reset(3 * r.cfg.Heartbeat)
		if peerID.Load() == 0 && batch.Sender.ID != 0 {
			// First contact: from now on this peer's own changes come directly, and the
			// other streams should leave them out.
			peerID.Store(batch.Sender.ID)
		}
		progressed = true
		r.learn(batch.Sender)
		for _, m := range batch.Members {
			r.learn(m)
		}
		r.observe(batch.Sender.ID, batch.Have)
		for id, vv := range batch.Known {
			r.observeGossip(id, vv)
		}
		if len(batch.Snapshot) > 0 {
			if err := r.store.InstallSnapshot(ctx, batch.Snapshot); err != nil {
				stop(fmt.Errorf("merge snapshot from %s: %w", peer, err))
				continue
			}
		}
		p := pending{batch: batch}
		if batch.SnapshotDone {
			if err := r.store.RaiseVersionVector(ctx, batch.SnapshotHave); err != nil {
				stop(fmt.Errorf("snapshot from %s: %w", peer, err))
				continue
			}
			r.log.Info("merged a snapshot", "peer", peer, "have", batch.SnapshotHave)
			p.ack = true
		}
		if len(batch.Changes) > 0 {
			ap, err := r.store.SubmitRemote(batch.Changes)
			if err != nil {
				stop(fmt.Errorf("apply changes from %s: %w", peer, err))
				continue
			}
			p.apply = ap
		}
		select {
		case queue <- p:
		case <-ctx.Done():
		}
	}
}

// complete waits for a received batch's changes to be durable, acks them to the peer and
// updates the peer's status.
func (r *Replicator) complete(stream grpc.ClientStream, peer string, batch SyncBatch, ap *mvcc.PendingApply, ack bool) error {
	var applied uint64
	var lag time.Duration
	if ap != nil {
		revs, err := ap.Wait()
		for _, rev := range revs {
			if rev != 0 {
				applied++
			}
		}
		if applied > 0 {
			lag = time.Since(time.Unix(0, batch.Changes[len(batch.Changes)-1].Time.Wall))
			r.applyDelay.Observe(max(lag, 0).Seconds())
		}
		if err != nil {
			// ErrGap means this stream skipped something (it never should); reopening
			// the stream with the current version vector repairs it.
			return fmt.Errorf("apply changes from %s: %w", peer, err)
		}
	}
	mine := r.store.VersionVector()
	if applied > 0 || ack {
		// The ack tells the sender (and through its gossip everyone) what this member now
		// holds durably: Wait returned only after the fsync.
		if err := stream.SendMsg(&SyncMessage{Ack: mine}); err != nil {
			return err
		}
	}
	var behind uint64
	for o, seq := range batch.Have {
		if seq > mine[o] {
			behind += seq - mine[o]
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.peers[peer]
	if ps == nil {
		return nil // removed meanwhile
	}
	ps.Member, ps.LastContact, ps.Have, ps.Behind, ps.LastErr = batch.Sender, time.Now(), batch.Have, behind, ""
	r.setConnected(ps, true)
	ps.Applied += applied
	ps.Received += uint64(len(batch.Changes))
	if applied > 0 {
		ps.Lag = lag
	}
	return nil
}

// errDirectChanged ends a stream whose request named a set of direct members that no longer
// holds; the puller reopens it at once.
var errDirectChanged = errors.New("the set of directly connected members changed")

// wireCodec is the client-side codec for the peer protocol's messages.
type wireCodec struct{}

type wireMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func (wireCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(wireMessage)
	if !ok {
		return nil, fmt.Errorf("replication codec: cannot marshal %T", v)
	}
	return m.Marshal()
}

func (wireCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(wireMessage)
	if !ok {
		return fmt.Errorf("replication codec: cannot unmarshal into %T", v)
	}
	return m.Unmarshal(data)
}

func (wireCodec) Name() string { return "proto" }
