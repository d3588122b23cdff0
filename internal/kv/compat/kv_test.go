package compat

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestKV(t *testing.T) {
	t.Parallel()
	// Compaction is global: its case runs last so that the others can read their history.
	runCases(t, slices.Concat(rangeCases, writeCases, txnCases, compactCases))
}

var rangeCases = []conformanceCase{
	{"range/single_key", func(e *env) {
		p := e.put(e.k("a"), "1")
		e.put(e.k("b"), "2")
		r := e.get(e.k("a"))
		if len(r.Kvs) != 1 || r.Count != 1 || r.More {
			e.t.Fatalf("got %d kvs, count %d, more %v; want 1, 1, false", len(r.Kvs), r.Count, r.More)
		}
		kv := r.Kvs[0]
		if string(kv.Value) != "1" || kv.Version != 1 || kv.CreateRevision != p.Header.Revision ||
			kv.ModRevision != p.Header.Revision || kv.Lease != 0 {
			e.t.Fatalf("got %v, want value 1, version 1, create=mod=%d", kv, p.Header.Revision)
		}
		if r.Header.Revision != p.Header.Revision+1 {
			e.t.Fatalf("header revision %d, want the store's current %d", r.Header.Revision, p.Header.Revision+1)
		}
		if r := e.get(e.k("missing")); len(r.Kvs) != 0 || r.Count != 0 {
			e.t.Fatalf("missing key: got %v", r.Kvs)
		}
	}},
	{"range/range_end", func(e *env) {
		for _, k := range []string{"a", "b", "c", "d"} {
			e.put(e.k(k), k)
		}
		r := e.get(e.k("a"), clientv3.WithRange(e.k("c")))
		if got, want := keys(r.Kvs), []string{e.k("a"), e.k("b")}; !equalStrings(got, want) || r.Count != 2 {
			e.t.Fatalf("got %v count %d, want %v count 2", got, r.Count, want)
		}
		// An end at or before the key selects nothing; etcd does not call it an error.
		if r := e.get(e.k("c"), clientv3.WithRange(e.k("a"))); len(r.Kvs) != 0 || r.Count != 0 {
			e.t.Fatalf("reversed range: got %v", keys(r.Kvs))
		}
	}},
	{"range/prefix", func(e *env) {
		for _, k := range []string{"x/1", "x/2", "x0", "y"} {
			e.put(e.k(k), k)
		}
		r := e.get(e.k("x/"), clientv3.WithPrefix())
		if got, want := keys(r.Kvs), []string{e.k("x/1"), e.k("x/2")}; !equalStrings(got, want) {
			e.t.Fatalf("got %v, want %v", got, want)
		}
	}},
	{"range/from_key", func(e *env) {
		// '~' sorts after every other prefix used on this server, so from-key sees only these.
		for _, k := range []string{"a", "b", "c"} {
			e.put("~fromkey/"+k, k)
		}
		r := e.get("~fromkey/b", clientv3.WithFromKey())
		if got, want := keys(r.Kvs), []string{"~fromkey/b", "~fromkey/c"}; !equalStrings(got, want) {
			e.t.Fatalf("got %v, want %v", got, want)
		}
		// "\x00" as the whole key with from-key is every key.
		all := e.get("\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
		if all.Count < 3 {
			e.t.Fatalf("from-key \\x00 counted %d keys", all.Count)
		}
	}},
	{"range/limit_more_count", func(e *env) {
		for i := range 5 {
			e.put(e.k(fmt.Sprint(i)), "v")
		}
		for _, tc := range []struct {
			limit    int64
			n        int
			wantMore bool
		}{{1, 1, true}, {2, 2, true}, {4, 4, true}, {5, 5, false}, {10, 5, false}, {0, 5, false}} {
			r := e.get(e.k(""), clientv3.WithPrefix(), clientv3.WithLimit(tc.limit))
			if len(r.Kvs) != tc.n || r.More != tc.wantMore || r.Count != 5 {
				e.t.Errorf("limit %d: got %d kvs, more %v, count %d; want %d, %v, 5",
					tc.limit, len(r.Kvs), r.More, r.Count, tc.n, tc.wantMore)
			}
		}
	}},
	{"range/count_only", func(e *env) {
		for i := range 5 {
			e.put(e.k(fmt.Sprint(i)), "v")
		}
		r := e.get(e.k(""), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if r.Count != 5 || len(r.Kvs) != 0 || r.More {
			e.t.Fatalf("got count %d, %d kvs, more %v; want 5, 0, false", r.Count, len(r.Kvs), r.More)
		}
	}},
	{"range/keys_only", func(e *env) {
		p := e.put(e.k("a"), "value")
		r := e.get(e.k("a"), clientv3.WithKeysOnly())
		if len(r.Kvs) != 1 || len(r.Kvs[0].Value) != 0 || r.Kvs[0].ModRevision != p.Header.Revision || r.Kvs[0].Version != 1 {
			e.t.Fatalf("got %v, want the key with metadata and no value", r.Kvs)
		}
	}},
	{"range/revision_history", func(e *env) {
		k := e.k("h")
		r1 := e.put(k, "v1").Header.Revision
		r2 := e.put(k, "v2").Header.Revision
		r3 := res(e.c.Delete(testCtx(e.t, 5*time.Second), k)).must(e.t).Header.Revision
		r4 := e.put(k, "v3").Header.Revision
		for _, tc := range []struct {
			rev                    int64
			value                  string // "" for absent
			version, create, modif int64
		}{
			{r1 - 1, "", 0, 0, 0},
			{r1, "v1", 1, r1, r1},
			{r2, "v2", 2, r1, r2},
			{r3, "", 0, 0, 0},
			{r4, "v3", 1, r4, r4},
			{0, "v3", 1, r4, r4},
		} {
			r := e.get(k, clientv3.WithRev(tc.rev))
			if r.Header.Revision != r4 {
				e.t.Errorf("rev %d: header revision %d, want the current %d", tc.rev, r.Header.Revision, r4)
			}
			if tc.value == "" {
				if len(r.Kvs) != 0 {
					e.t.Errorf("rev %d: got %v, want no key", tc.rev, r.Kvs)
				}
				continue
			}
			if len(r.Kvs) != 1 {
				e.t.Fatalf("rev %d: got %d kvs", tc.rev, len(r.Kvs))
			}
			kv := r.Kvs[0]
			if string(kv.Value) != tc.value || kv.Version != tc.version || kv.CreateRevision != tc.create || kv.ModRevision != tc.modif {
				e.t.Errorf("rev %d: got %v, want value %s version %d create %d mod %d", tc.rev, kv, tc.value, tc.version, tc.create, tc.modif)
			}
		}
	}},
	{"range/sort", func(e *env) {
		// Distinct values per sort target, so that no order depends on how ties break.
		e.put(e.k("c"), "v2")
		e.put(e.k("a"), "v3")
		e.put(e.k("b"), "v1")
		e.put(e.k("b"), "v1")
		e.put(e.k("b"), "v1")
		e.put(e.k("c"), "v2")
		base := e.get(e.k(""), clientv3.WithPrefix()).Kvs
		field := map[clientv3.SortTarget]func(kv *mvccpb.KeyValue) string{
			clientv3.SortByKey:            func(kv *mvccpb.KeyValue) string { return string(kv.Key) },
			clientv3.SortByVersion:        func(kv *mvccpb.KeyValue) string { return fmt.Sprintf("%020d", kv.Version) },
			clientv3.SortByCreateRevision: func(kv *mvccpb.KeyValue) string { return fmt.Sprintf("%020d", kv.CreateRevision) },
			clientv3.SortByModRevision:    func(kv *mvccpb.KeyValue) string { return fmt.Sprintf("%020d", kv.ModRevision) },
			clientv3.SortByValue:          func(kv *mvccpb.KeyValue) string { return string(kv.Value) },
		}
		for target, f := range field {
			for _, order := range []clientv3.SortOrder{clientv3.SortAscend, clientv3.SortDescend} {
				want := append([]*mvccpb.KeyValue(nil), base...)
				sort.Slice(want, func(i, j int) bool {
					if order == clientv3.SortDescend {
						return f(want[i]) > f(want[j])
					}
					return f(want[i]) < f(want[j])
				})
				r := e.get(e.k(""), clientv3.WithPrefix(), clientv3.WithSort(target, order))
				if !equalStrings(keys(r.Kvs), keys(want)) {
					e.t.Errorf("sort by %v %v: got %v, want %v", target, order, keys(r.Kvs), keys(want))
				}
				// The limit applies after sorting; count stays the range's size.
				r = e.get(e.k(""), clientv3.WithPrefix(), clientv3.WithSort(target, order), clientv3.WithLimit(1))
				if !equalStrings(keys(r.Kvs), keys(want[:1])) || !r.More || r.Count != 3 {
					e.t.Errorf("sort by %v %v limit 1: got %v more %v count %d, want %v true 3",
						target, order, keys(r.Kvs), r.More, r.Count, keys(want[:1]))
				}
			}
		}
		// SortNone with a target other than the key sorts ascending (etcd's rule).
		r := res(e.c.Get(testCtx(e.t, 5*time.Second), e.k(""), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByValue, clientv3.SortNone))).must(e.t)
		if got, want := keys(r.Kvs), []string{e.k("b"), e.k("c"), e.k("a")}; !equalStrings(got, want) {
			e.t.Errorf("sort by value, order none: got %v, want %v", got, want)
		}
	}},
	{"range/revision_filters", func(e *env) {
		e.put(e.k("a"), "1")
		e.put(e.k("b"), "1")
		e.put(e.k("c"), "1")
		e.put(e.k("a"), "2")
		base := e.get(e.k(""), clientv3.WithPrefix()).Kvs // a: create r0 mod r3; b: r1; c: r2
		ca, cb, cc := base[0].CreateRevision, base[1].CreateRevision, base[2].CreateRevision
		ma := base[0].ModRevision
		for _, tc := range []struct {
			name string
			opt  clientv3.OpOption
			want []string
		}{
			{"min_mod", clientv3.WithMinModRev(cc), []string{"a", "c"}},
			{"max_mod", clientv3.WithMaxModRev(cb), []string{"b"}},
			{"min_create", clientv3.WithMinCreateRev(cb), []string{"b", "c"}},
			{"max_create", clientv3.WithMaxCreateRev(ca), []string{"a"}},
			{"max_mod_all", clientv3.WithMaxModRev(ma), []string{"a", "b", "c"}},
		} {
			r := e.get(e.k(""), clientv3.WithPrefix(), tc.opt)
			var want []string
			for _, k := range tc.want {
				want = append(want, e.k(k))
			}
			if !equalStrings(keys(r.Kvs), want) {
				e.t.Errorf("%s: got %v, want %v", tc.name, keys(r.Kvs), want)
			}
			// etcd counts the range before filtering: Count is 3 whatever the filter keeps.
			if r.Count != 3 {
				e.t.Errorf("%s: count %d, want 3 (the unfiltered range, as etcd)", tc.name, r.Count)
			}
		}
	}},
	{"range/serializable", func(e *env) {
		p := e.put(e.k("s"), "v")
		r := e.get(e.k("s"), clientv3.WithSerializable())
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" || r.Header.Revision < p.Header.Revision {
			e.t.Fatalf("serializable get: %v header %d", r.Kvs, r.Header.Revision)
		}
	}},
}

