package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestBadInput sends what a server must refuse, checks etcd's exact gRPC code and message
// on the wire, and after each that the server still serves.
func TestBadInput(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{maxRequestBytes: 64 << 10})
		c := s.client(t)
		kv := pb.NewKVClient(c.ActiveConnection())
		lease := pb.NewLeaseClient(c.ActiveConnection())
		ctx := testCtx(t, 60*time.Second)
		res(c.Put(ctx, "k", "v")).must(t)
		rev := res(c.Put(ctx, "k", "v2")).must(t).Header.Revision
		res(c.Compact(ctx, rev)).must(t)

		put := func(key string, val []byte) *pb.PutRequest { return &pb.PutRequest{Key: []byte(key), Value: val} }
		op := func(p *pb.PutRequest) *pb.RequestOp {
			return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: p}}
		}
		for _, tc := range []struct {
			name string
			call func() error
			want error
		}{
			{"request over --max-request-bytes", func() error {
				_, err := kv.Put(ctx, put("big", make([]byte, 100<<10)))
				return err
			}, rpctypes.ErrGRPCRequestTooLarge},
			{"txn over --max-request-bytes", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{op(put("a", make([]byte, 40<<10))), op(put("b", make([]byte, 40<<10)))}})
				return err
			}, rpctypes.ErrGRPCRequestTooLarge},
			{"put empty key", func() error { _, err := kv.Put(ctx, put("", []byte("v"))); return err }, rpctypes.ErrGRPCEmptyKey},
			{"range empty key", func() error { _, err := kv.Range(ctx, &pb.RangeRequest{}); return err }, rpctypes.ErrGRPCEmptyKey},
			{"delete empty key", func() error { _, err := kv.DeleteRange(ctx, &pb.DeleteRangeRequest{}); return err }, rpctypes.ErrGRPCEmptyKey},
			{"txn compare empty key", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Compare: []*pb.Compare{{Target: pb.Compare_VERSION}}})
				return err
			}, rpctypes.ErrGRPCEmptyKey},
			{"txn op empty key", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{op(put("", nil))}})
				return err
			}, rpctypes.ErrGRPCEmptyKey},
			{"invalid sort order", func() error {
				_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("k"), SortOrder: 7})
				return err
			}, rpctypes.ErrGRPCInvalidSortOption},
			{"invalid sort target", func() error {
				_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("k"), SortTarget: 9})
				return err
			}, rpctypes.ErrGRPCInvalidSortOption},
			{"empty txn op", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{{}}})
				return err
			}, rpctypes.ErrGRPCKeyNotFound},
			{"put unknown lease", func() error {
				_, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("k"), Lease: 0x5eed})
				return err
			}, rpctypes.ErrGRPCLeaseNotFound},
			{"txn put unknown lease", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{op(&pb.PutRequest{Key: []byte("k"), Lease: 0x5eed})}})
				return err
			}, rpctypes.ErrGRPCLeaseNotFound},
			{"revoke unknown lease", func() error { _, err := lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: 0x5eed}); return err }, rpctypes.ErrGRPCLeaseNotFound},
			{"lease ttl too large", func() error {
				_, err := lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 9_000_000_001})
				return err
			}, rpctypes.ErrGRPCLeaseTTLTooLarge},
			{"txn put twice", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{op(put("d", nil)), op(put("d", nil))}})
				return err
			}, rpctypes.ErrGRPCDuplicateKey},
			{"txn too many ops", func() error {
				ops := make([]*pb.RequestOp, 129)
				for i := range ops {
					ops[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("k")}}}
				}
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: ops})
				return err
			}, rpctypes.ErrGRPCTooManyOps},
			{"range at compacted revision", func() error {
				_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("k"), Revision: rev - 1})
				return err
			}, rpctypes.ErrGRPCCompacted},
			{"range at future revision", func() error {
				_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("k"), Revision: rev + 100})
				return err
			}, rpctypes.ErrGRPCFutureRev},
			{"txn range at compacted revision", func() error {
				_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{
					RequestRange: &pb.RangeRequest{Key: []byte("k"), Revision: rev - 1}}}}})
				return err
			}, rpctypes.ErrGRPCCompacted},
			{"compact at compacted revision", func() error {
				_, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: rev - 1})
				return err
			}, rpctypes.ErrGRPCCompacted},
			{"compact at future revision", func() error {
				_, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: rev + 100})
				return err
			}, rpctypes.ErrGRPCFutureRev},
		} {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				before := res(c.Get(ctx, "health")).must(t).Header.Revision
				wantErr(t, tc.call(), tc.want)
				// Still serving, and the refused request wrote nothing.
				if after := res(c.Put(ctx, "alive", "1")).must(t).Header.Revision; after != before+1 {
					t.Fatalf("a refused request moved the revision: %d before, next put at %d", before, after)
				}
			})
		}

		t.Run("invalid_ranges", func(t *testing.T) {
			// A range whose end is before its key is empty, not an error, for reads and
			// deletes; a watch on it is created and cancelled at once.
			r := res(kv.Range(ctx, &pb.RangeRequest{Key: []byte("z"), RangeEnd: []byte("a")})).must(t)
			if len(r.Kvs) != 0 || r.Count != 0 {
				t.Fatalf("reversed range: %v", r)
			}
			d := res(kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("z"), RangeEnd: []byte("a")})).must(t)
			if d.Deleted != 0 {
				t.Fatalf("reversed delete: %v", d)
			}
			wc := c.Watch(watchCtx(t), "z", clientv3.WithRange("a"))
			select {
			case wr := <-wc:
				if !wr.Canceled {
					t.Fatalf("watch on a reversed range: %+v, want canceled", wr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no response to a watch on a reversed range")
			}
		})
	})
}

