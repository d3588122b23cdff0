package mvcc

// The Txn evaluation below follows etcd's server/etcdserver/txn (Apache-2.0, the etcd Authors):
// compares are evaluated up front into a path of branch choices (one per nested Txn), every
// check that can fail runs before the first write, and then the chosen branches execute in
// order, later ops seeing earlier ops' writes.

import (
	"bytes"
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Txn serves a TxnRequest (already validated: see the server's request checks). A Txn without
// any write op anywhere is served at the visible revision without taking the write lock.
func (s *Store) Txn(ctx context.Context, rt *pb.TxnRequest) (*pb.TxnResponse, error) {
	if IsTxnReadonly(rt) {
		v := s.readView()
		path := compareToPath(v, rt)
		if _, err := checkTxn(v, rt, path, nil); err != nil {
			return nil, err
		}
		resp, _ := newTxnResp(rt, path)
		if _, err := executeTxn(func() *view { return v }, nil, rt, path, resp); err != nil {
			return nil, err
		}
		resp.Header.Revision = v.rev
		return resp, nil
	}
	if txnHasPuts(rt) {
		if err := s.checkSpace(rt.Size()); err != nil {
			return nil, err
		}
	}
	var resp *pb.TxnResponse
	rev, err := s.write(ctx, func(w *writeTxn) error {
		v := w.view()
		path := compareToPath(v, rt)
		if _, err := checkTxn(v, rt, path, s.leases); err != nil {
			return err
		}
		resp, _ = newTxnResp(rt, path)
		_, err := executeTxn(w.view, w, rt, path, resp)
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.Header.Revision = rev
	return resp, nil
}

// IsTxnReadonly reports whether no branch of rt (at its top level) writes.
func IsTxnReadonly(r *pb.TxnRequest) bool {
	for _, u := range r.Success {
		if u.GetRequestRange() == nil {
			return false
		}
	}
	for _, u := range r.Failure {
		if u.GetRequestRange() == nil {
			return false
		}
	}
	return true
}

func txnHasPuts(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, u := range ops {
			if u.GetRequestPut() != nil {
				return true
			}
			if t := u.GetRequestTxn(); t != nil && txnHasPuts(t) {
				return true
			}
		}
	}
	return false
}

func newTxnResp(rt *pb.TxnRequest, txnPath []bool) (txnResp *pb.TxnResponse, txnCount int) {
	reqs := rt.Success
	if !txnPath[0] {
		reqs = rt.Failure
	}
	resps := make([]*pb.ResponseOp, len(reqs))
	txnResp = &pb.TxnResponse{Responses: resps, Succeeded: txnPath[0], Header: &pb.ResponseHeader{}}
	for i, req := range reqs {
		switch tv := req.Request.(type) {
		case *pb.RequestOp_RequestRange:
			resps[i] = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{}}
		case *pb.RequestOp_RequestPut:
			resps[i] = &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{}}
		case *pb.RequestOp_RequestDeleteRange:
			resps[i] = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{}}
		case *pb.RequestOp_RequestTxn:
			resp, txns := newTxnResp(tv.RequestTxn, txnPath[1:])
			resps[i] = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: resp}}
			txnPath = txnPath[1+txns:]
			txnCount += txns + 1
		default:
			resps[i] = &pb.ResponseOp{}
		}
	}
	return txnResp, txnCount
}

// executeTxn runs the chosen branches. viewFn returns the view to read at now (a write request's
// view moves once it has written); w is nil for a read-only Txn.
func executeTxn(viewFn func() *view, w *writeTxn, rt *pb.TxnRequest, txnPath []bool, tresp *pb.TxnResponse) (txns int, err error) {
	reqs := rt.Success
	if !txnPath[0] {
		reqs = rt.Failure
	}
	for i, req := range reqs {
		respi := tresp.Responses[i].Response
		switch tv := req.Request.(type) {
		case *pb.RequestOp_RequestRange:
			resp, err := executeRange(viewFn(), tv.RequestRange)
			if err != nil {
				return 0, fmt.Errorf("txn range: %w", err)
			}
			respi.(*pb.ResponseOp_ResponseRange).ResponseRange = resp
		case *pb.RequestOp_RequestPut:
			resp, err := w.execPut(tv.RequestPut)
			if err != nil {
				return 0, fmt.Errorf("txn put: %w", err)
			}
			respi.(*pb.ResponseOp_ResponsePut).ResponsePut = resp
		case *pb.RequestOp_RequestDeleteRange:
			resp, err := w.execDelete(tv.RequestDeleteRange)
			if err != nil {
				return 0, fmt.Errorf("txn delete: %w", err)
			}
			respi.(*pb.ResponseOp_ResponseDeleteRange).ResponseDeleteRange = resp
		case *pb.RequestOp_RequestTxn:
			resp := respi.(*pb.ResponseOp_ResponseTxn).ResponseTxn
			applied, err := executeTxn(viewFn, w, tv.RequestTxn, txnPath[1:], resp)
			if err != nil {
				return 0, err
			}
			txns += applied + 1
			txnPath = txnPath[applied+1:]
		}
	}
	return txns, nil
}