var writeCases = []conformanceCase{
	{"put/revision_and_version", func(e *env) {
		k := e.k("p")
		p1 := e.put(k, "1")
		p2 := e.put(k, "2")
		if p2.Header.Revision != p1.Header.Revision+1 {
			e.t.Fatalf("consecutive puts got revisions %d, %d", p1.Header.Revision, p2.Header.Revision)
		}
		if kv := e.get(k).Kvs[0]; kv.Version != 2 || kv.CreateRevision != p1.Header.Revision || kv.ModRevision != p2.Header.Revision {
			e.t.Fatalf("after two puts: %v", kv)
		}
		res(e.c.Delete(testCtx(e.t, 5*time.Second), k)).must(e.t)
		p3 := e.put(k, "3")
		if kv := e.get(k).Kvs[0]; kv.Version != 1 || kv.CreateRevision != p3.Header.Revision {
			e.t.Fatalf("a delete resets version and create revision: got %v", kv)
		}
	}},
	{"put/lease", func(e *env) {
		l := res(e.c.Grant(testCtx(e.t, 5*time.Second), 60)).must(e.t)
		e.put(e.k("l"), "v", clientv3.WithLease(l.ID))
		if kv := e.get(e.k("l")).Kvs[0]; kv.Lease != int64(l.ID) {
			e.t.Fatalf("lease %d, want %d", kv.Lease, l.ID)
		}
		_, err := e.c.Put(testCtx(e.t, 5*time.Second), e.k("l2"), "v", clientv3.WithLease(l.ID+12345))
		wantErr(e.t, err, rpctypes.ErrLeaseNotFound)
		if r := e.get(e.k("l2")); len(r.Kvs) != 0 {
			e.t.Fatal("a put with an unknown lease was applied")
		}
	}},
	{"put/prev_kv", func(e *env) {
		k := e.k("pk")
		if p := e.put(k, "1", clientv3.WithPrevKV()); p.PrevKv != nil {
			e.t.Fatalf("first put: prev_kv %v, want none", p.PrevKv)
		}
		p1 := e.get(k).Kvs[0]
		p := e.put(k, "2", clientv3.WithPrevKV())
		if p.PrevKv == nil || string(p.PrevKv.Value) != "1" || p.PrevKv.ModRevision != p1.ModRevision || p.PrevKv.Version != 1 {
			e.t.Fatalf("second put: prev_kv %v, want %v", p.PrevKv, p1)
		}
	}},
	{"put/ignore_value", func(e *env) {
		k := e.k("iv")
		l := res(e.c.Grant(testCtx(e.t, 5*time.Second), 60)).must(e.t)
		e.put(k, "keep")
		p := e.put(k, "", clientv3.WithIgnoreValue(), clientv3.WithLease(l.ID))
		kv := e.get(k).Kvs[0]
		if string(kv.Value) != "keep" || kv.Lease != int64(l.ID) || kv.Version != 2 || kv.ModRevision != p.Header.Revision {
			e.t.Fatalf("after ignore_value put: %v", kv)
		}
		_, err := e.c.Put(testCtx(e.t, 5*time.Second), e.k("missing"), "", clientv3.WithIgnoreValue())
		wantErr(e.t, err, rpctypes.ErrKeyNotFound)
		_, err = e.c.Put(testCtx(e.t, 5*time.Second), k, "x", clientv3.WithIgnoreValue())
		wantErr(e.t, err, rpctypes.ErrValueProvided)
	}},
	{"put/ignore_lease", func(e *env) {
		k := e.k("il")
		l := res(e.c.Grant(testCtx(e.t, 5*time.Second), 60)).must(e.t)
		e.put(k, "1", clientv3.WithLease(l.ID))
		e.put(k, "2", clientv3.WithIgnoreLease())
		if kv := e.get(k).Kvs[0]; string(kv.Value) != "2" || kv.Lease != int64(l.ID) {
			e.t.Fatalf("after ignore_lease put: %v", kv)
		}
		_, err := e.c.Put(testCtx(e.t, 5*time.Second), e.k("missing"), "v", clientv3.WithIgnoreLease())
		wantErr(e.t, err, rpctypes.ErrKeyNotFound)
		_, err = e.c.Put(testCtx(e.t, 5*time.Second), k, "3", clientv3.WithIgnoreLease(), clientv3.WithLease(l.ID))
		wantErr(e.t, err, rpctypes.ErrLeaseProvided)
		// A plain put detaches the key from its lease.
		e.put(k, "4")
		if kv := e.get(k).Kvs[0]; kv.Lease != 0 {
			e.t.Fatalf("a put without lease kept lease %d", kv.Lease)
		}
	}},
	{"delete/single_and_range", func(e *env) {
		for _, k := range []string{"a", "b", "c"} {
			e.put(e.k(k), k)
		}
		ctx := testCtx(e.t, 5*time.Second)
		d := res(e.c.Delete(ctx, e.k("a"))).must(e.t)
		if d.Deleted != 1 {
			e.t.Fatalf("deleted %d, want 1", d.Deleted)
		}
		again := res(e.c.Delete(ctx, e.k("a"))).must(e.t)
		if again.Deleted != 0 || again.Header.Revision != d.Header.Revision {
			e.t.Fatalf("deleting a missing key: deleted %d at revision %d, want 0 and no new revision (%d)",
				again.Deleted, again.Header.Revision, d.Header.Revision)
		}
		d = res(e.c.Delete(ctx, e.k(""), clientv3.WithPrefix())).must(e.t)
		if d.Deleted != 2 || d.Header.Revision != again.Header.Revision+1 {
			e.t.Fatalf("prefix delete: deleted %d at revision %d, want 2 at %d", d.Deleted, d.Header.Revision, again.Header.Revision+1)
		}
	}},
	{"delete/prev_kv", func(e *env) {
		e.put(e.k("b"), "2")
		e.put(e.k("a"), "1")
		d := res(e.c.Delete(testCtx(e.t, 5*time.Second), e.k(""), clientv3.WithPrefix(), clientv3.WithPrevKV())).must(e.t)
		if d.Deleted != 2 || len(d.PrevKvs) != 2 || string(d.PrevKvs[0].Value) != "1" || string(d.PrevKvs[1].Value) != "2" {
			e.t.Fatalf("got deleted %d prev %v, want both keys in key order", d.Deleted, d.PrevKvs)
		}
	}},
}

