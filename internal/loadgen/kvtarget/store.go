package kvtarget

import (
	"errors"
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

// Store is a target the YCSB workload drives (the operations of ycsb.DB) and closes afterwards.
type Store interface {
	ycsb.DB
	Close() error
}

// ErrNotFoundType is the error type of a read of a missing key.
const ErrNotFoundType = "not_found"

// Error is a store error with its loadgen error type.
type Error struct {
	Type string
	Err  error
}

func (e *Error) Error() string     { return e.Err.Error() }
func (e *Error) Unwrap() error     { return e.Err }
func (e *Error) ErrorType() string { return e.Type }

// errNotFound is returned for a read of a missing key.
func errNotFound(key string) error {
	return &Error{Type: ErrNotFoundType, Err: fmt.Errorf("key %q not found", key)}
}

// Target names a store to drive: Kind is "etcd", "kv" (continuum kv, the etcd protocol) or
// "redis"; Endpoints are etcd client URLs or Redis host:port addresses.
type Target struct {
	Kind      string
	Endpoints []string
}

// Kinds of Target.
const (
	KindEtcd  = "etcd"
	KindKV    = "kv"
	KindRedis = "redis"
)

// ParseTarget parses "etcd=http://127.0.0.1:2379[,http://...]", "kv=http://..." or
// "redis=127.0.0.1:6379".
func ParseTarget(s string) (Target, error) {
	kind, rest, ok := strings.Cut(s, "=")
	if !ok || rest == "" {
		return Target{}, fmt.Errorf("target %q: want etcd=http://HOST:PORT, kv=http://HOST:PORT or redis=HOST:PORT", s)
	}
	t := Target{Kind: kind, Endpoints: strings.Split(rest, ",")}
	return t, t.Validate()
}

// String is the flag form of t.
func (t Target) String() string { return t.Kind + "=" + strings.Join(t.Endpoints, ",") }

// Validate checks the kind and endpoints' form.
func (t Target) Validate() error {
	if len(t.Endpoints) == 0 {
		return fmt.Errorf("target %s: no endpoint", t.Kind)
	}
	for _, e := range t.Endpoints {
		switch t.Kind {
		case KindEtcd, KindKV:
			if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
				return fmt.Errorf("target %s endpoint %q: want http://HOST:PORT", t.Kind, e)
			}
		case KindRedis:
			if strings.Contains(e, "://") || !strings.Contains(e, ":") {
				return fmt.Errorf("target redis endpoint %q: want HOST:PORT", e)
			}
		default:
			return fmt.Errorf("target kind %q: want etcd, kv or redis", t.Kind)
		}
	}
	if t.Kind == KindRedis && len(t.Endpoints) > 1 {
		return errors.New("target redis: one endpoint (standalone Redis)")
	}
	return nil
}

// Options tune the clients.
type Options struct {
	// Conns is the number of connections: gRPC connections for etcd (requests are multiplexed
	// over them; default 4), the pool size for Redis (requests beyond it wait for a
	// connection; default 64).
	Conns int
}

// Open connects to the target; it does not wait for the server (the first requests fail
// until it answers).
func Open(t Target, opts Options) (Store, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	switch t.Kind {
	case KindRedis:
		return NewRedis(t.Endpoints[0], opts.Conns), nil
	default:
		return NewEtcd(t.Endpoints, opts.Conns)
	}
}
