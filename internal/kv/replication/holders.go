package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// observe records that member id holds vv (learned from the member itself), waking waiters.
func (r *Replicator) observe(id uint64, vv mvcc.VersionVector) {
	r.merge(id, vv, true)
}

// observeGossip records what a peer says member id holds; a member's own word is never
// overwritten by older gossip because entries only grow.
func (r *Replicator) observeGossip(id uint64, vv mvcc.VersionVector) {
	if id == r.store.MemberID() {
		return
	}
	r.merge(id, vv, false)
}

func (r *Replicator) merge(id uint64, vv mvcc.VersionVector, direct bool) {
	if id == 0 || id == r.store.MemberID() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed[id] {
		return
	}
	cur := r.known[id]
	if cur == nil {
		cur = mvcc.VersionVector{}
		r.known[id] = cur
	}
	grew := false
	for o, seq := range vv {
		if cur[o] < seq {
			cur[o] = seq
			grew = true
		}
	}
	if direct || grew {
		r.knownAt[id] = time.Now()
	}
	if grew {
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// knownTable is what this member knows every member holds, itself included, to gossip.
func (r *Replicator) knownTable() map[uint64]mvcc.VersionVector {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[uint64]mvcc.VersionVector, len(r.known)+1)
	for id, vv := range r.known {
		out[id] = vv.Clone()
	}
	out[r.store.MemberID()] = r.store.VersionVector()
	return out
}

// Holders returns, for every member this member knows of (itself first), whether it is known to
// hold change id durably.
func (r *Replicator) Holders(id mvcc.ChangeID) []Holder {
	members := r.Members()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Holder, 0, len(members))
	for i, m := range members {
		h := Holder{Member: m}
		if i == 0 {
			h.Has = r.store.VersionVector().Has(id)
		} else {
			h.Has = r.known[m.ID].Has(id)
			if at, ok := r.knownAt[m.ID]; ok {
				h.LastContact = at.UnixNano()
			}
		}
		out = append(out, h)
	}
	return out
}

// ErrNotReplicated is returned by WaitHolders when fewer than k members held the change by the
// deadline. The change is still durable on this member and keeps replicating.
var ErrNotReplicated = errors.New("replication: not enough members hold the change")

// WaitHolders waits until at least k members (this one included) hold change id durably, or ctx
// is done; it returns how many held it when it returned.
func (r *Replicator) WaitHolders(ctx context.Context, id mvcc.ChangeID, k int) (int, error) {
	r.mu.Lock()
	close(r.hurry)
	r.hurry = make(chan struct{})
	r.mu.Unlock()
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		n := 0
		for _, h := range r.Holders(id) {
			if h.Has {
				n++
			}
		}
		if n >= k {
			return n, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return n, fmt.Errorf("%w: %d of %d members hold change %v: %v", ErrNotReplicated, n, k, id, ctx.Err())
		case <-r.ctx.Done():
			return n, fmt.Errorf("%w: %d of %d members hold change %v: member shutting down", ErrNotReplicated, n, k, id)
		}
	}
}

// The Status service (served on the client listeners).

type statusServer interface {
	holders(ctx context.Context, req *HoldersRequest) (*HoldersResponse, error)
	conflicts(ctx context.Context, req *ConflictsRequest) (*ConflictsResponse, error)
}

var statusDesc = grpc.ServiceDesc{
	ServiceName: kvclient.StatusService,
	HandlerType: (*statusServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Holders",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := new(HoldersRequest)
			if err := dec(req); err != nil {
				return nil, err
			}
			return srv.(statusServer).holders(ctx, req)
		},
	}, {
		MethodName: "Conflicts",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := new(ConflictsRequest)
			if err := dec(req); err != nil {
				return nil, err
			}
			return srv.(statusServer).conflicts(ctx, req)
		},
	}},
	Metadata: "replication.proto",
}

// RegisterStatus adds the Status service to g (a server on the client listeners).
func (r *Replicator) RegisterStatus(g *grpc.Server) { g.RegisterService(&statusDesc, r) }

func (r *Replicator) holders(_ context.Context, req *HoldersRequest) (*HoldersResponse, error) {
	id := mvcc.ChangeID(req.ID)
	if req.Revision != 0 {
		c, err := r.store.ChangeAt(req.Revision)
		switch {
		case errors.Is(err, mvcc.ErrFutureRev):
			return nil, status.Errorf(codes.OutOfRange, "revision %d is after this member's current revision %d", req.Revision, r.store.Rev())
		case errors.Is(err, mvcc.ErrCompacted):
			return nil, status.Errorf(codes.OutOfRange, "revision %d: no change recorded at it (compacted, or a revision that changed nothing)", req.Revision)
		case err != nil:
			return nil, status.Errorf(codes.Internal, "revision %d: %v", req.Revision, err)
		}
		id = c.ID
	}
	if id.Origin == 0 || id.Seq == 0 {
		return nil, status.Error(codes.InvalidArgument, "name a change: a revision, or an origin and a sequence (both non-zero)")
	}
	return &HoldersResponse{ID: kvclient.ChangeID(id), Holders: r.Holders(id)}, nil
}