var compactCases = []conformanceCase{
	{"compact", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		k := e.k("c")
		r1 := e.put(k, "1").Header.Revision
		r2 := e.put(k, "2").Header.Revision
		e.put(k, "3")
		cur := e.rev()
		if _, err := e.c.Compact(ctx, r2, clientv3.WithCompactPhysical()); err != nil {
			e.t.Fatalf("compact at %d: %v", r2, err)
		}
		_, err := e.c.Get(ctx, k, clientv3.WithRev(r1))
		wantErr(e.t, err, rpctypes.ErrCompacted)
		// The compaction revision itself stays readable.
		if r := e.get(k, clientv3.WithRev(r2)); len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "2" {
			e.t.Fatalf("read at the compaction revision: %v", r.Kvs)
		}
		_, err = e.c.Get(ctx, k, clientv3.WithRev(cur+10))
		wantErr(e.t, err, rpctypes.ErrFutureRev)
		_, err = e.c.Compact(ctx, r2)
		wantErr(e.t, err, rpctypes.ErrCompacted)
		_, err = e.c.Compact(ctx, r1)
		wantErr(e.t, err, rpctypes.ErrCompacted)
		_, err = e.c.Compact(ctx, cur+10)
		wantErr(e.t, err, rpctypes.ErrFutureRev)
		// Compacting at the current revision is allowed; the latest values stay.
		c := res(e.c.Compact(ctx, cur)).must(e.t)
		if c.Header.Revision != cur {
			e.t.Fatalf("compaction response revision %d, want %d", c.Header.Revision, cur)
		}
		if r := e.get(k); len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "3" || r.Kvs[0].CreateRevision != r1 || r.Kvs[0].Version != 3 {
			e.t.Fatalf("after compaction: %v", r.Kvs)
		}
	}},
}
