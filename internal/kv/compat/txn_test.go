package compat

import (
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var txnCases = []conformanceCase{
	{"txn/compare_matrix", txnCompareMatrix},
	{"txn/compare_range", func(e *env) {
		e.put(e.k("r/a"), "1")
		e.put(e.k("r/b"), "1")
		e.put(e.k("r/b"), "2")
		ctx := testCtx(e.t, 10*time.Second)
		for _, tc := range []struct {
			name string
			cmp  clientv3.Cmp
			want bool
		}{
			{"all versions > 0", clientv3.Compare(clientv3.Version(e.k("r/")), ">", 0).WithPrefix(), true},
			{"all versions = 1", clientv3.Compare(clientv3.Version(e.k("r/")), "=", 1).WithPrefix(), false},
			{"all versions < 3", clientv3.Compare(clientv3.Version(e.k("r/")), "<", 3).WithPrefix(), true},
			{"range [a,b) value = 1", clientv3.Compare(clientv3.Value(e.k("r/a")), "=", "1").WithRange(e.k("r/b")), true},
			{"empty range version = 0", clientv3.Compare(clientv3.Version(e.k("none/")), "=", 0).WithPrefix(), true},
			{"empty range value = ''", clientv3.Compare(clientv3.Value(e.k("none/")), "=", "").WithPrefix(), false},
		} {
			r := res(e.c.Txn(ctx).If(tc.cmp).Commit()).must(e.t)
			if r.Succeeded != tc.want {
				e.t.Errorf("%s: succeeded %v, want %v", tc.name, r.Succeeded, tc.want)
			}
		}
	}},
	{"txn/branches", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		e.put(e.k("old"), "1")
		before := e.rev()
		// Reads inside a write txn see its earlier writes; all writes share one revision.
		r := res(e.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.k("t")), "=", 0)).Then(
			clientv3.OpPut(e.k("t"), "1"), clientv3.OpPut(e.k("u"), "1"), clientv3.OpGet(e.k("t")), clientv3.OpDelete(e.k("old")),
		).Else(clientv3.OpGet(e.k("t"))).Commit()).must(e.t)
		if !r.Succeeded || r.Header.Revision != before+1 || len(r.Responses) != 4 {
			e.t.Fatalf("then branch: succeeded %v revision %d (want %d) %d responses", r.Succeeded, r.Header.Revision, before+1, len(r.Responses))
		}
		got := r.Responses[2].GetResponseRange()
		if got == nil || len(got.Kvs) != 1 || got.Kvs[0].ModRevision != before+1 || string(got.Kvs[0].Value) != "1" {
			e.t.Fatalf("a get after a put in the same txn: %v", got)
		}
		if d := r.Responses[3].GetResponseDeleteRange(); d == nil || d.Deleted != 1 {
			e.t.Fatalf("delete response: %v", d)
		}
		if r.Responses[0].GetResponsePut() == nil || r.Responses[1].GetResponsePut() == nil {
			e.t.Fatalf("put responses: %v", r.Responses)
		}
		for _, k := range []string{"t", "u"} {
			if kv := e.get(e.k(k)).Kvs[0]; kv.ModRevision != before+1 {
				e.t.Fatalf("%s mod revision %d, want the txn's %d", k, kv.ModRevision, before+1)
			}
		}
		// The else branch; read-only, so no new revision.
		r = res(e.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.k("t")), "=", 0)).Then(
			clientv3.OpPut(e.k("t"), "2"),
		).Else(clientv3.OpGet(e.k("t"))).Commit()).must(e.t)
		if r.Succeeded || r.Header.Revision != before+1 || len(r.Responses) != 1 || len(r.Responses[0].GetResponseRange().Kvs) != 1 {
			e.t.Fatalf("else branch: succeeded %v revision %d responses %v", r.Succeeded, r.Header.Revision, r.Responses)
		}
		// A failed compare with an empty else branch changes nothing.
		r = res(e.c.Txn(ctx).If(clientv3.Compare(clientv3.Value(e.k("t")), "=", "no")).Then(clientv3.OpPut(e.k("t"), "3")).Commit()).must(e.t)
		if r.Succeeded || len(r.Responses) != 0 || r.Header.Revision != before+1 {
			e.t.Fatalf("failed compare, empty else: %v", r)
		}
		// An empty txn succeeds.
		if r = res(e.c.Txn(ctx).Commit()).must(e.t); !r.Succeeded || r.Header.Revision != before+1 {
			e.t.Fatalf("empty txn: succeeded %v revision %d", r.Succeeded, r.Header.Revision)
		}
	}},
	{"txn/nested", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		e.put(e.k("n"), "1")
		// etcd evaluates every compare, nested ones included, against the state before the
		// txn: the nested compare does not see the outer put, so the nested else branch runs.
		// Reads do see earlier writes of the same txn.
		r := res(e.c.Txn(ctx).If(clientv3.Compare(clientv3.Value(e.k("n")), "=", "1")).Then(
			clientv3.OpPut(e.k("outer"), "x"),
			clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.Version(e.k("outer")), "=", 1)},
				[]clientv3.Op{clientv3.OpPut(e.k("inner"), "then")},
				[]clientv3.Op{clientv3.OpPut(e.k("inner"), "else"), clientv3.OpGet(e.k("outer"))},
			),
		).Commit()).must(e.t)
		if !r.Succeeded || len(r.Responses) != 2 {
			e.t.Fatalf("outer txn: %v", r)
		}
		in := r.Responses[1].GetResponseTxn()
		if in == nil || in.Succeeded || len(in.Responses) != 2 {
			e.t.Fatalf("nested txn response: %v, want the else branch (compares see the state before the txn)", in)
		}
		if got := in.Responses[1].GetResponseRange(); got == nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "x" {
			e.t.Fatalf("nested get of the outer put: %v", got)
		}
		if kv := e.get(e.k("inner")).Kvs[0]; string(kv.Value) != "else" || kv.ModRevision != r.Header.Revision {
			e.t.Fatalf("inner key %v, want 'else' at the txn's revision %d", kv, r.Header.Revision)
		}
	}},
	{"txn/duplicate_key", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		a, b := e.k("a"), e.k("b")
		for _, tc := range []struct {
			name string
			ops  []clientv3.Op
			els  []clientv3.Op
			ok   bool
		}{
			{"put twice", []clientv3.Op{clientv3.OpPut(a, "1"), clientv3.OpPut(a, "2")}, nil, false},
			{"put and delete", []clientv3.Op{clientv3.OpPut(a, "1"), clientv3.OpDelete(a)}, nil, false},
			{"put inside deleted range", []clientv3.Op{clientv3.OpDelete(e.k(""), clientv3.WithPrefix()), clientv3.OpPut(a, "1")}, nil, false},
			{"put in nested txn and outside", []clientv3.Op{clientv3.OpPut(a, "1"),
				clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut(a, "2")}, nil)}, nil, false},
			{"delete twice", []clientv3.Op{clientv3.OpDelete(a), clientv3.OpDelete(a)}, nil, true},
			{"put in then and in else", []clientv3.Op{clientv3.OpPut(a, "1")}, []clientv3.Op{clientv3.OpPut(a, "2")}, true},
			{"nested then and else", []clientv3.Op{clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut(b, "1")}, []clientv3.Op{clientv3.OpPut(b, "2")})}, nil, true},
			{"get twice", []clientv3.Op{clientv3.OpGet(a), clientv3.OpGet(a), clientv3.OpPut(a, "1")}, nil, true},
		} {
			before := e.rev()
			_, err := e.c.Txn(ctx).Then(tc.ops...).Else(tc.els...).Commit()
			if tc.ok {
				if err != nil {
					e.t.Errorf("%s: %v", tc.name, err)
				}
				continue
			}
			if err == nil {
				e.t.Errorf("%s: accepted, want %v", tc.name, rpctypes.ErrDuplicateKey)
				continue
			}
			wantErr(e.t, err, rpctypes.ErrDuplicateKey)
			if after := e.rev(); after != before {
				e.t.Errorf("%s: a rejected txn moved the revision from %d to %d", tc.name, before, after)
			}
		}
	}},
	{"txn/too_many_ops", func(e *env) {
		ctx := testCtx(e.t, 10*time.Second)
		ops := func(n int) []clientv3.Op {
			var o []clientv3.Op
			for i := range n {
				o = append(o, clientv3.OpPut(e.k(fmt.Sprint(i)), "v"))
			}
			return o
		}
		if _, err := e.c.Txn(ctx).Then(ops(128)...).Commit(); err != nil {
			e.t.Fatalf("128 ops: %v", err)
		}
		_, err := e.c.Txn(ctx).Then(ops(129)...).Commit()
		wantErr(e.t, err, rpctypes.ErrTooManyOps)
		var cmps []clientv3.Cmp
		for i := range 129 {
			cmps = append(cmps, clientv3.Compare(clientv3.Version(e.k(fmt.Sprint(i))), ">", -1))
		}
		_, err = e.c.Txn(ctx).If(cmps...).Commit()
		wantErr(e.t, err, rpctypes.ErrTooManyOps)
	}},
}

