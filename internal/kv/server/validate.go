package server

// The request checks below follow etcd's v3rpc/key.go (Apache-2.0, the etcd Authors) so that
// invalid requests get etcd's errors, in etcd's order.

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func checkRangeRequest(r *pb.RangeRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(r.SortOrder)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(r.SortTarget)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

func checkPutRequest(r *pb.PutRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if r.IgnoreValue && len(r.Value) != 0 {
		return rpctypes.ErrGRPCValueProvided
	}
	if r.IgnoreLease && r.Lease != 0 {
		return rpctypes.ErrGRPCLeaseProvided
	}
	return nil
}

func checkDeleteRequest(r *pb.DeleteRangeRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	return nil
}

func checkTxnRequest(r *pb.TxnRequest, maxTxnOps int) error {
	opc := max(len(r.Compare), len(r.Success), len(r.Failure))
	if opc > maxTxnOps {
		return rpctypes.ErrGRPCTooManyOps
	}
	for _, c := range r.Compare {
		if len(c.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	for _, u := range r.Success {
		if err := checkRequestOp(u, maxTxnOps-opc); err != nil {
			return err
		}
	}
	for _, u := range r.Failure {
		if err := checkRequestOp(u, maxTxnOps-opc); err != nil {
			return err
		}
	}
	return nil
}

func checkRequestOp(u *pb.RequestOp, maxTxnOps int) error {
	switch uv := u.Request.(type) {
	case *pb.RequestOp_RequestRange:
		return checkRangeRequest(uv.RequestRange)
	case *pb.RequestOp_RequestPut:
		return checkPutRequest(uv.RequestPut)
	case *pb.RequestOp_RequestDeleteRange:
		return checkDeleteRequest(uv.RequestDeleteRange)
	case *pb.RequestOp_RequestTxn:
		return checkTxnRequest(uv.RequestTxn, maxTxnOps)
	default:
		return rpctypes.ErrGRPCKeyNotFound // empty op, as etcd answers
	}
}

// interval is a key interval [begin, end); end == nil is the single key begin.
type interval struct{ begin, end []byte }

func (iv interval) contains(k []byte) bool {
	if iv.end == nil {
		return bytes.Equal(iv.begin, k)
	}
	return bytes.Compare(iv.begin, k) <= 0 && bytes.Compare(k, iv.end) < 0
}

type intervals []interval

func (ivs intervals) intersects(k []byte) bool {
	for _, iv := range ivs {
		if iv.contains(k) {
			return true
		}
	}
	return false
}

// checkIntervals rejects a Txn that writes a key twice: a put overlapping a put or a delete in
// the same branch or nested branches (then/else of one nested Txn may put the same key, as only
// one of them runs). It returns the branch's puts and deletes for the level above.
func checkIntervals(reqs []*pb.RequestOp) (map[string]struct{}, intervals, error) {
	var dels intervals
	for _, req := range reqs {
		tv, ok := req.Request.(*pb.RequestOp_RequestDeleteRange)
		if !ok || tv.RequestDeleteRange == nil {
			continue
		}
		d := tv.RequestDeleteRange
		if len(d.RangeEnd) != 0 {
			dels = append(dels, interval{d.Key, d.RangeEnd})
		} else {
			dels = append(dels, interval{begin: d.Key})
		}
	}
	puts := make(map[string]struct{})
	for _, req := range reqs {
		tv, ok := req.Request.(*pb.RequestOp_RequestTxn)
		if !ok || tv.RequestTxn == nil {
			continue
		}
		putsThen, delsThen, err := checkIntervals(tv.RequestTxn.Success)
		if err != nil {
			return nil, dels, err
		}
		putsElse, delsElse, err := checkIntervals(tv.RequestTxn.Failure)
		if err != nil {
			return nil, dels, err
		}
		for k := range putsThen {
			if _, ok := puts[k]; ok {
				return nil, dels, rpctypes.ErrGRPCDuplicateKey
			}
			if dels.intersects([]byte(k)) {
				return nil, dels, rpctypes.ErrGRPCDuplicateKey
			}
			puts[k] = struct{}{}
		}
		for k := range putsElse {
			if _, ok := puts[k]; ok {
				if _, isSafe := putsThen[k]; !isSafe {
					return nil, dels, rpctypes.ErrGRPCDuplicateKey
				}
			}
			if dels.intersects([]byte(k)) {
				return nil, dels, rpctypes.ErrGRPCDuplicateKey
			}
			puts[k] = struct{}{}
		}
		dels = append(dels, delsThen...)
		dels = append(dels, delsElse...)
	}
	for _, req := range reqs {
		tv, ok := req.Request.(*pb.RequestOp_RequestPut)
		if !ok || tv.RequestPut == nil {
			continue
		}
		k := string(tv.RequestPut.Key)
		if _, ok := puts[k]; ok {
			return nil, dels, rpctypes.ErrGRPCDuplicateKey
		}
		if dels.intersects(tv.RequestPut.Key) {
			return nil, dels, rpctypes.ErrGRPCDuplicateKey
		}
		puts[k] = struct{}{}
	}
	return puts, dels, nil
}

// checkTxn runs all of etcd's checks on a Txn: shape, then duplicate keys per branch.
func checkTxn(r *pb.TxnRequest, maxTxnOps int) error {
	if err := checkTxnRequest(r, maxTxnOps); err != nil {
		return err
	}
	if _, _, err := checkIntervals(r.Success); err != nil {
		return err
	}
	if _, _, err := checkIntervals(r.Failure); err != nil {
		return err
	}
	return nil
}
