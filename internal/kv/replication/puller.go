package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/continuum-project/continuum/internal/backoff"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// The pullers.

func (r *Replicator) pull(ctx context.Context, peer string) {
	defer r.wg.Done()
	target, secure, _ := peerTarget(peer)
	opts := r.dialOptions(secure)
	l := r.newLink(ctx, peer)
	defer l.stop()
	var conn *grpc.ClientConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	retry := backoff.Backoff{Min: min(minRetryDelay, r.cfg.MaxBackoff), Max: r.cfg.MaxBackoff, Jitter: 0.5}
	for ctx.Err() == nil {
		if conn == nil {
			c, err := grpc.NewClient(target, opts...)
			if err != nil {
				r.setPeerErr(peer, err)
				return
			}
			conn = c
		}
		progressed, err := r.pullOnce(ctx, conn, peer, l)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errDirectChanged) {
			continue // the link is fine: reopen at once on it, still counted as connected
		}
		// The stream may have broken with the connection under it, unknown to either end (see
		// dial.go): the next attempt dials a new one rather than open a stream on it.
		conn.Close()
		conn = nil
		l.lost(err)
		r.setPeerErr(peer, err)
		if progressed {
			retry.Reset()
		}
		// Jittered, growing wait: a member that was down is not hammered by all its peers
		// at the same instant when it returns.
		wait := retry.Delay()
		r.log.Debug("peer stream ended", "peer", peer, "err", err, "retry-in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
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
func (r *Replicator) pullOnce(parent context.Context, conn *grpc.ClientConn, peer string, l *link) (progressed bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var callOpts []grpc.CallOption
	if r.cfg.Compressor != "" {
		callOpts = append(callOpts, grpc.UseCompressor(r.cfg.Compressor))
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
	l.requested(req.Have)
	r.mu.Lock()
	if ps := r.peers[peer]; ps != nil {
		ps.Direct = direct
	}
	r.mu.Unlock()
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
		at    time.Time          // when it arrived
		apply *mvcc.PendingApply // nil: nothing to apply (heartbeat, snapshot part)
		ack   bool               // ack even if nothing new was applied (after a snapshot)
	}
	queue := make(chan pending, 64)
	completed := make(chan struct{})
	go func() {
		defer close(completed)
		for p := range queue {
			if err := r.complete(stream, peer, l, p.at, p.batch, p.apply, p.ack); err != nil {
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
		at := time.Now()
		silence.Reset(3 * r.cfg.Heartbeat)
		r.checkClock(peer, &batch, r.now())
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
		r.learnRemovals(batch.Removed)
		r.noteFrontier(&batch)
		if len(batch.State) > 0 && r.cfg.StateIn != nil {
			r.cfg.StateIn(batch.Sender.ID, batch.State)
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
		p := pending{batch: batch, at: at}
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
func (r *Replicator) complete(stream grpc.ClientStream, peer string, l *link, at time.Time, batch SyncBatch, ap *mvcc.PendingApply, ack bool) error {
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
	l.received(&batch, at, applied, mine)
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
	if len(batch.Changes) > 0 {
		ps.Batches++
	}
	if applied > 0 {
		ps.Lag = lag
	}
	return nil
}

// errDirectChanged ends a stream whose request named a set of direct members that no longer
// holds; the puller reopens it at once.
var errDirectChanged = errors.New("the set of directly connected members changed")
