package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestWatch(t *testing.T) {
	t.Parallel()
	runCases(t, watchCases)
}

// watchEvents reads from wc until n events arrived, failing after a deadline.
func watchEvents(t testing.TB, wc clientv3.WatchChan, n int) []*clientv3.Event {
	t.Helper()
	var evs []*clientv3.Event
	timeout := time.After(10 * time.Second)
	for len(evs) < n {
		select {
		case r, ok := <-wc:
			if !ok {
				t.Fatalf("watch closed after %d of %d events: %s", len(evs), n, eventsString(evs))
			}
			if err := r.Err(); err != nil {
				t.Fatalf("watch error after %d events: %v", len(evs), err)
			}
			evs = append(evs, r.Events...)
		case <-timeout:
			t.Fatalf("got %d of %d events in 10s: %s", len(evs), n, eventsString(evs))
		}
	}
	if len(evs) > n {
		t.Fatalf("got %d events, want %d: %s", len(evs), n, eventsString(evs))
	}
	return evs
}

// quiet fails t if wc delivers an event within d.
func quiet(t testing.TB, wc clientv3.WatchChan, d time.Duration) {
	t.Helper()
	select {
	case r := <-wc:
		if len(r.Events) > 0 {
			t.Fatalf("unexpected events: %s", eventsString(r.Events))
		}
	case <-time.After(d):
	}
}

// watchCtx is a watch context that ends with the test; one context means one gRPC stream.
func watchCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	t.Cleanup(cancel)
	return ctx
}

