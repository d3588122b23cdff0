package server

import (
	"context"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

func fuzzStore(f *testing.F) *mvcc.Store {
	st, err := mvcc.Open(mvcc.DefaultConfig(f.TempDir()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	for _, k := range []string{"a", "b", "b/1", "c"} {
		if _, err := st.Put(context.Background(), &pb.PutRequest{Key: []byte(k), Value: []byte("v")}); err != nil {
			f.Fatal(err)
		}
	}
	return st
}

func mustMarshal(f *testing.F, m interface{ Marshal() ([]byte, error) }) []byte {
	b, err := m.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzTxn feeds arbitrary wire bytes through the Txn path: decoding, etcd's validation, then the
// store. Nothing may panic, and the store must keep serving whatever the request did.
func FuzzTxn(f *testing.F) {
	st := fuzzStore(f)
	f.Add(mustMarshal(f, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("a"), Target: pb.Compare_MOD, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_ModRevision{ModRevision: 1}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("a"), Value: []byte("x"), PrevKv: true}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("\x00"), RangeEnd: []byte("\x00"), Limit: 2, SortOrder: pb.RangeRequest_DESCEND}}}},
	}))
	f.Add(mustMarshal(f, &pb.TxnRequest{Success: []*pb.RequestOp{
		{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("b"), RangeEnd: []byte("c"), PrevKv: true}}},
		{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("z"), IgnoreValue: true}}}}}}},
	}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pb.TxnRequest
		if err := r.Unmarshal(data); err != nil {
			return
		}
		if err := checkTxn(&r, maxTxnOps); err != nil {
			return
		}
		_, _ = st.Txn(context.Background(), &r)
		if _, err := st.Range(&pb.RangeRequest{Key: []byte("a")}); err != nil {
			t.Fatalf("store stopped serving: %v", err)
		}
	})
}

// FuzzRange feeds arbitrary wire bytes through the Range path.
func FuzzRange(f *testing.F) {
	st := fuzzStore(f)
	f.Add(mustMarshal(f, &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("c"), Limit: 1, CountOnly: true}))
	f.Add(mustMarshal(f, &pb.RangeRequest{Key: []byte("\x00"), RangeEnd: []byte("\x00"), SortTarget: pb.RangeRequest_VALUE, MinModRevision: 2, Revision: 3}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pb.RangeRequest
		if err := r.Unmarshal(data); err != nil {
			return
		}
		if err := checkRangeRequest(&r); err != nil {
			return
		}
		resp, err := st.Range(&r)
		if err == nil && r.Limit > 0 && int64(len(resp.Kvs)) > r.Limit {
			t.Fatalf("limit %d, got %d kvs", r.Limit, len(resp.Kvs))
		}
	})
}
