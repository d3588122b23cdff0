package mvcc

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// writeTxn is one write request in progress; it exists only while its writer holds writeMu.
type writeTxn struct {
	s      *Store
	rev    int64   // the revision this request gets if it changes anything
	stamp  Stamp   // the stamp of every version and deletion this request makes
	remote *Change // set when the request applies a peer's change (replica.go)
	// snapshot: the request merges a snapshot (snapshot.go): it takes a revision for what it
	// changed but makes no change of its own (no header, no id).
	snapshot bool
	raised   []ChangeID // RaiseVersionVector: the version vector entries it raised
	sub      int64      // ops so far
	batch    *pebble.Batch
	pending  map[revision]*mvccpb.KeyValue
	ops      []Op
	events   []mvccpb.Event
	// conflicts: the peer's ops that lost here (remote only), published once durable.
	conflicts []Conflict
	side      bool // the batch holds writes outside the revision records (leases)
	keyBuf    [17]byte
}

// sideWrite adds a write that is not a key version (a lease record) to the request's batch.
func (w *writeTxn) sideWrite(key, value []byte) {
	if w.batch == nil {
		w.batch = w.s.db.NewBatch()
	}
	_ = w.batch.Set(key, value, nil)
	w.side = true
}

func (w *writeTxn) sideDelete(key []byte) {
	if w.batch == nil {
		w.batch = w.s.db.NewBatch()
	}
	_ = w.batch.Delete(key, nil)
	w.side = true
}

// view reads as of this request so far: etcd's txnWrite.Range, which sees the request's own
// earlier writes.
func (w *writeTxn) view() *view {
	rev := w.rev - 1
	if w.sub > 0 {
		rev = w.rev
	}
	return &view{s: w.s, rev: rev, pending: w.pending}
}

// put writes key=value attached to lease (0: none), as etcd's storeTxnWrite.put.
func (w *writeTxn) put(key, value []byte, lease int64) {
	s := w.s
	prev, existed := s.ix.get(key, w.rev)
	kv := &mvccpb.KeyValue{Key: key, Value: value, CreateRevision: w.rev, ModRevision: w.rev, Version: 1, Lease: lease}
	if existed {
		kv.CreateRevision = prev.create
		kv.Version = prev.version + 1
	}
	r := revision{w.rev, w.sub}
	w.sub++
	if w.batch == nil {
		w.batch = s.db.NewBatch()
	}
	rec := encodeRecord(recPut, kv, w.stamp)
	_ = w.batch.Set(revKey(w.keyBuf[:0], r.main, r.sub), rec, nil)
	s.logical.Add(int64(17 + len(rec)))
	if w.pending == nil {
		w.pending = make(map[revision]*mvccpb.KeyValue, 1)
	}
	w.pending[r] = kv
	s.ix.add(key, entry{rev: r, create: kv.CreateRevision, version: kv.Version, lease: lease}, w.stamp)
	w.ops = append(w.ops, Op{Key: key, Value: value, Lease: lease})
	w.events = append(w.events, mvccpb.Event{Type: mvccpb.PUT, Kv: kv})
	if existed && prev.lease != 0 && prev.lease != lease {
		s.leases.detach(prev.lease, key)
	}
	if lease != 0 {
		s.leases.attach(lease, key)
	}
}

// deleteRange deletes the keys in [key, end) (end as in index.visit) and returns how many.
func (w *writeTxn) deleteRange(key, end []byte) int64 {
	s := w.s
	type victim struct {
		key   []byte
		lease int64
	}
	var keys []victim
	s.ix.visit(key, end, w.rev, func(k []byte, e entry) bool {
		keys = append(keys, victim{k, e.lease})
		return true
	})
	for _, v := range keys {
		w.tombstone(v.key, v.lease)
	}
	return int64(len(keys))
}