// txnCompareMatrix checks every compare target and result against a present and a missing
// key with operands below, at and above the key's field. A missing key compares as a zero
// KeyValue, except that a VALUE compare on it always fails.
func txnCompareMatrix(e *env) {
	ctx := testCtx(e.t, 30*time.Second)
	l := res(e.c.Grant(ctx, 600)).must(e.t)
	k := e.k("present")
	e.put(k, "m", clientv3.WithLease(l.ID))
	e.put(k, "m", clientv3.WithLease(l.ID))
	kv := e.get(k).Kvs[0]
	missing := e.k("missing")

	type field struct {
		name string
		cmp  func(key string) clientv3.Cmp
		get  func(kv *mvccpb.KeyValue) int64
	}
	fields := []field{
		{"version", clientv3.Version, func(kv *mvccpb.KeyValue) int64 { return kv.Version }},
		{"create", clientv3.CreateRevision, func(kv *mvccpb.KeyValue) int64 { return kv.CreateRevision }},
		{"mod", clientv3.ModRevision, func(kv *mvccpb.KeyValue) int64 { return kv.ModRevision }},
		{"lease", clientv3.LeaseValue, func(kv *mvccpb.KeyValue) int64 { return kv.Lease }},
	}
	ops := []string{"=", "!=", ">", "<"}
	holds := func(op string, c int) bool {
		switch op {
		case "=":
			return c == 0
		case "!=":
			return c != 0
		case ">":
			return c > 0
		}
		return c < 0
	}
	check := func(desc string, cmp clientv3.Cmp, want bool) {
		r, err := e.c.Txn(ctx).If(cmp).Commit()
		if err != nil {
			e.t.Errorf("%s: %v", desc, err)
			return
		}
		if r.Succeeded != want {
			e.t.Errorf("%s: succeeded %v, want %v", desc, r.Succeeded, want)
		}
	}
	for _, f := range fields {
		for _, key := range []string{k, missing} {
			actual := int64(0)
			if key == k {
				actual = f.get(kv)
			}
			for _, operand := range []int64{actual - 1, actual, actual + 1} {
				for _, op := range ops {
					want := holds(op, compareInt(actual, operand))
					var v any = operand
					if f.name == "lease" {
						v = clientv3.LeaseID(operand)
					}
					check(fmt.Sprintf("%s(%s) %s %d", f.name, strings.TrimPrefix(key, e.prefix), op, operand),
						clientv3.Compare(f.cmp(key), op, v), want)
				}
			}
		}
	}
	for _, operand := range []string{"", "a", "m", "z"} {
		for _, op := range ops {
			check(fmt.Sprintf("value(present) %s %q", op, operand), clientv3.Compare(clientv3.Value(k), op, operand),
				holds(op, strings.Compare("m", operand)))
			check(fmt.Sprintf("value(missing) %s %q", op, operand), clientv3.Compare(clientv3.Value(missing), op, operand), false)
		}
	}
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
