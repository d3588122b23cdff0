package compat

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestDurability kills the member with SIGKILL in the middle of a write-heavy load from
// many clients, restarts it on the same data directory, and requires every write that was
// acknowledged before the kill. Two rounds (one with -short), so the second crash hits
// recovered state.
func TestDurability(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		rounds := 2
		if testing.Short() {
			rounds = 1
		}
		// State besides the keys that must survive too: the compaction, a lease and its key.
		c0 := s.client(t)
		ctx0 := testCtx(t, 30*time.Second)
		oldRev := res(c0.Put(ctx0, "meta/k", "1")).must(t).Header.Revision
		compactRev := res(c0.Put(ctx0, "meta/k", "2")).must(t).Header.Revision
		res(c0.Compact(ctx0, compactRev)).must(t)
		lease := res(c0.Grant(ctx0, 600)).must(t).ID
		res(c0.Put(ctx0, "meta/leased", "v", clientv3.WithLease(lease))).must(t)
		// A watch across the crash: clientv3 resumes it after the restart from the last
		// revision it saw, and nothing may be lost or repeated.
		wc := c0.Watch(watchCtx(t), "dur/0/", clientv3.WithPrefix())

		for round := range rounds {
			prefix := fmt.Sprintf("dur/%d/", round)
			loadStart := time.Now()
			acked, maxRev := writeUntilKilled(t, s, prefix)
			restartStart := time.Now()
			s.restart(t)
			restarted := time.Since(restartStart)
			c := s.client(t)
			ctx := testCtx(t, 30*time.Second)
			if round == 0 {
				checkStateAfterRestart(t, c, oldRev, lease)
				resumeStart := time.Now()
				checkResumedWatch(t, c, wc, acked)
				t.Logf("the watch opened before the crash caught up %v after the restart", time.Since(resumeStart).Round(time.Millisecond))
			}
			r := res(c.Get(ctx, prefix, clientv3.WithPrefix())).must(t)
			got := make(map[string]string, len(r.Kvs))
			for _, kv := range r.Kvs {
				got[string(kv.Key)] = string(kv.Value)
			}
			lost := 0
			for k, v := range acked {
				if got[k] != v {
					if lost < 5 {
						t.Errorf("round %d: acknowledged %s=%s, after restart %q", round, k, v, got[k])
					}
					lost++
				}
			}
			if lost > 0 {
				t.Fatalf("round %d: %d of %d acknowledged writes lost", round, lost, len(acked))
			}
			if r.Header.Revision < maxRev {
				t.Fatalf("round %d: revision %d after restart, but a write was acknowledged at %d", round, r.Header.Revision, maxRev)
			}
			t.Logf("round %d: %d acknowledged writes (up to revision %d) in %v all present after a restart of %v; %d keys in all",
				round, len(acked), maxRev, restartStart.Sub(loadStart).Round(time.Millisecond), restarted.Round(time.Millisecond), len(got))
		}
	})
}

// writeUntilKilled runs 16 writers on 4 connections, kills the member once they have had
// 1000 writes acknowledged, and returns the acknowledged key/values and highest revision.
func writeUntilKilled(t *testing.T, s *server, prefix string) (map[string]string, int64) {
	const conns, perConn = 4, 4
	var (
		mu     sync.Mutex
		acked  = map[string]string{}
		maxRev int64
		count  atomic.Int64
		wg     sync.WaitGroup
	)
	enough := make(chan struct{})
	var once sync.Once
	for ci := range conns {
		c := s.client(t)
		for wi := range perConn {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					k := fmt.Sprintf("%s%d-%d/%06d", prefix, ci, wi, i)
					v := fmt.Sprintf("value-%d-%d-%d", ci, wi, i)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					r, err := c.Put(ctx, k, v)
					cancel()
					if err != nil {
						return // the member is gone
					}
					mu.Lock()
					acked[k] = v
					maxRev = max(maxRev, r.Header.Revision)
					mu.Unlock()
					if count.Add(1) >= 1000 {
						once.Do(func() { close(enough) })
					}
				}
			}()
		}
	}
	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		t.Fatalf("only %d writes acknowledged in 30s", count.Load())
	}
	s.proc.kill()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return acked, maxRev
}

func checkStateAfterRestart(t *testing.T, c *clientv3.Client, compactedRev int64, lease clientv3.LeaseID) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	_, err := c.Get(ctx, "meta/k", clientv3.WithRev(compactedRev))
	wantErr(t, err, rpctypes.ErrCompacted)
	ttl := res(c.TimeToLive(ctx, lease, clientv3.WithAttachedKeys())).must(t)
	if ttl.TTL <= 0 || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "meta/leased" {
		t.Fatalf("lease after restart: ttl %d keys %q", ttl.TTL, ttl.Keys)
	}
	if r := res(c.Get(ctx, "meta/leased")).must(t); len(r.Kvs) != 1 || r.Kvs[0].Lease != int64(lease) {
		t.Fatalf("leased key after restart: %v", r.Kvs)
	}
}

// checkResumedWatch writes once more after the restart, then requires the watch opened
// before the crash to have delivered every acknowledged write, in revision order, once.
func checkResumedWatch(t *testing.T, c *clientv3.Client, wc clientv3.WatchChan, acked map[string]string) {
	t.Helper()
	last := res(c.Put(testCtx(t, 10*time.Second), "dur/0/after-restart", "x")).must(t).Header.Revision
	seen := map[string]int{}
	var prev int64
	timeout := time.After(20 * time.Second)
	for prev < last {
		select {
		case r, ok := <-wc:
			if !ok || r.Err() != nil {
				t.Fatalf("watch across the restart ended: %v (closed %v)", r.Err(), !ok)
			}
			for _, ev := range r.Events {
				if ev.Kv.ModRevision <= prev {
					t.Fatalf("watch across the restart: revision %d after %d", ev.Kv.ModRevision, prev)
				}
				prev = ev.Kv.ModRevision
				seen[string(ev.Kv.Key)]++
			}
		case <-timeout:
			t.Fatalf("watch across the restart reached revision %d of %d in 20s", prev, last)
		}
	}
	for k := range acked {
		if seen[k] != 1 {
			t.Fatalf("watch across the restart delivered %s %d times", k, seen[k])
		}
	}
}
