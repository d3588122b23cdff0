package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/coreos/go-semver/semver"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestKubernetes replays the calls the Kubernetes API server's etcd3 storage makes
// (k8s.io/apiserver/pkg/storage/etcd3), with its key layout and options.
func TestKubernetes(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		c := s.client(t)
		ctx := testCtx(t, 60*time.Second)
		const pods = "/registry/pods/default/"

		t.Run("health_get", func(t *testing.T) {
			// The health check Gets "health"; a missing key is healthy.
			if _, err := c.Get(ctx, "health"); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("create_is_txn_on_mod_revision_zero", func(t *testing.T) {
			for i := range 25 {
				key := fmt.Sprintf("%spod-%02d", pods, i)
				r := res(c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, "spec-"+strconv.Itoa(i))).Commit()).must(t)
				if !r.Succeeded {
					t.Fatalf("create %s: not succeeded", key)
				}
			}
			r := res(c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(pods+"pod-00"), "=", 0)).
				Then(clientv3.OpPut(pods+"pod-00", "again")).Commit()).must(t)
			if r.Succeeded {
				t.Fatal("creating an existing key succeeded")
			}
		})

		t.Run("paginated_list_at_fixed_revision", func(t *testing.T) {
			// List pages of 10 from the key after the last one ("\x00" appended), all at the
			// revision of the first page, while writes continue.
			first := res(c.Get(ctx, pods, clientv3.WithRange(clientv3.GetPrefixRangeEnd(pods)), clientv3.WithLimit(10))).must(t)
			rev := first.Header.Revision
			res(c.Put(ctx, pods+"pod-99", "added after the list began")).must(t)
			var got []string
			resp := first
			for {
				got = append(got, keys(resp.Kvs)...)
				if !resp.More {
					break
				}
				next := string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
				resp = res(c.Get(ctx, next, clientv3.WithRange(clientv3.GetPrefixRangeEnd(pods)), clientv3.WithLimit(10), clientv3.WithRev(rev))).must(t)
				if resp.Count != 25-int64(len(got)) {
					t.Fatalf("page from %q: count %d, want the remaining %d", next, resp.Count, 25-len(got))
				}
			}
			if len(got) != 25 || got[0] != pods+"pod-00" || got[24] != pods+"pod-24" {
				t.Fatalf("listed %d keys (%v ... ), want the 25 pods as of revision %d", len(got), got[:min(3, len(got))], rev)
			}
		})

		t.Run("count", func(t *testing.T) {
			r := res(c.Get(ctx, pods, clientv3.WithRange(clientv3.GetPrefixRangeEnd(pods)), clientv3.WithCountOnly())).must(t)
			if r.Count != 26 || len(r.Kvs) != 0 {
				t.Fatalf("count %d with %d kvs, want 26 and none", r.Count, len(r.Kvs))
			}
		})

		t.Run("optimistic_put_and_delete", func(t *testing.T) {
			key := pods + "pod-03"
			cur := res(c.Get(ctx, key)).must(t).Kvs[0]
			// GuaranteedUpdate: If ModRevision == read revision Then Put Else Get.
			upd := func(rev int64, val string) *clientv3.TxnResponse {
				return res(c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
					Then(clientv3.OpPut(key, val)).Else(clientv3.OpGet(key)).Commit()).must(t)
			}
			r := upd(cur.ModRevision, "v2")
			if !r.Succeeded || r.Responses[0].GetResponsePut() == nil {
				t.Fatalf("update at the current revision: %v", r)
			}
			// A stale revision fails and returns the current object for the retry.
			r = upd(cur.ModRevision, "v3")
			if r.Succeeded {
				t.Fatal("update at a stale revision succeeded")
			}
			latest := r.Responses[0].GetResponseRange().Kvs[0]
			if string(latest.Value) != "v2" || latest.ModRevision <= cur.ModRevision {
				t.Fatalf("conflict returned %v", latest)
			}
			if r = upd(latest.ModRevision, "v3"); !r.Succeeded {
				t.Fatal("retry at the returned revision failed")
			}
			// Delete with a precondition: If ModRevision == r Then Delete Else Get.
			del := func(rev int64) *clientv3.TxnResponse {
				return res(c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
					Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).Else(clientv3.OpGet(key)).Commit()).must(t)
			}
			if r := del(latest.ModRevision); r.Succeeded {
				t.Fatal("delete at a stale revision succeeded")
			}
			now := res(c.Get(ctx, key)).must(t).Kvs[0]
			r = del(now.ModRevision)
			if !r.Succeeded || r.Responses[0].GetResponseDeleteRange().Deleted != 1 ||
				string(r.Responses[0].GetResponseDeleteRange().PrevKvs[0].Value) != "v3" {
				t.Fatalf("delete at the current revision: %v", r)
			}
		})

		t.Run("compact_rev_key", func(t *testing.T) {
			// The compactor: a Txn on compact_rev_key's Version elects which API server compacts.
			compact := func(t0, rev int64) (int64, bool) {
				const key = "compact_rev_key"
				r := res(c.Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", t0)).
					Then(clientv3.OpPut(key, strconv.FormatInt(rev, 10))).Else(clientv3.OpGet(key)).Commit()).must(t)
				if !r.Succeeded {
					return r.Responses[0].GetResponseRange().Kvs[0].Version, false
				}
				res(c.Compact(ctx, rev)).must(t)
				return t0 + 1, true
			}
			rev1 := res(c.Get(ctx, "health")).must(t).Header.Revision
			t1, ok := compact(0, rev1)
			if !ok || t1 != 1 {
				t.Fatalf("first compaction: %d %v", t1, ok)
			}
			// A second API server with a stale view loses and learns the current version.
			if got, ok := compact(0, rev1); ok || got != 1 {
				t.Fatalf("stale compactor: version %d won %v, want 1 and lost", got, ok)
			}
			res(c.Put(ctx, pods+"pod-00", "after compaction")).must(t)
			rev2 := res(c.Get(ctx, "health")).must(t).Header.Revision
			if t2, ok := compact(t1, rev2); !ok || t2 != 2 {
				t.Fatalf("second compaction: %d %v", t2, ok)
			}
		})

		t.Run("watch_with_progress", func(t *testing.T) {
			start := res(c.Get(ctx, "health")).must(t).Header.Revision
			wctx := watchCtx(t)
			// The watch cache: prefix, start revision, prev_kv, progress notifications.
			wc := c.Watch(wctx, pods, clientv3.WithPrefix(), clientv3.WithRev(start+1), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
			res(c.Put(ctx, pods+"pod-01", "updated")).must(t)
			res(c.Delete(ctx, pods+"pod-02")).must(t)
			evs := watchEvents(t, wc, 2)
			if evs[0].Type != mvccpb.PUT || evs[0].PrevKv == nil || string(evs[0].PrevKv.Value) != "spec-1" ||
				evs[1].Type != mvccpb.DELETE || evs[1].PrevKv == nil || string(evs[1].PrevKv.Value) != "spec-2" {
				t.Fatalf("events %s prev %v %v", eventsString(evs), evs[0].PrevKv, evs[1].PrevKv)
			}
			// RequestProgress only where Status reports a version that has it fixed.
			st := res(c.Status(ctx, s.endpoint)).must(t)
			v, err := semver.NewVersion(st.Version)
			if err != nil || v.LessThan(*minVersion) {
				t.Fatalf("status version %q (%v): Kubernetes would not use RequestProgress", st.Version, err)
			}
			res(c.Put(ctx, "/registry/events/other", "x")).must(t) // outside the watch
			cur := res(c.Get(ctx, "health")).must(t).Header.Revision
			if err := c.RequestProgress(wctx); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-wc:
				if !r.IsProgressNotify() || r.Header.Revision != cur {
					t.Fatalf("after RequestProgress: %+v, want a progress notification at %d", r, cur)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no progress notification")
			}
		})

		t.Run("lease_grant_for_events", func(t *testing.T) {
			// Events are written with a lease shared by many keys.
			l := res(c.Grant(ctx, 3600)).must(t)
			for i := range 5 {
				res(c.Put(ctx, fmt.Sprintf("/registry/events/default/e%d", i), "event", clientv3.WithLease(l.ID))).must(t)
			}
			ttl := res(c.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())).must(t)
			if len(ttl.Keys) != 5 || ttl.GrantedTTL != 3600 {
				t.Fatalf("lease: %d keys granted %d", len(ttl.Keys), ttl.GrantedTTL)
			}
		})
	})
}
