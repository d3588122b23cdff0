package server

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// togRPCError maps a store error to the error etcd sends for it, so that clients react as they do
// with etcd (clientv3 turns these back into its typed errors).
func togRPCError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, mvcc.ErrCompacted):
		return rpctypes.ErrGRPCCompacted
	case errors.Is(err, mvcc.ErrFutureRev):
		return rpctypes.ErrGRPCFutureRev
	case errors.Is(err, mvcc.ErrKeyNotFound):
		return rpctypes.ErrGRPCKeyNotFound
	case errors.Is(err, mvcc.ErrLeaseNotFound):
		return rpctypes.ErrGRPCLeaseNotFound
	case errors.Is(err, mvcc.ErrLeaseExists):
		return rpctypes.ErrGRPCLeaseExist
	case errors.Is(err, mvcc.ErrLeaseTTLTooBig):
		return rpctypes.ErrGRPCLeaseTTLTooLarge
	case errors.Is(err, mvcc.ErrNoSpace):
		return rpctypes.ErrGRPCNoSpace
	case errors.Is(err, mvcc.ErrClosed):
		return rpctypes.ErrGRPCStopped
	case errors.Is(err, context.Canceled):
		return rpctypes.ErrGRPCCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return rpctypes.ErrGRPCDeadlineExceeded
	}
	return status.Error(codes.Internal, err.Error())
}

// errUnsupported answers the etcd APIs that have no meaning or no counterpart in a cluster
// without consensus, saying why and what to do instead.
func errUnsupported(what, why string) error {
	return status.Errorf(codes.Unimplemented, "continuum kv: %s is not supported: %s", what, why)
}
