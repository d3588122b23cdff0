package mvcc

import (
	"bytes"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// view reads the store as of revision rev. A read-only request's view is the visible revision;
// a write request's view is its own revision so far, including versions not yet durable and,
// through pending, the request's own writes that are not yet in Pebble.
type view struct {
	s       *Store
	rev     int64
	pending map[revision]*mvccpb.KeyValue
}

func (s *Store) readView() *view { return &view{s: s, rev: s.visible.Load()} }

type rangeOpts struct {
	limit   int64
	rev     int64
	count   bool // count only
	noValue bool // the caller needs no values: build KeyValues from the index alone
}

type rangeResult struct {
	kvs   []mvccpb.KeyValue
	count int
	rev   int64
}

// rangeKeys is etcd's storeTxnCommon.rangeKeys: the keys in [key, end) at ro.rev (0: the view's
// revision), at most ro.limit of them (0: all), and how many there are.
func (v *view) rangeKeys(key, end []byte, ro rangeOpts) (*rangeResult, error) {
	rev := ro.rev
	if rev > v.rev {
		return &rangeResult{count: -1, rev: v.rev}, ErrFutureRev
	}
	if rev <= 0 {
		rev = v.rev
	}
	if rev < v.s.compactRev.Load() {
		return &rangeResult{count: -1}, ErrCompacted
	}
	res := &rangeResult{rev: v.rev}
	type hit struct {
		key []byte
		e   entry
	}
	var hits []hit
	v.s.ix.visit(key, end, rev, func(k []byte, e entry) bool {
		res.count++
		if !ro.count && (ro.limit <= 0 || int64(len(hits)) < ro.limit) {
			hits = append(hits, hit{k, e})
		}
		return true
	})
	if ro.count || len(hits) == 0 {
		return res, nil
	}
	res.kvs = make([]mvccpb.KeyValue, len(hits))
	for i, h := range hits {
		kv := &res.kvs[i]
		if ro.noValue {
			*kv = mvccpb.KeyValue{Key: h.key, CreateRevision: h.e.create, ModRevision: h.e.rev.main, Version: h.e.version, Lease: h.e.lease}
			continue
		}
		if p, ok := v.pending[h.e.rev]; ok {
			*kv = *p
			continue
		}
		if err := v.s.readRecord(h.e.rev, kv); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Range serves a RangeRequest at the visible revision.
func (s *Store) Range(r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return executeRange(s.readView(), r)
}

// mkGteRange: a range end of "\x00" means "all keys >= key", which the index takes as a
// non-nil empty end.
func mkGteRange(rangeEnd []byte) []byte {
	if len(rangeEnd) == 1 && rangeEnd[0] == 0 {
		return []byte{}
	}
	if len(rangeEnd) == 0 {
		return nil
	}
	return rangeEnd
}

// executeRange follows etcd's txn.executeRange (Apache-2.0, the etcd Authors) so that limits,
// filters, sorting and counts come out identical.
func executeRange(v *view, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	resp := &pb.RangeResponse{Header: &pb.ResponseHeader{}}
	limit := r.Limit
	if r.SortOrder != pb.RangeRequest_NONE ||
		r.MinModRevision != 0 || r.MaxModRevision != 0 ||
		r.MinCreateRevision != 0 || r.MaxCreateRevision != 0 {
		limit = 0 // fetch everything; sort and truncate afterwards
	}
	if limit > 0 {
		limit++ // one extra for 'more'
	}
	ro := rangeOpts{limit: limit, rev: r.Revision, count: r.CountOnly,
		noValue: r.KeysOnly && r.SortTarget != pb.RangeRequest_VALUE}
	rr, err := v.rangeKeys(r.Key, mkGteRange(r.RangeEnd), ro)
	if err != nil {
		return nil, err
	}
	if r.MaxModRevision != 0 {
		pruneKVs(rr, func(kv *mvccpb.KeyValue) bool { return kv.ModRevision > r.MaxModRevision })
	}
	if r.MinModRevision != 0 {
		pruneKVs(rr, func(kv *mvccpb.KeyValue) bool { return kv.ModRevision < r.MinModRevision })
	}
	if r.MaxCreateRevision != 0 {
		pruneKVs(rr, func(kv *mvccpb.KeyValue) bool { return kv.CreateRevision > r.MaxCreateRevision })
	}
	if r.MinCreateRevision != 0 {
		pruneKVs(rr, func(kv *mvccpb.KeyValue) bool { return kv.CreateRevision < r.MinCreateRevision })
	}
	sortOrder := r.SortOrder
	if r.SortTarget != pb.RangeRequest_KEY && sortOrder == pb.RangeRequest_NONE {
		sortOrder = pb.RangeRequest_ASCEND
	} else if r.SortTarget == pb.RangeRequest_KEY && sortOrder == pb.RangeRequest_ASCEND {
		sortOrder = pb.RangeRequest_NONE // already in key order
	}
	if sortOrder != pb.RangeRequest_NONE {
		var sorter sort.Interface
		ks := &kvSort{rr.kvs}
		switch r.SortTarget {
		case pb.RangeRequest_KEY:
			sorter = &kvSortByKey{ks}
		case pb.RangeRequest_VERSION:
			sorter = &kvSortByVersion{ks}
		case pb.RangeRequest_CREATE:
			sorter = &kvSortByCreate{ks}
		case pb.RangeRequest_MOD:
			sorter = &kvSortByMod{ks}
		case pb.RangeRequest_VALUE:
			sorter = &kvSortByValue{ks}
		default:
			sorter = &kvSortByKey{ks}
		}
		switch sortOrder {
		case pb.RangeRequest_ASCEND:
			sort.Sort(sorter)
		case pb.RangeRequest_DESCEND:
			sort.Sort(sort.Reverse(sorter))
		}
	}
	if r.Limit > 0 && len(rr.kvs) > int(r.Limit) {
		rr.kvs = rr.kvs[:r.Limit]
		resp.More = true
	}
	resp.Header.Revision = rr.rev
	resp.Count = int64(rr.count)
	resp.Kvs = make([]*mvccpb.KeyValue, len(rr.kvs))
	for i := range rr.kvs {
		if r.KeysOnly {
			rr.kvs[i].Value = nil
		}
		resp.Kvs[i] = &rr.kvs[i]
	}
	return resp, nil
}

func pruneKVs(rr *rangeResult, prunable func(*mvccpb.KeyValue) bool) {
	j := 0
	for i := range rr.kvs {
		rr.kvs[j] = rr.kvs[i]
		if !prunable(&rr.kvs[i]) {
			j++
		}
	}
	rr.kvs = rr.kvs[:j]
}

type kvSort struct{ kvs []mvccpb.KeyValue }

func (s *kvSort) Swap(i, j int) { s.kvs[i], s.kvs[j] = s.kvs[j], s.kvs[i] }
func (s *kvSort) Len() int      { return len(s.kvs) }

type kvSortByKey struct{ *kvSort }

func (s *kvSortByKey) Less(i, j int) bool { return bytes.Compare(s.kvs[i].Key, s.kvs[j].Key) < 0 }

type kvSortByVersion struct{ *kvSort }

func (s *kvSortByVersion) Less(i, j int) bool { return s.kvs[i].Version-s.kvs[j].Version < 0 }

type kvSortByCreate struct{ *kvSort }

func (s *kvSortByCreate) Less(i, j int) bool {
	return s.kvs[i].CreateRevision-s.kvs[j].CreateRevision < 0
}

type kvSortByMod struct{ *kvSort }

func (s *kvSortByMod) Less(i, j int) bool { return s.kvs[i].ModRevision-s.kvs[j].ModRevision < 0 }

type kvSortByValue struct{ *kvSort }

func (s *kvSortByValue) Less(i, j int) bool { return bytes.Compare(s.kvs[i].Value, s.kvs[j].Value) < 0 }
