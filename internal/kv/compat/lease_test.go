package compat

import (
	"context"
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestLease(t *testing.T) {
	t.Parallel()
	runCases(t, leaseCases)
}

// putWithLease grants a lease of ttl seconds and attaches the named keys to it.
func (e *env) putWithLease(ttl int64, names ...string) clientv3.LeaseID {
	e.t.Helper()
	l := res(e.c.Grant(testCtx(e.t, 5*time.Second), ttl)).must(e.t)
	for _, n := range names {
		e.put(e.k(n), "v", clientv3.WithLease(l.ID))
	}
	return l.ID
}

// deleteEventsPerKey waits until every named key got a DELETE event on wc, and fails on a
// second event for any of them.
func (e *env) deleteEventsPerKey(wc clientv3.WatchChan, names []string, within time.Duration) {
	e.t.Helper()
	seen := map[string]int{}
	timeout := time.After(within)
	for len(seen) < len(names) {
		select {
		case r := <-wc:
			for _, ev := range r.Events {
				if ev.Type != mvccpb.DELETE {
					e.t.Fatalf("unexpected %s", eventsString(r.Events))
				}
				seen[string(ev.Kv.Key)]++
			}
		case <-timeout:
			e.t.Fatalf("delete events after %v: %v, want one for each of %v", within, seen, names)
		}
	}
	quiet(e.t, wc, 100*time.Millisecond)
	for _, n := range names {
		if seen[e.k(n)] != 1 {
			e.t.Fatalf("delete events per key %v, want one each for %v", seen, names)
		}
	}
}

var leaseCases = []conformanceCase{
	{"grant", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		l := res(e.c.Grant(ctx, 30)).must(e.t)
		if l.ID == 0 || l.TTL != 30 {
			e.t.Fatalf("grant 30: id %d ttl %d", l.ID, l.TTL)
		}
		// The server may raise a small TTL (etcd to its minimum, 2s with default timing).
		if l := res(e.c.Grant(ctx, 1)).must(e.t); l.TTL < 1 {
			e.t.Fatalf("grant 1: ttl %d", l.TTL)
		} else {
			e.t.Logf("grant 1s -> %ds", l.TTL)
		}
		// An explicit id is honoured; granting it twice is an error.
		lc := pb.NewLeaseClient(e.c.ActiveConnection())
		const id = 0x7e57_0001
		g := res(lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: 30})).must(e.t)
		if g.ID != id || g.TTL != 30 {
			e.t.Fatalf("explicit id grant: %v", g)
		}
		_, err := lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: 30})
		wantErr(e.t, err, rpctypes.ErrGRPCLeaseExist)
	}},
	{"revoke_deletes_keys", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		names := []string{"a", "b", "c"}
		id := e.putWithLease(60, names...)
		e.put(e.k("free"), "v")
		wc := e.c.Watch(watchCtx(e.t), e.k(""), clientv3.WithPrefix())
		before := e.rev()
		r := res(e.c.Revoke(ctx, id)).must(e.t)
		if r.Header.Revision != before+1 {
			e.t.Errorf("revoke response revision %d, want the deletion's %d", r.Header.Revision, before+1)
		}
		e.deleteEventsPerKey(wc, names, 10*time.Second)
		if got := keys(e.get(e.k(""), clientv3.WithPrefix()).Kvs); !equalStrings(got, []string{e.k("free")}) {
			e.t.Fatalf("after revoke: %v", got)
		}
		_, err := e.c.Revoke(ctx, id)
		wantErr(e.t, err, rpctypes.ErrLeaseNotFound)
	}},
	{"keepalive", func(e *env) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		id := e.putWithLease(2, "k")
		ka := res(e.c.KeepAlive(ctx, id)).must(e.t)
		deadline := time.After(3500 * time.Millisecond)
		n := 0
	loop:
		for {
			select {
			case r, ok := <-ka:
				if !ok {
					e.t.Fatal("keepalive channel closed")
				}
				if r.ID != id || r.TTL != 2 {
					e.t.Fatalf("keepalive response %v", r)
				}
				n++
			case <-deadline:
				break loop
			}
		}
		if n < 2 {
			e.t.Fatalf("%d keepalive responses in 3.5s for a 2s lease", n)
		}
		if len(e.get(e.k("k")).Kvs) != 1 {
			e.t.Fatal("the key of a kept-alive lease expired")
		}
		once := res(e.c.KeepAliveOnce(testCtx(e.t, 5*time.Second), id)).must(e.t)
		if once.TTL != 2 {
			e.t.Fatalf("keepalive once: %v", once)
		}
		_, err := e.c.KeepAliveOnce(testCtx(e.t, 5*time.Second), id+1)
		wantErr(e.t, err, rpctypes.ErrLeaseNotFound)
	}},
	{"time_to_live", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		id := e.putWithLease(60, "b", "a")
		r := res(e.c.TimeToLive(ctx, id, clientv3.WithAttachedKeys())).must(e.t)
		var got []string
		for _, k := range r.Keys {
			got = append(got, string(k))
		}
		slices.Sort(got)
		if r.ID != id || r.GrantedTTL != 60 || r.TTL <= 0 || r.TTL > 60 || !equalStrings(got, []string{e.k("a"), e.k("b")}) {
			e.t.Fatalf("time to live: %+v keys %v", r, got)
		}
		if r := res(e.c.TimeToLive(ctx, id)).must(e.t); len(r.Keys) != 0 {
			e.t.Fatalf("keys without WithAttachedKeys: %v", r.Keys)
		}
		// An unknown lease is not an error: TTL -1.
		if r := res(e.c.TimeToLive(ctx, id+1)).must(e.t); r.TTL != -1 {
			e.t.Fatalf("unknown lease: %+v, want TTL -1", r)
		}
	}},
	{"leases", func(e *env) {
		a, b := e.putWithLease(60), e.putWithLease(60)
		r := res(e.c.Leases(testCtx(e.t, 5*time.Second))).must(e.t)
		found := 0
		for _, l := range r.Leases {
			if l.ID == a || l.ID == b {
				found++
			}
		}
		if found != 2 {
			e.t.Fatalf("leases %v do not list %x and %x", r.Leases, a, b)
		}
	}},
	{"expiry_deletes_keys", func(e *env) {
		names := []string{"x", "y", "z"}
		wc := e.c.Watch(watchCtx(e.t), e.k(""), clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		<-wc
		id := e.putWithLease(1, names...)
		watchEvents(e.t, wc, len(names)) // the puts
		start := time.Now()
		e.deleteEventsPerKey(wc, names, 15*time.Second)
		e.t.Logf("keys of a 1s lease deleted %v after attaching", time.Since(start).Round(100*time.Millisecond))
		if r := e.get(e.k(""), clientv3.WithPrefix()); len(r.Kvs) != 0 {
			e.t.Fatalf("after expiry: %v", keys(r.Kvs))
		}
		if r := res(e.c.TimeToLive(testCtx(e.t, 5*time.Second), id)).must(e.t); r.TTL != -1 {
			e.t.Fatalf("expired lease: ttl %d, want -1", r.TTL)
		}
	}},
}
