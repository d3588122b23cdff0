package replication

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

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
	if r.isRemoved(req.Caller.ID) {
		// Tell it, in the one way it reads: a batch naming it removed.
		_ = ss.SendMsg(&SyncBatch{Sender: r.Self(), SentNano: r.now().UnixNano(), Have: r.store.VersionVector(),
			Removed: []uint64{req.Caller.ID}})
		return status.Errorf(codes.FailedPrecondition, "member %x was removed from the cluster", req.Caller.ID)
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
	lastSent, lastFrontier := time.Time{}, time.Time{}
	for {
		// Taken before reading the log: a client that starts waiting for copies after this
		// closes it; one that started before waits for a change this read already sees.
		r.mu.Lock()
		hurry := r.hurry
		r.mu.Unlock()
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
			batch.SentNano = r.now().UnixNano()
			if len(batch.Changes) == 0 || lastSent.IsZero() {
				batch.Members = r.Members()
				batch.Removed = r.RemovedIDs()
				batch.Known = r.knownTable()
			}
			if lastFrontier.IsZero() || time.Since(lastFrontier) >= r.cfg.Heartbeat {
				// Also under a steady stream of changes (collect.go).
				batch.FrontierSeq, batch.FrontierWall = r.store.Frontier()
				batch.CollectBefore = r.ownCollect()
				batch.Bounds = r.bounds()
				if r.cfg.StateOut != nil {
					batch.State = r.cfg.StateOut()
				}
				lastFrontier = time.Now()
			}
			if err := ss.SendMsg(&batch); err != nil {
				return err
			}
			lastSent = time.Now()
			if full {
				continue
			}
			if len(batch.Changes) > 0 && r.cfg.Linger > 0 {
				// Let the next changes gather for a moment rather than sending each write
				// in a message of its own: under a steady stream of writes every message
				// costs a compression, a write through the network and, at the peer, a
				// commit with an fsync and an ack, whatever it carries. A change made after
				// a quiet spell still goes at once; one made right after a send waits at
				// most Linger, unless a client waits for copies of a write (WaitHolders).
				t := time.NewTimer(r.cfg.Linger)
				select {
				case <-t.C:
				case <-hurry:
					t.Stop()
				case <-ctx.Done():
					t.Stop()
					return status.FromContextError(ctx.Err()).Err()
				}
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
		batch.SentNano = r.now().UnixNano()
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
