package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Permission checks on the KV, Watch and Lease services, where and as etcd makes them
// (its authApplierV3 and v3_server.go). Each begins with one atomic load and returns at once
// while auth is off, so the request path pays nothing else then.

// requestUser resolves the caller for a key check: nobody is the empty authInfo, which every
// key check refuses with "user name is empty".
func (s *Server) requestUser(ctx context.Context) (authInfo, error) {
	ai, err := s.authInfo(ctx)
	if err != nil || ai == nil {
		return authInfo{}, err
	}
	return *ai, nil
}

func (s *Server) checkRange(ctx context.Context, r *pb.RangeRequest) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.requestUser(ctx)
	if err != nil {
		return err
	}
	return s.auth.permitted(ai, r.Key, r.RangeEnd, false)
}

// checkPutAuth: write on the key; the lease's keys writable (or root) if the put attaches a
// lease; read on the key if it asks for the previous value.
func (s *Server) checkPutAuth(ai authInfo, r *pb.PutRequest) error {
	if err := s.auth.permitted(ai, r.Key, nil, true); err != nil {
		return err
	}
	if r.Lease != 0 {
		if err := s.checkLeaseKeysWritable(ai, r.Lease); err != nil {
			return err
		}
	}
	if r.PrevKv {
		return s.auth.permitted(ai, r.Key, nil, false)
	}
	return nil
}

func (s *Server) checkPut(ctx context.Context, r *pb.PutRequest) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.requestUser(ctx)
	if err != nil {
		return err
	}
	if err := s.checkPutAuth(ai, r); err != nil {
		return err
	}
	return s.checkMajority(writeRefused)
}

func (s *Server) checkDelete(ctx context.Context, r *pb.DeleteRangeRequest) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.requestUser(ctx)
	if err != nil {
		return err
	}
	if err := s.auth.permitted(ai, r.Key, r.RangeEnd, true); err != nil {
		return err
	}
	if r.PrevKv {
		if err := s.auth.permitted(ai, r.Key, r.RangeEnd, false); err != nil {
			return err
		}
	}
	return s.checkMajority(writeRefused)
}

func (s *Server) checkTxnAuth(ctx context.Context, r *pb.TxnRequest) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.requestUser(ctx)
	if err != nil {
		return err
	}
	if err := s.txnPermitted(ai, r); err != nil {
		return err
	}
	if txnWrites(r) {
		return s.checkMajority(writeRefused)
	}
	return nil
}

// txnPermitted: read on every compare's key, then every op of both branches, nested
// transactions included, whichever branch will run.
func (s *Server) txnPermitted(ai authInfo, r *pb.TxnRequest) error {
	for _, c := range r.Compare {
		if err := s.auth.permitted(ai, c.Key, c.RangeEnd, false); err != nil {
			return err
		}
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			var err error
			switch u := op.Request.(type) {
			case *pb.RequestOp_RequestRange:
				if u.RequestRange != nil {
					err = s.auth.permitted(ai, u.RequestRange.Key, u.RequestRange.RangeEnd, false)
				}
			case *pb.RequestOp_RequestPut:
				if u.RequestPut != nil {
					err = s.checkPutAuth(ai, u.RequestPut)
				}
			case *pb.RequestOp_RequestDeleteRange:
				if d := u.RequestDeleteRange; d != nil {
					if d.PrevKv {
						err = s.auth.permitted(ai, d.Key, d.RangeEnd, false)
					}
					if err == nil {
						err = s.auth.permitted(ai, d.Key, d.RangeEnd, true)
					}
				}
			case *pb.RequestOp_RequestTxn:
				if u.RequestTxn != nil {
					err = s.txnPermitted(ai, u.RequestTxn)
				}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// leaseKeys are the keys attached to a lease (none if it does not exist).
func (s *Server) leaseKeys(id int64) [][]byte {
	info, err := s.store.LeaseTimeToLive(id, true)
	if err != nil {
		return nil
	}
	return info.Keys
}

// checkLeaseKeysWritable is etcd's checkLeasePuts: root, or write on every key attached to
// the lease. Without keys nothing is checked (etcd revokes a keyless lease for anyone).
func (s *Server) checkLeaseKeysWritable(ai authInfo, id int64) error {
	if s.auth.adminPermitted(&ai) == nil {
		return nil
	}
	for _, k := range s.leaseKeys(id) {
		if err := s.auth.permitted(ai, k, nil, true); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) checkLeaseRevoke(ctx context.Context, id int64) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.requestUser(ctx)
	if err != nil {
		return err
	}
	if err := s.checkLeaseKeysWritable(ai, id); err != nil {
		return err
	}
	return s.checkMajority(writeRefused)
}

// checkLeaseKeys is etcd's checkLeaseRenew (write) and checkLeaseTimeToLive /
// checkLeaseLeases (read): an authenticated user; root, or the permission on every key of
// the leases.
func (s *Server) checkLeaseKeys(ctx context.Context, write bool, ids ...int64) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.authInfo(ctx)
	if err != nil {
		return err
	}
	if ai == nil {
		return rpctypes.ErrGRPCUserEmpty
	}
	if s.auth.adminPermitted(ai) == nil {
		return nil
	}
	for _, id := range ids {
		for _, k := range s.leaseKeys(id) {
			if err := s.auth.permitted(*ai, k, nil, write); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkWatch is etcd's isWatchPermitted; its error's text (the gRPC error's, as etcd sends
// it) becomes the cancel reason. Anything but a bad token, an old revision or nobody is
// reported as "permission denied".
func (s *Server) checkWatch(ctx context.Context, creq *pb.WatchCreateRequest) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.requestUser(ctx)
	if err == nil {
		err = s.auth.permitted(ai, creq.Key, creq.RangeEnd, false)
	}
	switch err {
	case nil, rpctypes.ErrGRPCInvalidAuthToken, rpctypes.ErrGRPCAuthOldRevision, rpctypes.ErrGRPCUserEmpty:
		return err
	}
	return rpctypes.ErrGRPCPermissionDenied
}
