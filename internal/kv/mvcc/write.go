package mvcc

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// writeTxn is one write request in progress; it exists only while its writer holds writeMu.
type writeTxn struct {
	s       *Store
	rev     int64 // the revision this request gets if it changes anything
	sub     int64 // ops so far
	batch   *pebble.Batch
	pending map[revision]*mvccpb.KeyValue
	ops     []Op
	events  []mvccpb.Event
	keyBuf  [17]byte
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
	_ = w.batch.Set(revKey(w.keyBuf[:0], r.main, r.sub), encodeRecord(recPut, kv), nil)
	if w.pending == nil {
		w.pending = make(map[revision]*mvccpb.KeyValue, 1)
	}
	w.pending[r] = kv
	s.ix.add(key, entry{rev: r, create: kv.CreateRevision, version: kv.Version, lease: lease})
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
	_ = w.batch.Set(revKey(w.keyBuf[:0], r.main, r.sub), encodeRecord(recDelete, kv), nil)
	s.ix.add(key, entry{rev: r, tomb: true})
	w.ops = append(w.ops, Op{Delete: true, Key: key})
	w.events = append(w.events, mvccpb.Event{Type: mvccpb.DELETE, Kv: kv})
	if lease != 0 {
		s.leases.detach(lease, key)
	}
}

// write runs fn as one write request and returns the revision of its response header: its own
// revision if it changed anything, else the current one. fn must do every check that can fail
// before its first put or delete (as etcd's checkTxn does), because a request's writes are all or
// nothing. write returns once the request is durable and visible.
func (s *Store) write(ctx context.Context, fn func(w *writeTxn) error) (int64, error) {
	s.writeMu.Lock()
	if s.failed != nil {
		s.writeMu.Unlock()
		return 0, s.failed
	}
	w := &writeTxn{s: s, rev: s.lastRev.Load() + 1}
	if err := fn(w); err != nil {
		if w.sub > 0 {
			// A bug: the index already holds versions that Pebble will not. Refuse further writes
			// rather than serve a state that a restart would not reproduce.
			s.failed = err
		}
		s.writeMu.Unlock()
		if w.batch != nil {
			w.batch.Close()
		}
		return 0, err
	}
	if w.sub == 0 {
		last := s.lastRev.Load()
		s.writeMu.Unlock()
		// The request read state that may not be durable yet; answer only once it is.
		return last, s.waitVisible(context.Background(), last)
	}
	s.seq++
	c := Change{ID: ChangeID{Origin: s.member, Seq: s.seq}, Time: s.clock.Now(), Revision: w.rev}
	c.Hash = ContentHash(c.ID, c.Time, w.ops)
	_ = w.batch.Set(changeKey(w.rev), encodeHeader(nil, &c, len(w.ops)), nil)
	s.lastRev.Store(w.rev)
	var err error
	switch s.cfg.Fsync {
	case FsyncAlways:
		err = s.db.Apply(w.batch, pebble.Sync)
		s.failIf(err)
		s.writeMu.Unlock()
	case FsyncNever:
		err = s.db.Apply(w.batch, pebble.NoSync)
		s.failIf(err)
		s.writeMu.Unlock()
	default:
		// Enqueue in WAL order under writeMu; wait for the shared fsync outside it.
		err = s.db.ApplyNoSyncWait(w.batch, pebble.Sync)
		s.failIf(err)
		s.writeMu.Unlock()
		if err == nil {
			if err = w.batch.SyncWait(); err != nil {
				s.writeMu.Lock()
				s.failIf(err)
				s.writeMu.Unlock()
			}
		}
	}
	if err != nil {
		return 0, err
	}
	w.batch.Close()
	s.publish(w.rev, w.events)
	s.maybeCheckQuota(w.rev)
	return w.rev, s.waitVisible(context.Background(), w.rev)
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
	if err := s.checkSpace(); err != nil {
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