// TestQuota fills a member with a small --quota-backend-bytes until NOSPACE: then only
// reads and deletes work, until compaction, defragmentation and disarming the alarm.
func TestQuota(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{quotaBackendBytes: 2 << 20})
		c := s.client(t)
		ctx := testCtx(t, 60*time.Second)
		val := strings.Repeat("x", 64<<10)
		var err error
		n := 0
		for ; n < 200; n++ { // distinct keys: live data, not only history, outgrows the quota
			if _, err = c.Put(ctx, fmt.Sprintf("fill/%03d", n), val); err != nil {
				break
			}
		}
		wantErr(t, err, rpctypes.ErrNoSpace)
		t.Logf("NOSPACE after %d puts of 64 KiB with a 2 MiB quota", n)

		alarms := res(c.AlarmList(ctx)).must(t)
		if len(alarms.Alarms) != 1 || alarms.Alarms[0].Alarm != pb.AlarmType_NOSPACE {
			t.Fatalf("alarms %v, want one NOSPACE", alarms.Alarms)
		}
		// Under the alarm: writes refused (small ones, txn puts and lease grants too) ...
		_, err = c.Put(ctx, "small", "1")
		wantErr(t, err, rpctypes.ErrNoSpace)
		_, err = c.Txn(ctx).Then(clientv3.OpPut("small", "1")).Commit()
		wantErr(t, err, rpctypes.ErrNoSpace)
		_, err = c.Grant(ctx, 60)
		wantErr(t, err, rpctypes.ErrNoSpace)
		// ... reads, deletes and read-only txns served.
		// etcd checks the quota twice, before proposing and again when applying; a put that
		// passed the first check is applied and still answered NOSPACE, so the put that
		// raised the alarm may be there.
		stored := res(c.Get(ctx, "fill/", clientv3.WithPrefix(), clientv3.WithCountOnly())).must(t).Count
		if stored != int64(n) && stored != int64(n)+1 {
			t.Fatalf("read under NOSPACE: %d keys, want %d (or %d)", stored, n, n+1)
		}
		res(c.Txn(ctx).Then(clientv3.OpGet("fill/000")).Commit()).must(t)
		d := res(c.Delete(ctx, "fill/", clientv3.WithPrefix())).must(t)
		if d.Deleted != stored {
			t.Fatalf("delete under NOSPACE: %d of %d", d.Deleted, stored)
		}
		st := res(c.Status(ctx, s.endpoint)).must(t)
		if len(st.Errors) == 0 {
			t.Logf("status lists no errors under the alarm (etcd lists the alarm in Errors)")
		}
		// Recovery: compact, defragment, disarm.
		res(c.Compact(ctx, d.Header.Revision, clientv3.WithCompactPhysical())).must(t)
		res(c.Defragment(ctx, s.endpoint)).must(t)
		res(c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: st.Header.MemberId, Alarm: pb.AlarmType_NOSPACE})).must(t)
		if a := res(c.AlarmList(ctx)).must(t); len(a.Alarms) != 0 {
			t.Fatalf("alarms after disarm: %v", a.Alarms)
		}
		if _, err := c.Put(context.Background(), "small", "1"); err != nil {
			t.Fatalf("put after recovery: %v", err)
		}
	})
}