var watchCases = []conformanceCase{
	{"key_range_prefix", func(e *env) {
		ctx := watchCtx(e.t)
		// Three watches on one stream (clientv3 multiplexes the watches of one context).
		wKey := e.c.Watch(ctx, e.k("a"))
		wRange := e.c.Watch(ctx, e.k("a"), clientv3.WithRange(e.k("c")))
		wPrefix := e.c.Watch(ctx, e.k("b"), clientv3.WithPrefix())
		e.put(e.k("a"), "1")
		e.put(e.k("b/1"), "1")
		e.put(e.k("c"), "1")
		e.put(e.k("a"), "2")
		expect := func(wc clientv3.WatchChan, want ...string) {
			e.t.Helper()
			evs := watchEvents(e.t, wc, len(want))
			for i, ev := range evs {
				if got := string(ev.Kv.Key) + "=" + string(ev.Kv.Value); got != e.prefix+want[i] {
					e.t.Fatalf("event %d: %s, want %s", i, got, e.prefix+want[i])
				}
			}
		}
		expect(wKey, "a=1", "a=2")
		expect(wRange, "a=1", "b/1=1", "a=2")
		expect(wPrefix, "b/1=1")
	}},
	{"many_watches_one_stream_raw", func(e *env) {
		// On the wire: several creates on one stream get distinct ids, events carry the id of
		// their watch, and a cancel request ends exactly one watch.
		ws := res(pb.NewWatchClient(e.c.ActiveConnection()).Watch(watchCtx(e.t))).must(e.t)
		send := func(r *pb.WatchRequest) {
			if err := ws.Send(r); err != nil {
				e.t.Fatalf("send: %v", err)
			}
		}
		recv := func() *pb.WatchResponse {
			type rr struct {
				r   *pb.WatchResponse
				err error
			}
			ch := make(chan rr, 1)
			go func() { r, err := ws.Recv(); ch <- rr{r, err} }()
			select {
			case x := <-ch:
				if x.err != nil {
					e.t.Fatalf("recv: %v", x.err)
				}
				return x.r
			case <-time.After(10 * time.Second):
				e.t.Fatal("no watch response in 10s")
			}
			return nil
		}
		ids := map[string]int64{}
		for _, k := range []string{"x", "y", "z"} {
			send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte(e.k(k))}}})
			r := recv()
			if !r.Created || r.Canceled {
				e.t.Fatalf("create %s: %v", k, r)
			}
			for other, id := range ids {
				if id == r.WatchId {
					e.t.Fatalf("watch on %s got id %d, already used by %s", k, id, other)
				}
			}
			ids[k] = r.WatchId
		}
		e.put(e.k("y"), "1")
		if r := recv(); r.WatchId != ids["y"] || len(r.Events) != 1 || string(r.Events[0].Kv.Key) != e.k("y") {
			e.t.Fatalf("event for y: %v (ids %v)", r, ids)
		}
		send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CancelRequest{CancelRequest: &pb.WatchCancelRequest{WatchId: ids["y"]}}})
		if r := recv(); !r.Canceled || r.WatchId != ids["y"] {
			e.t.Fatalf("cancel: %v", r)
		}
		e.put(e.k("y"), "2")
		e.put(e.k("z"), "1")
		if r := recv(); r.WatchId != ids["z"] || len(r.Events) != 1 || string(r.Events[0].Kv.Key) != e.k("z") {
			e.t.Fatalf("after cancelling y, want only z's event: %v", r)
		}
		// RequestProgress answers on the stream with watch id -1 and the current revision.
		send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}})
		cur := e.rev()
		if r := recv(); r.WatchId != clientv3.InvalidWatchID || len(r.Events) != 0 || r.Header.Revision != cur {
			e.t.Fatalf("progress response %v, want watch id -1, no events, revision %d", r, cur)
		}
		// A watch on an empty range ([b, a)) is created and cancelled at once.
		send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
			Key: []byte(e.k("b")), RangeEnd: []byte(e.k("a"))}}})
		if r := recv(); !r.Created || !r.Canceled || r.CancelReason == "" {
			e.t.Fatalf("watch on an empty range: %v, want created and canceled with a reason", r)
		}
	}},
	{"start_revision_replay", func(e *env) {
		k := e.k("h")
		r1 := e.put(k, "1").Header.Revision
		e.put(k, "2")
		res(e.c.Delete(testCtx(e.t, 5*time.Second), k)).must(e.t)
		e.put(k, "3")
		wc := e.c.Watch(watchCtx(e.t), k, clientv3.WithRev(r1))
		evs := watchEvents(e.t, wc, 4)
		want := []string{"PUT:1@0", "PUT:2@1", "DELETE:@2", "PUT:3@3"}
		for i, ev := range evs {
			if got := fmt.Sprintf("%s:%s@%d", ev.Type, ev.Kv.Value, ev.Kv.ModRevision-r1); got != want[i] {
				e.t.Fatalf("event %d: %s, want %s (all: %s)", i, got, want[i], eventsString(evs))
			}
		}
		if evs[2].Kv.Version != 0 || evs[2].Kv.CreateRevision != 0 {
			e.t.Fatalf("a delete event carries only key and mod revision, got %v", evs[2].Kv)
		}
		if evs[3].Kv.Version != 1 || evs[3].Kv.CreateRevision != r1+3 {
			e.t.Fatalf("recreated key: %v", evs[3].Kv)
		}
		// Replay continues into live events.
		e.put(k, "4")
		if ev := watchEvents(e.t, wc, 1)[0]; string(ev.Kv.Value) != "4" {
			e.t.Fatalf("live event after replay: %v", ev.Kv)
		}
	}},
	{"prev_kv", func(e *env) {
		k := e.k("p")
		wc := e.c.Watch(watchCtx(e.t), k, clientv3.WithPrevKV())
		e.put(k, "1")
		e.put(k, "2")
		res(e.c.Delete(testCtx(e.t, 5*time.Second), k)).must(e.t)
		evs := watchEvents(e.t, wc, 3)
		if evs[0].PrevKv != nil {
			e.t.Fatalf("create event has prev_kv %v", evs[0].PrevKv)
		}
		if evs[1].PrevKv == nil || string(evs[1].PrevKv.Value) != "1" || evs[1].PrevKv.ModRevision != evs[0].Kv.ModRevision {
			e.t.Fatalf("update event prev_kv %v", evs[1].PrevKv)
		}
		if evs[2].Type != mvccpb.DELETE || evs[2].PrevKv == nil || string(evs[2].PrevKv.Value) != "2" || evs[2].PrevKv.Version != 2 {
			e.t.Fatalf("delete event prev_kv %v", evs[2].PrevKv)
		}
		if !evs[1].IsModify() || !evs[0].IsCreate() {
			e.t.Fatalf("create/modify flags wrong: %v %v", evs[0].Kv, evs[1].Kv)
		}
	}},
	{"filters", func(e *env) {
		ctx := watchCtx(e.t)
		noPut := e.c.Watch(ctx, e.k(""), clientv3.WithPrefix(), clientv3.WithFilterPut())
		noDel := e.c.Watch(ctx, e.k(""), clientv3.WithPrefix(), clientv3.WithFilterDelete())
		e.put(e.k("a"), "1")
		res(e.c.Delete(testCtx(e.t, 5*time.Second), e.k("a"))).must(e.t)
		e.put(e.k("b"), "1")
		if evs := watchEvents(e.t, noPut, 1); evs[0].Type != mvccpb.DELETE {
			e.t.Fatalf("NOPUT watch got %s", eventsString(evs))
		}
		if evs := watchEvents(e.t, noDel, 2); evs[0].Type != mvccpb.PUT || evs[1].Type != mvccpb.PUT {
			e.t.Fatalf("NODELETE watch got %s", eventsString(evs))
		}
		quiet(e.t, noPut, 100*time.Millisecond)
	}},
	{"created_notify_and_request_progress", func(e *env) {
		ctx := watchCtx(e.t)
		wc := e.c.Watch(ctx, e.k(""), clientv3.WithPrefix(), clientv3.WithCreatedNotify(), clientv3.WithProgressNotify())
		created := <-wc
		if !created.Created || created.Header.Revision != e.rev() {
			e.t.Fatalf("created notification %+v, want created at the current revision %d", created, e.rev())
		}
		// Writes outside the watched range move the store's revision; a progress
		// notification reports it (Kubernetes relies on this for consistent reads from cache).
		e.put("elsewhere/"+e.prefix, "1")
		cur := e.rev()
		if err := e.c.RequestProgress(ctx); err != nil {
			e.t.Fatalf("RequestProgress: %v", err)
		}
		select {
		case r := <-wc:
			if !r.IsProgressNotify() || r.Header.Revision != cur {
				e.t.Fatalf("got %+v (progress %v), want a progress notification at %d", r, r.IsProgressNotify(), cur)
			}
		case <-time.After(10 * time.Second):
			e.t.Fatal("no progress notification within 10s of RequestProgress")
		}
	}},
	{"periodic_progress_notify", func(e *env) {
		// Needs etcd's --watch-progress-notify-interval, so a server of its own.
		s := e.tg.start(e.t, serverOptions{progressNotifyInterval: 200 * time.Millisecond})
		c := s.client(e.t)
		res(c.Put(testCtx(e.t, 5*time.Second), "other", "1")).must(e.t)
		wc := c.Watch(watchCtx(e.t), "watched", clientv3.WithProgressNotify())
		select {
		case r := <-wc:
			if !r.IsProgressNotify() || r.Header.Revision != 2 {
				e.t.Fatalf("got %+v, want a progress notification at revision 2", r)
			}
		case <-time.After(5 * time.Second):
			e.t.Fatal("no progress notification within 5s at a 200ms interval")
		}
	}},
	{"fragment", func(e *env) {
		// A replay too large for one message is split into fragments when the watch asks for
		// it: every part but the last has fragment set. etcd's limit is --max-request-bytes
		// plus 512 KiB of gRPC overhead; 800 KiB of events exceed it at 64 KiB.
		s := e.tg.start(e.t, serverOptions{maxRequestBytes: 64 << 10})
		c := s.client(e.t)
		ctx := testCtx(e.t, 10*time.Second)
		val := strings.Repeat("f", 40<<10)
		first := res(c.Put(ctx, "frag/0", val)).must(e.t).Header.Revision
		const n = 20
		for i := 1; i < n; i++ {
			res(c.Put(ctx, fmt.Sprintf("frag/%d", i), val)).must(e.t)
		}
		ws := res(pb.NewWatchClient(c.ActiveConnection()).Watch(watchCtx(e.t))).must(e.t)
		if err := ws.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
			Key: []byte("frag/"), RangeEnd: []byte("frag0"), StartRevision: first, Fragment: true}}}); err != nil {
			e.t.Fatal(err)
		}
		events, parts := 0, 0
		for events < n {
			r, err := ws.Recv()
			if err != nil {
				e.t.Fatalf("recv after %d events: %v", events, err)
			}
			if r.Created {
				continue
			}
			parts++
			events += len(r.Events)
			if r.Fragment != (events < n) {
				e.t.Fatalf("part %d with %d events so far: fragment=%v", parts, events, r.Fragment)
			}
		}
		if parts < 2 {
			e.t.Fatalf("800 KiB of events came in %d part(s) with a 64 KiB request limit", parts)
		}
	}},
	{"txn_events_not_split", func(e *env) {
		wc := e.c.Watch(watchCtx(e.t), e.k(""), clientv3.WithPrefix())
		e.put(e.k("d"), "0")
		r := res(e.c.Txn(testCtx(e.t, 5*time.Second)).Then(
			clientv3.OpPut(e.k("a"), "1"), clientv3.OpPut(e.k("b"), "1"), clientv3.OpPut(e.k("c"), "1"), clientv3.OpDelete(e.k("d")),
		).Commit()).must(e.t)
		var got []*clientv3.Event
		timeout := time.After(10 * time.Second)
		for len(got) < 5 {
			select {
			case wr := <-wc:
				// A response holds whole revisions: the txn's four events arrive together.
				n := 0
				for _, ev := range wr.Events {
					if ev.Kv.ModRevision == r.Header.Revision {
						n++
					}
				}
				if n != 0 && n != 4 {
					e.t.Fatalf("a response carries %d of the txn's 4 events: %s", n, eventsString(wr.Events))
				}
				got = append(got, wr.Events...)
			case <-timeout:
				e.t.Fatalf("got %s", eventsString(got))
			}
		}
		if s := eventsString(got[1:]); s != fmt.Sprintf("PUT:%sa@%d PUT:%sb@%d PUT:%sc@%d DELETE:%sd@%d",
			e.prefix, r.Header.Revision, e.prefix, r.Header.Revision, e.prefix, r.Header.Revision, e.prefix, r.Header.Revision) {
			e.t.Fatalf("txn events %s, want the txn's order", s)
		}
	}},
	{"ordered_unique", func(e *env) {
		wc := e.c.Watch(watchCtx(e.t), e.k(""), clientv3.WithPrefix())
		const writers, each = 4, 25
		errc := make(chan error, writers)
		for w := range writers {
			go func() {
				for i := range each {
					if _, err := e.c.Put(context.Background(), e.k(fmt.Sprintf("%d/%d", w, i%5)), "v"); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
		}
		for range writers {
			if err := <-errc; err != nil {
				e.t.Fatal(err)
			}
		}
		evs := watchEvents(e.t, wc, writers*each)
		for i := 1; i < len(evs); i++ {
			if evs[i].Kv.ModRevision <= evs[i-1].Kv.ModRevision {
				e.t.Fatalf("event %d at revision %d after %d", i, evs[i].Kv.ModRevision, evs[i-1].Kv.ModRevision)
			}
		}
	}},
	{"cancel", func(e *env) {
		ctx, cancel := context.WithCancel(context.Background())
		wc := e.c.Watch(ctx, e.k("x"), clientv3.WithCreatedNotify())
		<-wc
		cancel()
		select {
		case _, ok := <-wc:
			for ok {
				_, ok = <-wc
			}
		case <-time.After(10 * time.Second):
			e.t.Fatal("watch channel not closed 10s after cancelling its context")
		}
		// The stream's other users are unaffected.
		e.put(e.k("x"), "1")
	}},
	// Compaction is global: last.
	{"compacted_start_revision", func(e *env) {
		k := e.k("c")
		r1 := e.put(k, "1").Header.Revision
		r2 := e.put(k, "2").Header.Revision
		res(e.c.Compact(testCtx(e.t, 5*time.Second), r2)).must(e.t)
		wc := e.c.Watch(watchCtx(e.t), k, clientv3.WithRev(r1))
		select {
		case r, ok := <-wc:
			if !ok || r.CompactRevision != r2 || !r.Canceled {
				e.t.Fatalf("got %+v, want compact_revision %d and canceled", r, r2)
			}
			if r.Err() != rpctypes.ErrCompacted {
				e.t.Fatalf("clientv3 reports %v, want %v", r.Err(), rpctypes.ErrCompacted)
			}
		case <-time.After(10 * time.Second):
			e.t.Fatal("no response to a watch from a compacted revision")
		}
		select {
		case _, ok := <-wc:
			if ok {
				e.t.Fatal("the watch channel stays open after the compaction cancel")
			}
		case <-time.After(10 * time.Second):
			e.t.Fatal("watch channel not closed after the compaction cancel")
		}
		// From the compaction revision itself the history is there.
		wc = e.c.Watch(watchCtx(e.t), k, clientv3.WithRev(r2))
		if ev := watchEvents(e.t, wc, 1)[0]; string(ev.Kv.Value) != "2" {
			e.t.Fatalf("watch from the compaction revision: %v", ev.Kv)
		}
	}},
}
