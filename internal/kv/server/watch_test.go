package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// next receives the next watch response or fails after a deadline.
func next(t *testing.T, ch clientv3.WatchChan) clientv3.WatchResponse {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no watch response within 5s")
	}
	return clientv3.WatchResponse{}
}

func evString(evs []*clientv3.Event) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("%s %s=%s@%d;", e.Type, e.Kv.Key, e.Kv.Value, e.Kv.ModRevision)
		if e.PrevKv != nil {
			s += fmt.Sprintf("prev=%s;", e.PrevKv.Value)
		}
	}
	return s
}

func TestWatch(t *testing.T) {
	_, cli := startKV(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	key := cli.Watch(ctx, "k")
	pfx := cli.Watch(ctx, "p/", clientv3.WithPrefix(), clientv3.WithPrevKV())
	noDel := cli.Watch(ctx, "p/", clientv3.WithPrefix(), clientv3.WithFilterDelete())
	if _, err := cli.Put(ctx, "k", "1"); err != nil { // rev 2
		t.Fatal(err)
	}
	if got := evString(next(t, key).Events); got != "PUT k=1@2;" {
		t.Fatalf("key watch: %s", got)
	}
	// A Txn's events arrive in one response, in order.
	if _, err := cli.Txn(ctx).Then(clientv3.OpPut("p/a", "1"), clientv3.OpPut("p/b", "2"), clientv3.OpPut("other", "x")).Commit(); err != nil { // rev 3
		t.Fatal(err)
	}
	if got := evString(next(t, pfx).Events); got != "PUT p/a=1@3;PUT p/b=2@3;" {
		t.Fatalf("prefix watch: %s", got)
	}
	if _, err := cli.Put(ctx, "p/a", "3"); err != nil { // rev 4
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "p/", clientv3.WithPrefix()); err != nil { // rev 5
		t.Fatal(err)
	}
	if got := evString(next(t, pfx).Events); got != "PUT p/a=3@4;prev=1;" {
		t.Fatalf("prev kv: %s", got)
	}
	if got := evString(next(t, pfx).Events); got != "DELETE p/a=@5;prev=3;DELETE p/b=@5;prev=2;" {
		t.Fatalf("delete: %s", got)
	}
	if got := evString(next(t, noDel).Events); got != "PUT p/a=1@3;PUT p/b=2@3;" {
		t.Fatalf("nodelete 1: %s", got)
	}
	if got := evString(next(t, noDel).Events); got != "PUT p/a=3@4;" {
		t.Fatalf("nodelete 2: %s", got)
	}

	// Replay from a past revision.
	replay := cli.Watch(ctx, "", clientv3.WithFromKey(), clientv3.WithRev(2))
	var all string
	for all != "PUT k=1@2;PUT p/a=1@3;PUT p/b=2@3;PUT other=x@3;PUT p/a=3@4;DELETE p/a=@5;DELETE p/b=@5;" {
		r := next(t, replay)
		all += evString(r.Events)
		if len(all) > 500 {
			t.Fatalf("replay: %s", all)
		}
	}

	// Compacted start revision: the watch is canceled with the compaction revision.
	if _, err := cli.Compact(ctx, 4); err != nil {
		t.Fatal(err)
	}
	r := next(t, cli.Watch(ctx, "k", clientv3.WithRev(2)))
	if r.CompactRevision != 4 || !r.Canceled || !errors.Is(r.Err(), rpctypes.ErrCompacted) {
		t.Fatalf("compacted watch: %+v", r)
	}
}

func TestWatchProgress(t *testing.T) {
	_, cli := startKV(t, func(c *Config) { c.ProgressNotifyInterval = 200 * time.Millisecond })
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	if _, err := cli.Put(ctx, "x", "1"); err != nil {
		t.Fatal(err)
	}
	wch := cli.Watch(ctx, "k", clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
	if r := next(t, wch); !r.Created {
		t.Fatalf("want created: %+v", r)
	}
	r := next(t, wch)
	if !r.IsProgressNotify() || r.Header.Revision != 2 {
		t.Fatalf("want progress notify at 2: %+v", r)
	}
	if err := cli.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	r = next(t, wch)
	if !r.IsProgressNotify() || r.Header.Revision != 2 {
		t.Fatalf("want requested progress at 2: %+v", r)
	}
}

func TestWatchCancelAndFragment(t *testing.T) {
	_, cli := startKV(t, func(c *Config) { c.MaxRequestBytes = 4096 })
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	wctx, wcancel := context.WithCancel(ctx)
	wch := cli.Watch(wctx, "f/", clientv3.WithPrefix(), clientv3.WithFragment())
	ops := make([]clientv3.Op, 10)
	for i := range ops {
		ops[i] = clientv3.OpPut(fmt.Sprintf("f/%d", i), string(make([]byte, 1000)))
	}
	for _, op := range ops { // one revision each, all in one catch-up response
		if _, err := cli.Do(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	// The client reassembles fragments: one response with all ten events.
	n := 0
	for n < 10 {
		r := next(t, wch)
		for _, ev := range r.Events {
			if ev.Type != mvccpb.PUT || string(ev.Kv.Key) != fmt.Sprintf("f/%d", n) {
				t.Fatalf("event %d: %v", n, ev)
			}
			n++
		}
	}
	wcancel()
	for range wch {
	}
}

// TestProgressNeverPassesAnUndeliveredEvent: a progress notification at revision P promises
// that the watch has been sent every event up to P (the rtdb hub and Kubernetes' watch cache
// skip what they receive at or below it). Writes land while progress is requested and while
// the interval ticker fires; no event may arrive after a notification that covered it.
func TestProgressNeverPassesAnUndeliveredEvent(t *testing.T) {
	_, cli := startKV(t, func(c *Config) { c.ProgressNotifyInterval = time.Millisecond })
	// A deadline for a busy machine: the writes share it with a flood of progress requests.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	requested := cli.Watch(ctx, "s/", clientv3.WithPrefix())
	ticked := cli.Watch(ctx, "s/", clientv3.WithPrefix(), clientv3.WithProgressNotify())
	const writes = 500
	var final atomic.Int64 // the last write's revision, once every write is in
	go func() {
		var rev int64
		for i := range writes {
			r, err := cli.Put(ctx, fmt.Sprintf("s/%d", i%50), "v")
			if err != nil {
				if ctx.Err() == nil { // not the test ending early
					t.Errorf("put %d: %v", i, err)
					cancel()
				}
				return
			}
			rev = r.Header.Revision
		}
		final.Store(rev)
	}()
	go func() {
		for ctx.Err() == nil {
			cli.RequestProgress(ctx)
		}
	}()
	// Both watches share the client's stream, which stalls when one of them is not read: they
	// are read at once.
	check := func(name string, wch clientv3.WatchChan) error {
		var progress, seen int64
		for f := final.Load(); f == 0 || seen < f; f = final.Load() {
			var r clientv3.WatchResponse
			select {
			case resp, ok := <-wch:
				if !ok || resp.Err() != nil {
					return fmt.Errorf("%s watch ended after the event at %d: %v (test context: %v)", name, seen, resp.Err(), ctx.Err())
				}
				r = resp
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s watch: nothing for 10s after the event at %d (progress %d, last write %d)", name, seen, progress, f)
			}
			if r.IsProgressNotify() {
				progress = max(progress, r.Header.Revision)
				continue
			}
			for _, ev := range r.Events {
				if ev.Kv.ModRevision <= progress {
					return fmt.Errorf("%s watch: event at %d arrived after a progress notification at %d", name, ev.Kv.ModRevision, progress)
				}
				seen = ev.Kv.ModRevision
			}
		}
		return nil
	}
	errs := make(chan error, 1)
	go func() { errs <- check("interval", ticked) }()
	if err := check("requested", requested); err != nil {
		t.Error(err)
	}
	if err := <-errs; err != nil {
		t.Error(err)
	}
}

// TestProgressNotBelowStartRevision: a watch that starts at a revision the store has not
// reached gets no progress notification below it (etcd defers them too): a client resuming
// from a notification would otherwise go back. The requested notification waits until the
// store reaches the start revision, and then comes.
func TestProgressNotBelowStartRevision(t *testing.T) {
	_, cli := startKV(t, func(c *Config) { c.ProgressNotifyInterval = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	r, err := cli.Put(ctx, "a", "1")
	if err != nil {
		t.Fatal(err)
	}
	start := r.Header.Revision + 4
	wch := cli.Watch(ctx, "other", clientv3.WithRev(start), clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
	if c := next(t, wch); !c.Created {
		t.Fatalf("want created: %+v", c)
	}
	if err := cli.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := cli.Put(ctx, fmt.Sprintf("b%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	got := next(t, wch)
	if !got.IsProgressNotify() || got.Header.Revision < start {
		t.Fatalf("first response after the request: progress %v at %d, want a progress notification at %d or later", got.IsProgressNotify(), got.Header.Revision, start)
	}
}
