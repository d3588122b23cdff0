package kvtarget

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// Etcd drives an etcd v3 server (etcd itself or continuum kv) through clientv3.
type Etcd struct {
	clients []*clientv3.Client
	next    atomic.Uint64
}

// NewEtcd opens conns clients (each its own gRPC connection) to the endpoints.
func NewEtcd(endpoints []string, conns int) (*Etcd, error) {
	if conns <= 0 {
		conns = 4
	}
	e := &Etcd{}
	for range conns {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   endpoints,
			DialTimeout: 5 * time.Second,
			Logger:      zap.NewNop(),
			// Records are at most 1 MiB (ycsb's limit); the default 2 MiB send limit holds them.
			MaxCallSendMsgSize: 2 << 20,
		})
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
		}
		e.clients = append(e.clients, c)
	}
	return e, nil
}

func (e *Etcd) client() *clientv3.Client {
	return e.clients[e.next.Add(1)%uint64(len(e.clients))]
}

// Read gets key; a missing key is a not_found error.
func (e *Etcd) Read(ctx context.Context, key string) error {
	r, err := e.client().Get(ctx, key)
	if err != nil {
		return etcdErr(err)
	}
	if len(r.Kvs) == 0 {
		return errNotFound(key)
	}
	return nil
}

// Scan ranges from startKey to the end of the key space, at most count keys.
func (e *Etcd) Scan(ctx context.Context, startKey string, count int) error {
	_, err := e.client().Get(ctx, startKey, clientv3.WithFromKey(), clientv3.WithLimit(int64(count)))
	return etcdErr(err)
}

// Update puts the record.
func (e *Etcd) Update(ctx context.Context, key, value string) error {
	_, err := e.client().Put(ctx, key, value)
	return etcdErr(err)
}

// Insert puts the record.
func (e *Etcd) Insert(ctx context.Context, key, value string) error {
	_, err := e.client().Put(ctx, key, value)
	return etcdErr(err)
}

// ReadModifyWrite gets then puts key (two requests, as YCSB does; not a transaction).
func (e *Etcd) ReadModifyWrite(ctx context.Context, key, value string) error {
	c := e.client()
	r, err := c.Get(ctx, key)
	if err != nil {
		return etcdErr(err)
	}
	if len(r.Kvs) == 0 {
		return errNotFound(key)
	}
	_, err = c.Put(ctx, key, value)
	return etcdErr(err)
}

// Status asks the endpoint for its status (used to wait for readiness).
func (e *Etcd) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	c := e.clients[0]
	eps := c.Endpoints()
	r, err := c.Status(ctx, eps[0])
	return r, etcdErr(err)
}

// Close closes every client.
func (e *Etcd) Close() error {
	var errs []error
	for _, c := range e.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// etcdErr types err by its gRPC code. The client turns a request's own deadline or
// cancellation into the context's error; those become grpc_DeadlineExceeded and loadgen's
// "canceled" (requests cut off when a run stops), so every etcd failure reads as a gRPC code.
func etcdErr(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Type: grpcType(codes.DeadlineExceeded), Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Type: loadgen.ErrCanceled, Err: err}
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return &Error{Type: grpcType(ee.Code()), Err: err}
	}
	if s, ok := status.FromError(err); ok {
		return &Error{Type: grpcType(s.Code()), Err: err}
	}
	return err
}

func grpcType(c codes.Code) string { return "grpc_" + c.String() }

// EtcdError types an error from clientv3 as the Etcd adapter does (for callers that use the
// client directly).
func EtcdError(err error) error { return etcdErr(err) }
