package kvprefix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// revokeTimeout bounds the revoke on Close: past it the record still goes, when its TTL ends.
const revokeTimeout = 2 * time.Second

// Registration is an instance record kept alive by a lease. The record exists while the
// service runs: Close (or the end of Register's ctx) revokes the lease and so deletes it at
// once; a crash stops the keep-alives and the record expires after the TTL.
type Registration struct {
	cli    *clientv3.Client
	key    string
	value  string
	ttl    int64
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger

	mu    sync.Mutex
	lease clientv3.LeaseID
	err   error // the final revoke's
}

// Register writes inst at <prefix><service>/<id> with a lease of ttl (rounded up to whole
// seconds; servers may raise it to their minimum) and keeps the lease alive until ctx is done
// or Close is called, then revokes it. If the lease is lost meanwhile (the server was
// unreachable for longer than ttl, or the lease was revoked), the record is written again under
// a new lease as soon as the server answers. The first write happens before Register returns,
// and its failure is Register's error.
//
// A service registers itself like this:
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
//	reg, err := kvprefix.Register(ctx, cli, kvprefix.DefaultPrefix, discovery.Instance{
//		ID: "dps-1", Service: "dps", URL: "http://10.0.0.3:8080", Node: "worker3",
//		Attributes: map[string]string{"accuracy": "0.97"}, Ready: true}, 10*time.Second)
//	...
//	defer reg.Close()
func Register(ctx context.Context, cli *clientv3.Client, prefix string, inst discovery.Instance, ttl time.Duration) (*Registration, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("register: prefix: %w", err)
	}
	if !discovery.ValidServiceName(inst.Service) {
		return nil, fmt.Errorf("register: service %q: want letters, digits, '-', '_' or '.', starting with a letter or digit", inst.Service)
	}
	if inst.ID == "" {
		return nil, errors.New("register: id: required (unique across all services)")
	}
	if err := discovery.CheckInstanceURL(inst.URL); err != nil {
		return nil, fmt.Errorf("register: url: %w", err)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("register: ttl %v: must be positive", ttl)
	}
	value, err := json.Marshal(inst)
	if err != nil {
		return nil, fmt.Errorf("register: encode %s/%s: %w", inst.Service, inst.ID, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &Registration{
		cli:    cli,
		key:    prefix + inst.Service + "/" + inst.ID,
		value:  string(value),
		ttl:    int64(math.Ceil(ttl.Seconds())),
		cancel: cancel,
		done:   make(chan struct{}),
		log:    slog.Default().With("key", prefix+inst.Service+"/"+inst.ID),
	}
	lease, err := r.write(rctx)
	if err != nil {
		cancel()
		return nil, err
	}
	r.lease = lease
	go r.keep(rctx, lease)
	return r, nil
}

// Key is the record's key.
func (r *Registration) Key() string { return r.key }

// Done is closed when the registration has ended (after the revoke).
func (r *Registration) Done() <-chan struct{} { return r.done }

// Close stops the keep-alives and revokes the lease, deleting the record; it returns the
// revoke's error, if any. It is safe to call more than once.
func (r *Registration) Close() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// write grants a lease and puts the record under it.
func (r *Registration) write(ctx context.Context) (clientv3.LeaseID, error) {
	g, err := r.cli.Grant(ctx, r.ttl)
	if err != nil {
		return 0, fmt.Errorf("register %s: grant lease: %w", r.key, err)
	}
	if _, err := r.cli.Put(ctx, r.key, r.value, clientv3.WithLease(g.ID)); err != nil {
		// Do not leave an unused lease behind; it would expire anyway, so failures are moot.
		rctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
		_, _ = r.cli.Revoke(rctx, g.ID)
		cancel()
		return 0, fmt.Errorf("register %s: put: %w", r.key, err)
	}
	return g.ID, nil
}

func (r *Registration) keep(ctx context.Context, lease clientv3.LeaseID) {
	defer close(r.done)
	retry := retryBackoff()
	for {
		// The channel closes when ctx ends, the client closes, or the lease is gone (expired
		// or revoked); responses only need draining.
		if ch, err := r.cli.KeepAlive(ctx, lease); err == nil {
			for range ch {
				retry.Reset()
			}
		}
		if ctx.Err() != nil || r.cli.Ctx().Err() != nil {
			break
		}
		r.log.Warn("registration lease lost; registering again")
		for {
			if !retry.Wait(ctx) {
				break
			}
			l, err := r.write(ctx)
			if err == nil {
				lease = l
				r.mu.Lock()
				r.lease = l
				r.mu.Unlock()
				break
			}
			if r.cli.Ctx().Err() != nil {
				return // client closed under us: nothing more can be done
			}
			r.log.Warn("registration failed; retrying", "err", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if r.cli.Ctx().Err() != nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	_, err := r.cli.Revoke(rctx, lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		err = nil // already expired: the record is gone either way
	}
	if err != nil {
		err = fmt.Errorf("revoke lease of %s (the record expires after %d s): %w", r.key, r.ttl, err)
	}
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// currentLease is the lease the record is under now.
func (r *Registration) currentLease() clientv3.LeaseID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}
