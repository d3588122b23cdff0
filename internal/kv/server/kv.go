package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// maxTxnOps is etcd's default --max-txn-ops.
const maxTxnOps = 128

type kvServer struct {
	pb.UnimplementedKVServer
	s *Server
}

func (k *kvServer) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if err := checkRangeRequest(r); err != nil {
		return nil, err
	}
	if err := k.s.checkRange(ctx, r); err != nil {
		return nil, err
	}
	resp, err := k.s.store.Range(r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.s.fill(resp.Header)
	return resp, nil
}

func (k *kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := checkPutRequest(r); err != nil {
		return nil, err
	}
	if err := k.s.checkPut(ctx, r); err != nil {
		return nil, err
	}
	if err := k.s.checkSize(r.Size()); err != nil {
		return nil, err
	}
	resp, err := k.s.store.Put(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.s.fill(resp.Header)
	return resp, nil
}

func (k *kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if err := checkDeleteRequest(r); err != nil {
		return nil, err
	}
	if err := k.s.checkDelete(ctx, r); err != nil {
		return nil, err
	}
	if err := k.s.checkSize(r.Size()); err != nil {
		return nil, err
	}
	resp, err := k.s.store.DeleteRange(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.s.fill(resp.Header)
	return resp, nil
}

func (k *kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := checkTxn(r, maxTxnOps); err != nil {
		return nil, err
	}
	if err := k.s.checkTxnAuth(ctx, r); err != nil {
		return nil, err
	}
	if !mvcc.IsTxnReadonly(r) {
		if err := k.s.checkSize(r.Size()); err != nil {
			return nil, err
		}
	}
	resp, err := k.s.store.Txn(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.s.fill(resp.Header)
	return resp, nil
}

// Compact is a write, refused like one by a member cut off from the majority while auth is
// enabled (etcd's needs a leader): its copy may still count a user as root whom the majority
// side took the root role from.
func (k *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	if err := k.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	if k.s.auth.isEnabled() {
		if err := k.s.checkMajority(writeRefused); err != nil {
			return nil, err
		}
	}
	if err := k.s.store.Compact(ctx, r.Revision, r.Physical); err != nil {
		return nil, togRPCError(err)
	}
	resp := &pb.CompactionResponse{Header: &pb.ResponseHeader{}}
	k.s.fill(resp.Header)
	return resp, nil
}

// checkSize is etcd's limit on a write request's size (--max-request-bytes); etcd measures the
// raft entry, a few bytes more than the request.
func (s *Server) checkSize(n int) error {
	if int64(n) > s.cfg.MaxRequestBytes {
		return rpctypes.ErrGRPCRequestTooLarge
	}
	return nil
}
