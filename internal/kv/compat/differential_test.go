package compat

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// diffStore is one store under a differential run and what it has answered so far.
type diffStore struct {
	name      string
	s         *server
	c         *clientv3.Client
	kv        pb.KVClient
	lease     pb.LeaseClient
	maint     pb.MaintenanceClient
	rev       int64 // latest revision a response reported
	compacted int64 // latest successful compaction

	watchCtx context.Context // one context: all watches share a gRPC stream
	watches  []*watchLog
}

func newDiffStore(t *testing.T, name string, s *server) *diffStore {
	c := s.client(t)
	conn := c.ActiveConnection()
	return &diffStore{
		name: name, s: s, c: c, rev: 1,
		kv: pb.NewKVClient(conn), lease: pb.NewLeaseClient(conn), maint: pb.NewMaintenanceClient(conn),
		watchCtx: watchCtx(t),
	}
}

// watchLog collects what one watch delivered, rendered.
type watchLog struct {
	mu       sync.Mutex
	events   []string
	progress int64 // highest progress-notification revision
	done     bool  // canceled or closed
}

func (w *watchLog) snapshot() (events []string, progress int64, done bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events), w.progress, w.done
}

func (w *watchLog) collect(wc clientv3.WatchChan) {
	for r := range wc {
		w.mu.Lock()
		if r.CompactRevision != 0 {
			w.events = append(w.events, fmt.Sprintf("compacted at %d", r.CompactRevision))
		}
		if r.Canceled {
			w.events = append(w.events, "canceled")
			w.done = true
		}
		if r.IsProgressNotify() {
			w.progress = max(w.progress, r.Header.Revision)
		}
		for _, ev := range r.Events {
			w.events = append(w.events, renderEvent(ev))
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

func renderEvent(ev *clientv3.Event) string {
	s := ev.Type.String() + " " + ev.Kv.String()
	if ev.PrevKv != nil {
		s += " prev{" + ev.PrevKv.String() + "}"
	}
	return s
}

// apply sends req and returns the rendered, normalised response or error.
func (st *diffStore) apply(t *testing.T, req any) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		resp interface{ String() string }
		hdr  **pb.ResponseHeader
		err  error
	)
	switch r := req.(type) {
	case *pb.RangeRequest:
		var x *pb.RangeResponse
		if x, err = st.kv.Range(ctx, r); err == nil {
			normaliseSort(r, x.Kvs)
			resp, hdr = x, &x.Header
		}
	case *pb.PutRequest:
		var x *pb.PutResponse
		if x, err = st.kv.Put(ctx, r); err == nil {
			resp, hdr = x, &x.Header
		}
	case *pb.DeleteRangeRequest:
		var x *pb.DeleteRangeResponse
		if x, err = st.kv.DeleteRange(ctx, r); err == nil {
			resp, hdr = x, &x.Header
		}
	case *pb.TxnRequest:
		var x *pb.TxnResponse
		if x, err = st.kv.Txn(ctx, r); err == nil {
			resp, hdr = x, &x.Header
			clearInnerHeaders(x)
		}
	case *pb.CompactionRequest:
		var x *pb.CompactionResponse
		if x, err = st.kv.Compact(ctx, r); err == nil {
			resp, hdr = x, &x.Header
			st.compacted = r.Revision
		}
	case *pb.LeaseGrantRequest:
		var x *pb.LeaseGrantResponse
		if x, err = st.lease.LeaseGrant(ctx, r); err == nil {
			resp, hdr = x, &x.Header
		}
	case *pb.LeaseRevokeRequest:
		var x *pb.LeaseRevokeResponse
		if x, err = st.lease.LeaseRevoke(ctx, r); err == nil {
			resp, hdr = x, &x.Header
		}
	case *pb.LeaseTimeToLiveRequest:
		var x *pb.LeaseTimeToLiveResponse
		if x, err = st.lease.LeaseTimeToLive(ctx, r); err == nil {
			if x.TTL > 0 { // the remaining time is the clock's, not the store's
				x.TTL = 1
			}
			slices.SortFunc(x.Keys, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
			resp, hdr = x, &x.Header
		}
	case *pb.LeaseLeasesRequest:
		var x *pb.LeaseLeasesResponse
		if x, err = st.lease.LeaseLeases(ctx, r); err == nil {
			slices.SortFunc(x.Leases, func(a, b *pb.LeaseStatus) int { return cmp.Compare(a.ID, b.ID) })
			resp, hdr = x, &x.Header
		}
	case *pb.StatusRequest:
		var x *pb.StatusResponse
		if x, err = st.maint.Status(ctx, r); err == nil {
			// Only the revision is the data's; versions, sizes and raft fields are the member's.
			resp = stringer(fmt.Sprintf("status revision %d", x.Header.Revision))
			hdr = &x.Header
		}
	case *watchOpen:
		return st.openWatch(t, r)
	default:
		t.Fatalf("unknown request %T", req)
	}
	if err != nil {
		code, msg := errCode(err)
		return fmt.Sprintf("error %s: %s", code, msg)
	}
	if h := *hdr; h != nil {
		st.rev = max(st.rev, h.Revision)
		*hdr = &pb.ResponseHeader{Revision: h.Revision} // ids and raft term are the member's
	}
	return resp.String()
}

type stringer string

func (s stringer) String() string { return string(s) }

// clearInnerHeaders drops the headers of a txn's inner responses: etcd fills only their
// revision, and only sometimes; clients never read them.
func clearInnerHeaders(x *pb.TxnResponse) {
	for _, r := range x.Responses {
		switch v := r.Response.(type) {
		case *pb.ResponseOp_ResponseRange:
			v.ResponseRange.Header = nil
		case *pb.ResponseOp_ResponsePut:
			v.ResponsePut.Header = nil
		case *pb.ResponseOp_ResponseDeleteRange:
			v.ResponseDeleteRange.Header = nil
		case *pb.ResponseOp_ResponseTxn:
			v.ResponseTxn.Header = nil
			clearInnerHeaders(v.ResponseTxn)
		}
	}
}

// normaliseSort orders keys with equal sort values by key: the API leaves ties unordered.
func normaliseSort(r *pb.RangeRequest, kvs []*mvccpb.KeyValue) {
	if r.SortTarget == pb.RangeRequest_KEY {
		return
	}
	field := func(kv *mvccpb.KeyValue) string {
		switch r.SortTarget {
		case pb.RangeRequest_VERSION:
			return fmt.Sprintf("%020d", kv.Version)
		case pb.RangeRequest_CREATE:
			return fmt.Sprintf("%020d", kv.CreateRevision)
		case pb.RangeRequest_MOD:
			return fmt.Sprintf("%020d", kv.ModRevision)
		}
		return string(kv.Value)
	}
	// Within each run of equal sort values, order by key.
	for i := 0; i < len(kvs); {
		j := i + 1
		for j < len(kvs) && field(kvs[j]) == field(kvs[i]) {
			j++
		}
		slices.SortFunc(kvs[i:j], func(a, b *mvccpb.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
		i = j
	}
}

// openWatch opens a watch and waits until the store reports it caught up (a progress
// notification after RequestProgress), so that what it replays does not depend on timing.
func (st *diffStore) openWatch(t *testing.T, w *watchOpen) string {
	opts := []clientv3.OpOption{clientv3.WithRev(w.startRev)}
	if len(w.end) > 0 {
		opts = append(opts, clientv3.WithRange(string(w.end)))
	}
	if w.prevKV {
		opts = append(opts, clientv3.WithPrevKV())
	}
	if w.noPut {
		opts = append(opts, clientv3.WithFilterPut())
	}
	if w.noDelete {
		opts = append(opts, clientv3.WithFilterDelete())
	}
	if w.progressNotify {
		opts = append(opts, clientv3.WithProgressNotify())
	}
	log := &watchLog{}
	st.watches = append(st.watches, log)
	go log.collect(st.c.Watch(st.watchCtx, string(w.key), opts...))
	st.syncWatches(2 * time.Second)
	return fmt.Sprintf("watch opened from %d", w.startRev)
}

// syncWatches asks for progress until every live watch reports the store's revision, or
// the deadline passes (a store without RequestProgress then shows up as a slow run and, if
// events are missing, as a mismatch).
func (st *diffStore) syncWatches(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		synced := true
		for _, w := range st.watches {
			if _, progress, done := w.snapshot(); !done && progress < st.rev {
				synced = false
			}
		}
		if synced {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		ctx, cancel := context.WithTimeout(st.watchCtx, time.Second)
		_ = st.c.RequestProgress(ctx)
		cancel()
		time.Sleep(20 * time.Millisecond) // etcd syncs lagging watchers every 100 ms
	}
}

// diffSeeds and the sequence length: -short trims the run.
func diffPlan() (seeds []uint64, ops int) {
	if s := os.Getenv("CONTINUUM_COMPAT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err == nil {
			return []uint64{n}, 1500
		}
	}
	if testing.Short() {
		return []uint64{1}, 300
	}
	return []uint64{1, 2}, 1200
}

// TestDifferential applies the same seeded random operation sequence to a fresh etcd and a
// fresh continuum kv in lockstep; every response, revisions included, and every watch's
// events must be identical. Only member ids, raft terms and remaining lease TTLs are
// normalised away. On a mismatch it prints the first differing op with both responses.
func TestDifferential(t *testing.T) {
	t.Parallel()
	seeds, n := diffPlan()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) {
			ref := newDiffStore(t, "etcd", startEtcd(t, serverOptions{}))
			var other *diffStore
			if _, err := kvTarget.binary(); err == nil {
				other = newDiffStore(t, "kv", startKV(t, serverOptions{}))
			}
			stores := []*diffStore{ref}
			if other != nil {
				stores = append(stores, other)
			}
			// Watches from the start, on everything and on slices of the key space.
			for _, w := range []watchOpen{
				{key: []byte{0}, end: []byte{0}, startRev: 1, prevKV: true},
				{key: []byte("a/"), end: []byte("a0"), startRev: 1, noDelete: true},
				{key: []byte("c"), startRev: 1, noPut: true, prevKV: true},
			} {
				for _, st := range stores {
					st.apply(t, &w)
				}
			}
			gen := newDiffGen(seed)
			var history []string
			stats := map[string]int{}
			step := func(i int, op diffOp) {
				var got, reqs [2]string
				for j, st := range stores {
					req := op.build(st)
					reqs[j] = fmt.Sprint(req)
					got[j] = st.apply(t, req)
				}
				kind, _, _ := strings.Cut(op.desc, " ")
				stats[kind]++
				if strings.HasPrefix(got[0], "error") {
					stats[got[0]]++
				}
				history = append(history, fmt.Sprintf("op %d: %s\n    -> %s", i, reqs[0], got[0]))
				if other != nil && got[0] != got[1] {
					from := max(0, len(history)-6)
					t.Fatalf("seed %d: first difference at op %d of %d: %s\n  request to etcd: %s\n  request to kv:   %s\n  etcd: %s\n  kv:   %s\n\npreceding ops (etcd):\n%s",
						seed, i, n, op.desc, reqs[0], reqs[1], got[0], got[1], strings.Join(history[from:len(history)-1], "\n"))
				}
			}
			for i := range n {
				step(i, gen.next())
			}
			// Then the whole retained history: every key at every revision since the
			// compaction, and a watch replaying it.
			for back := int64(0); back <= ref.rev-max(ref.compacted, 1); back++ {
				step(n, diffOp{fmt.Sprintf("sweep %d revisions back", back), func(st *diffStore) any {
					return &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, Revision: st.rev - back}
				}})
			}
			step(n, diffOp{"watch everything from the compaction", func(st *diffStore) any {
				return &watchOpen{key: []byte{0}, end: []byte{0}, startRev: max(st.compacted, 1), prevKV: true}
			}})
			t.Logf("seed %d: ops and errors on etcd: %v", seed, stats)
			for _, st := range stores {
				if !st.syncWatches(5 * time.Second) {
					t.Logf("%s: watches not confirmed caught up after 5s (no progress notification)", st.name)
				}
			}
			total := 0
			for w := range ref.watches {
				evRef, _, _ := ref.watches[w].snapshot()
				total += len(evRef)
				if other == nil {
					continue
				}
				evOther, _, _ := other.watches[w].snapshot()
				for i := 0; i < max(len(evRef), len(evOther)); i++ {
					var a, b string
					if i < len(evRef) {
						a = evRef[i]
					}
					if i < len(evOther) {
						b = evOther[i]
					}
					if a != b {
						t.Errorf("seed %d: watch %d event %d differs (etcd %d events, kv %d):\n  etcd: %s\n  kv:   %s",
							seed, w, i, len(evRef), len(evOther), a, b)
						break
					}
				}
			}
			t.Logf("seed %d: %d ops, final revision %d, %d watches delivered %d events on etcd", seed, n, ref.rev, len(ref.watches), total)
			if other == nil {
				_, err := kvTarget.binary()
				requireOrSkip(t, err.Error())
			}
		})
	}
}