func checkPut(v *view, ls *lessor, req *pb.PutRequest) error {
	if req.IgnoreValue || req.IgnoreLease {
		rr, err := v.rangeKeys(req.Key, nil, rangeOpts{noValue: true})
		if err != nil {
			return err
		}
		if len(rr.kvs) == 0 {
			return ErrKeyNotFound
		}
	}
	if req.Lease != 0 && (ls == nil || !ls.exists(req.Lease)) {
		return ErrLeaseNotFound
	}
	return nil
}

func checkRange(v *view, req *pb.RangeRequest) error {
	switch {
	case req.Revision == 0:
		return nil
	case req.Revision > v.rev:
		return ErrFutureRev
	case req.Revision < v.s.compactRev.Load():
		return ErrCompacted
	}
	return nil
}

func checkTxn(v *view, rt *pb.TxnRequest, txnPath []bool, ls *lessor) (int, error) {
	txnCount := 0
	reqs := rt.Success
	if !txnPath[0] {
		reqs = rt.Failure
	}
	for _, req := range reqs {
		var err error
		var txns int
		switch tv := req.Request.(type) {
		case *pb.RequestOp_RequestRange:
			err = checkRange(v, tv.RequestRange)
		case *pb.RequestOp_RequestPut:
			err = checkPut(v, ls, tv.RequestPut)
		case *pb.RequestOp_RequestTxn:
			txns, err = checkTxn(v, tv.RequestTxn, txnPath[1:], ls)
			txnCount += txns + 1
			txnPath = txnPath[txns+1:]
		}
		if err != nil {
			return 0, err
		}
	}
	return txnCount, nil
}

func compareToPath(v *view, rt *pb.TxnRequest) []bool {
	txnPath := make([]bool, 1)
	ops := rt.Success
	if txnPath[0] = applyCompares(v, rt.Compare); !txnPath[0] {
		ops = rt.Failure
	}
	for _, op := range ops {
		tv, ok := op.Request.(*pb.RequestOp_RequestTxn)
		if !ok || tv.RequestTxn == nil {
			continue
		}
		txnPath = append(txnPath, compareToPath(v, tv.RequestTxn)...)
	}
	return txnPath
}

func applyCompares(v *view, cmps []*pb.Compare) bool {
	for _, c := range cmps {
		if !applyCompare(v, c) {
			return false
		}
	}
	return true
}

// applyCompare: a missing key compares as a zero KeyValue, except that a VALUE compare on a
// missing key always fails (etcd cannot tell a missing value from an empty one).
func applyCompare(v *view, c *pb.Compare) bool {
	rr, err := v.rangeKeys(c.Key, mkGteRange(c.RangeEnd), rangeOpts{noValue: c.Target != pb.Compare_VALUE})
	if err != nil {
		return false
	}
	if len(rr.kvs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false
		}
		return compareKV(c, &mvccpb.KeyValue{})
	}
	for i := range rr.kvs {
		if !compareKV(c, &rr.kvs[i]) {
			return false
		}
	}
	return true
}

func compareKV(c *pb.Compare, ckv *mvccpb.KeyValue) bool {
	var result int
	rev := int64(0)
	switch c.Target {
	case pb.Compare_VALUE:
		var v []byte
		if tv, _ := c.TargetUnion.(*pb.Compare_Value); tv != nil {
			v = tv.Value
		}
		result = bytes.Compare(ckv.Value, v)
	case pb.Compare_CREATE:
		if tv, _ := c.TargetUnion.(*pb.Compare_CreateRevision); tv != nil {
			rev = tv.CreateRevision
		}
		result = compareInt64(ckv.CreateRevision, rev)
	case pb.Compare_MOD:
		if tv, _ := c.TargetUnion.(*pb.Compare_ModRevision); tv != nil {
			rev = tv.ModRevision
		}
		result = compareInt64(ckv.ModRevision, rev)
	case pb.Compare_VERSION:
		if tv, _ := c.TargetUnion.(*pb.Compare_Version); tv != nil {
			rev = tv.Version
		}
		result = compareInt64(ckv.Version, rev)
	case pb.Compare_LEASE:
		if tv, _ := c.TargetUnion.(*pb.Compare_Lease); tv != nil {
			rev = tv.Lease
		}
		result = compareInt64(ckv.Lease, rev)
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return result == 0
	case pb.Compare_NOT_EQUAL:
		return result != 0
	case pb.Compare_GREATER:
		return result > 0
	case pb.Compare_LESS:
		return result < 0
	}
	return true
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