func (w *writeTxn) tombstone(key []byte, lease int64) {
	s := w.s
	kv := &mvccpb.KeyValue{Key: key, ModRevision: w.rev}
	r := revision{w.rev, w.sub}
	w.sub++
	if w.batch == nil {
		w.batch = s.db.NewBatch()
	}
	rec := encodeRecord(recDelete, kv, w.stamp)
	_ = w.batch.Set(revKey(w.keyBuf[:0], r.main, r.sub), rec, nil)
	s.logical.Add(int64(17 + len(rec)))
	s.ix.add(key, entry{rev: r, tomb: true}, w.stamp)
	w.ops = append(w.ops, Op{Delete: true, Key: key})
	w.events = append(w.events, mvccpb.Event{Type: mvccpb.DELETE, Kv: kv})
	if lease != 0 {
		s.leases.detach(lease, key)
	}
}

// deleteAbsent records a peer's deletion of key, which has no live version here (replica.go).
func (w *writeTxn) deleteAbsent(key []byte) {
	s := w.s
	r := revision{w.rev, w.sub}
	w.sub++
	rec := encodeRecord(recDeleteAbsent, &mvccpb.KeyValue{Key: key}, w.stamp)
	_ = w.batch.Set(revKey(w.keyBuf[:0], r.main, r.sub), rec, nil)
	s.logical.Add(int64(17 + len(rec)))
	s.ix.observeDeletion(key, w.stamp)
	w.ops = append(w.ops, Op{Delete: true, Key: key})
}

// failIf makes the store refuse writes after a Pebble write error (caller holds writeMu): the
// index already holds the failed write's versions.
func (s *Store) failIf(err error) {
	if err != nil && s.failed == nil {
		s.failed = err
		s.log.Error("write failed; refusing further writes", "err", err)
	}
}

// Put serves a PutRequest.
func (s *Store) Put(ctx context.Context, p *pb.PutRequest) (*pb.PutResponse, error) {
	if err := s.checkSpace(p.Size()); err != nil {
		return nil, err
	}
	var resp *pb.PutResponse
	rev, err := s.write(ctx, func(w *writeTxn) error {
		if p.Lease != 0 && !s.leases.exists(p.Lease) {
			return ErrLeaseNotFound
		}
		var err error
		resp, err = w.execPut(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.Header.Revision = rev
	return resp, nil
}

// execPut is etcd's txn.put: it checks ignore_value/ignore_lease against the previous version
// before writing anything.
func (w *writeTxn) execPut(p *pb.PutRequest) (*pb.PutResponse, error) {
	resp := &pb.PutResponse{Header: &pb.ResponseHeader{}}
	val, lease := p.Value, p.Lease
	var prev *mvccpb.KeyValue
	if p.IgnoreValue || p.IgnoreLease || p.PrevKv {
		rr, err := w.view().rangeKeys(p.Key, nil, rangeOpts{})
		if err != nil {
			return nil, err
		}
		if len(rr.kvs) > 0 {
			prev = &rr.kvs[0]
		}
	}
	if p.IgnoreValue || p.IgnoreLease {
		if prev == nil {
			return nil, ErrKeyNotFound
		}
	}
	if p.IgnoreValue {
		val = prev.Value
	}
	if p.IgnoreLease {
		lease = prev.Lease
	}
	if p.PrevKv {
		resp.PrevKv = prev
	}
	w.put(p.Key, val, lease)
	resp.Header.Revision = w.rev
	return resp, nil
}

// DeleteRange serves a DeleteRangeRequest.
func (s *Store) DeleteRange(ctx context.Context, dr *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	var resp *pb.DeleteRangeResponse
	rev, err := s.write(ctx, func(w *writeTxn) error {
		var err error
		resp, err = w.execDelete(dr)
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.Header.Revision = rev
	return resp, nil
}

func (w *writeTxn) execDelete(dr *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp := &pb.DeleteRangeResponse{Header: &pb.ResponseHeader{}}
	end := mkGteRange(dr.RangeEnd)
	if dr.PrevKv {
		rr, err := w.view().rangeKeys(dr.Key, end, rangeOpts{})
		if err != nil {
			return nil, err
		}
		resp.PrevKvs = make([]*mvccpb.KeyValue, len(rr.kvs))
		for i := range rr.kvs {
			resp.PrevKvs[i] = &rr.kvs[i]
		}
	}
	resp.Deleted = w.deleteRange(dr.Key, end)
	if resp.Deleted != 0 || w.sub > 0 {
		resp.Header.Revision = w.rev
	} else {
		resp.Header.Revision = w.rev - 1
	}
	return resp, nil
}
