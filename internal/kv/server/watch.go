package server

import (
	"errors"
	"io"
	"sort"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// invalidWatchID is clientv3.InvalidWatchID: the id of stream-wide responses.
const invalidWatchID = -1

// maxRevsPerResponse bounds how many revisions one watch response carries while a watcher
// catches up (etcd: watchBatchMaxRevs).
const maxRevsPerResponse = 1000

type watchServer struct {
	pb.UnimplementedWatchServer
	s *Server
}

// streamWatch is one watch of a stream.
type streamWatch struct {
	id       int64
	w        *mvcc.Watcher
	progress bool // progress_notify
	fragment bool
	sent     bool  // events sent since the last progress tick
	startRev int64 // the watch's start_revision (0: none given): no progress below it
}

// Watch serves one watch stream. A receiving goroutine forwards requests; this goroutine owns all
// of the stream's watches, so they need no locks: it creates and cancels watches, and whenever
// the store's visible revision advances it pulls each watch's new events and sends them, in
// revision order, whole revisions at a time.
func (ws *watchServer) Watch(stream pb.Watch_WatchServer) error {
	s := ws.s
	ctx := stream.Context()
	reqs := make(chan *pb.WatchRequest, 64)
	recvErr := make(chan error, 1)
	// Progress requests are merged into one pending request instead of queued: this goroutine
	// must never wait for the sending one. A client whose own sending waits for the server to
	// read (clientv3 sends requests from the goroutine that also takes the responses) while this
	// stream waits for the client to read its responses would otherwise deadlock both once 64
	// requests were queued; a flood of RequestProgress did that. One notification, sent after
	// the request was read, answers every request merged into it.
	progressReq := make(chan struct{}, 1)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			if _, ok := req.RequestUnion.(*pb.WatchRequest_ProgressRequest); ok {
				select {
				case progressReq <- struct{}{}:
				default:
				}
				continue
			}
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()

	watches := map[int64]*streamWatch{}
	var order []int64 // watch ids in creation order
	nextID := int64(0)
	ticker := time.NewTicker(s.progressInterval())
	defer ticker.Stop()
	send := func(wr *pb.WatchResponse) error { return stream.Send(wr) }
	header := func() *pb.ResponseHeader {
		h := &pb.ResponseHeader{}
		s.fill(h)
		return h
	}

	// deliver sends every watch its events up to the visible revision.
	deliver := func() error {
		for _, id := range order {
			sw, ok := watches[id]
			if !ok {
				continue
			}
			for {
				evs, compactRev, err := sw.w.Next(maxRevsPerResponse)
				if err != nil {
					return togRPCError(err)
				}
				if compactRev != 0 {
					if err := send(&pb.WatchResponse{Header: header(), WatchId: id, CompactRevision: compactRev, Canceled: true}); err != nil {
						return err
					}
					delete(watches, id)
					break
				}
				if len(evs) == 0 {
					if sw.w.NextRev() > s.store.Rev() {
						break
					}
					continue // revisions without matching events
				}
				wr := &pb.WatchResponse{Header: header(), WatchId: id, Events: make([]*mvccpb.Event, len(evs))}
				for i := range evs {
					wr.Events[i] = &evs[i]
				}
				var err2 error
				if sw.fragment {
					err2 = sendFragments(wr, int(s.cfg.MaxRequestBytes), send)
				} else {
					err2 = send(wr)
				}
				if err2 != nil {
					return err2
				}
				sw.sent = true
			}
		}
		return nil
	}

	// progressAll answers a progress request: a notification at the visible revision, once
	// every watch has been sent its events up to it. The revision is read before deliver runs:
	// deliver sends every watch its events up to the revision visible then, at least rev, so
	// the notification is truthful; read after, it could name a write that became visible once
	// deliver had passed, whose event the client would then skip as covered. While a watch's
	// start revision is ahead of the store, the answer waits (etcd defers it too): a
	// notification below it would move the client's resume point back.
	deferred := false
	progressAll := func() (bool, error) {
		rev := s.store.Rev()
		for _, sw := range watches {
			if rev < sw.startRev {
				return false, nil
			}
		}
		if err := deliver(); err != nil {
			return false, err
		}
		h := header()
		h.Revision = rev
		return true, send(&pb.WatchResponse{Header: h, WatchId: invalidWatchID})
	}

	handle := func(req *pb.WatchRequest) error {
		switch uv := req.RequestUnion.(type) {
		case *pb.WatchRequest_CreateRequest:
			creq := uv.CreateRequest
			if creq == nil {
				return nil
			}
			if len(creq.Key) == 0 {
				creq.Key = []byte{0}
			}
			if creq.StartRevision < 0 {
				return send(&pb.WatchResponse{Header: header(), WatchId: invalidWatchID, Canceled: true, Created: true,
					CancelReason: rpctypes.ErrCompacted.Error()})
			}
			// Read permission is checked once, at creation, as etcd does: a revocation
			// later does not end the watch.
			if err := s.checkWatch(ctx, creq); err != nil {
				return send(&pb.WatchResponse{Header: header(), WatchId: invalidWatchID, Canceled: true, Created: true,
					CancelReason: err.Error()})
			}
			end := creq.RangeEnd
			if len(end) == 0 {
				end = nil
			} else if len(end) == 1 && end[0] == 0 {
				end = []byte{}
			}
			spec := mvcc.WatchSpec{Key: creq.Key, End: end, StartRev: creq.StartRevision, PrevKV: creq.PrevKv}
			for _, f := range creq.Filters {
				switch f {
				case pb.WatchCreateRequest_NOPUT:
					spec.NoPut = true
				case pb.WatchCreateRequest_NODELETE:
					spec.NoDelete = true
				}
			}
			id := creq.WatchId
			var err error
			if id == 0 {
				for watches[nextID] != nil {
					nextID++
				}
				id = nextID
				nextID++
			} else if watches[id] != nil {
				err = errors.New("mvcc: duplicate watch ID provided on the WatchStream")
			}
			var w *mvcc.Watcher
			if err == nil {
				w, err = s.store.NewWatcher(spec)
			}
			wr := &pb.WatchResponse{Header: header(), WatchId: id, Created: true}
			if err != nil {
				wr.WatchId, wr.Canceled, wr.CancelReason = invalidWatchID, true, err.Error()
				return send(wr)
			}
			watches[id] = &streamWatch{id: id, w: w, progress: creq.ProgressNotify, fragment: creq.Fragment, startRev: creq.StartRevision}
			order = append(order, id)
			return send(wr)
		case *pb.WatchRequest_CancelRequest:
			if uv.CancelRequest == nil {
				return nil
			}
			id := uv.CancelRequest.WatchId
			if _, ok := watches[id]; !ok {
				return nil
			}
			delete(watches, id)
			order = compactOrder(order, watches)
			return send(&pb.WatchResponse{Header: header(), WatchId: id, Canceled: true})
		}
		return nil // progress requests never get here: the receiving goroutine merges them
	}

	for {
		changed := s.store.Changed()
		if err := deliver(); err != nil {
			return err
		}
		if deferred {
			sent, err := progressAll()
			if err != nil {
				return err
			}
			deferred = !sent
		}
		select {
		case req := <-reqs:
			if err := handle(req); err != nil {
				return err
			}
		case <-progressReq:
			// Requests read before the progress request are in reqs already: they are
			// handled first (those alone, not what keeps arriving), so a watch created
			// before it is covered by its answer.
			for n := len(reqs); n > 0; n-- {
				if err := handle(<-reqs); err != nil {
					return err
				}
			}
			sent, err := progressAll()
			if err != nil {
				return err
			}
			deferred = !sent
		case <-changed:
		case <-ticker.C:
			ids := make([]int64, 0, len(watches))
			for id := range watches {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			// As for a requested notification: the revision is read once, before the
			// check that the watch has been sent everything up to it, and is the one named.
			rev := s.store.Rev()
			for _, id := range ids {
				sw := watches[id]
				if sw.progress && !sw.sent && sw.w.NextRev() > rev && rev >= sw.startRev {
					h := header()
					h.Revision = rev
					if err := send(&pb.WatchResponse{Header: h, WatchId: id}); err != nil {
						return err
					}
				}
				sw.sent = false
			}
		case err := <-recvErr:
			if err == io.EOF {
				return nil
			}
			return nil
		case <-ctx.Done():
			return nil
		case <-s.stop:
			return rpctypes.ErrGRPCStopped
		}
	}
}

func compactOrder(order []int64, watches map[int64]*streamWatch) []int64 {
	out := order[:0]
	for _, id := range order {
		if _, ok := watches[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// sendFragments is etcd's: a response larger than the request limit is split into fragments,
// each with at least one event, all but the last flagged Fragment.
func sendFragments(wr *pb.WatchResponse, maxRequestBytes int, sendFunc func(*pb.WatchResponse) error) error {
	if wr.Size() < maxRequestBytes || len(wr.Events) < 2 {
		return sendFunc(wr)
	}
	ow := *wr
	ow.Events = make([]*mvccpb.Event, 0)
	ow.Fragment = true
	var idx int
	for {
		cur := ow
		for _, ev := range wr.Events[idx:] {
			cur.Events = append(cur.Events, ev)
			if len(cur.Events) > 1 && cur.Size() >= maxRequestBytes {
				cur.Events = cur.Events[:len(cur.Events)-1]
				break
			}
			idx++
		}
		if idx == len(wr.Events) {
			cur.Fragment = false
		}
		if err := sendFunc(&cur); err != nil {
			return err
		}
		if !cur.Fragment {
			break
		}
	}
	return nil
}
