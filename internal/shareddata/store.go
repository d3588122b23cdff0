package shareddata

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Store is the platform's API. Every method is safe for concurrent use; methods that block take
// a context. Keys and values are bytes; names (namespaces, groups, producers, consumers,
// channels) are checked by ValidName.
type Store interface {
	// Backend names the store behind this client (BackendKV, BackendEtcd, ...).
	Backend() string

	// Set writes every pair of namespace ns atomically.
	Set(ctx context.Context, ns string, pairs ...Pair) error
	// Get reads keys of ns; absent keys are absent from the map.
	Get(ctx context.Context, ns string, keys []string, opts ...ReadOption) (map[string][]byte, error)
	// SetIf replaces key's value with newValue only if it is oldValue; it reports whether it did.
	SetIf(ctx context.Context, ns, key string, oldValue, newValue []byte) (bool, error)
	// SetIfNotExists writes key only if it is absent; it reports whether it did.
	SetIfNotExists(ctx context.Context, ns, key string, value []byte) (bool, error)
	// Remove deletes keys of ns (absent keys are not an error).
	Remove(ctx context.Context, ns string, keys ...string) error
	// RemoveIf deletes key only if its value is value; it reports whether it did.
	RemoveIf(ctx context.Context, ns, key string, value []byte) (bool, error)
	// ListKeys lists the keys of ns that start with prefix, sorted.
	ListKeys(ctx context.Context, ns, prefix string) ([]string, error)

	// AddMember, RemoveMember and GetMembers keep a named set of members in ns.
	AddMember(ctx context.Context, ns, group string, members ...string) error
	RemoveMember(ctx context.Context, ns, group string, members ...string) error
	GetMembers(ctx context.Context, ns, group string) ([]string, error)

	// SetAndPublish writes pairs and appends each event to its channel, all atomically.
	SetAndPublish(ctx context.Context, ns string, events []Event, pairs ...Pair) error
	// Subscribe delivers the events published on the channels of ns after cursor from (see
	// Subscription). Events of one channel arrive in order.
	Subscribe(ctx context.Context, ns string, from Cursor, channels ...string) (*Subscription, error)

	// PublishMetrics publishes producer's newest metrics for group.
	PublishMetrics(ctx context.Context, group, producer string, value []byte) error
	// SubscribeMetrics delivers every metrics publication of group's producers after from;
	// Message.Name is the producer.
	SubscribeMetrics(ctx context.Context, group string, from Cursor) (*Subscription, error)
	// PublishControl publishes consumer's control policy for producer in group.
	PublishControl(ctx context.Context, group, producer, consumer string, value []byte) error
	// SubscribeControl delivers the control published for producer in group after from;
	// Message.Name is the consumer that published it.
	SubscribeControl(ctx context.Context, group, producer string, from Cursor) (*Subscription, error)

	// StatePush appends value to consumer's state queue, drops the oldest entries beyond
	// capacity, and returns the whole queue oldest first: one atomic round trip.
	StatePush(ctx context.Context, consumer string, capacity int, value []byte) ([][]byte, error)
	// StateRead returns consumer's state queue, oldest first.
	StateRead(ctx context.Context, consumer string, opts ...ReadOption) ([][]byte, error)
	// StateIndices returns the queue's head (the index the next push writes) and tail (the
	// index of the oldest entry); the queue holds head-tail entries.
	StateIndices(ctx context.Context, consumer string, opts ...ReadOption) (head, tail int64, err error)
	// StateClear deletes consumer's state queue.
	StateClear(ctx context.Context, consumer string) error

	// The seed's PACE updates a state queue in separate round trips, none atomic with the
	// others: read the indices, delete the oldest entry, put the new one, put the indices,
	// read the queue. These are those steps (with StateIndices and StateRead), for emulating
	// it and comparing it with StatePush; an application should use StatePush.
	StatePut(ctx context.Context, consumer string, index int64, value []byte) error
	StateDelete(ctx context.Context, consumer string, index int64) error
	StateSetIndices(ctx context.Context, consumer string, head, tail int64) error

	// Close releases the client's connections and ends its subscriptions.
	Close() error
}

// Backend names.
const (
	BackendKV           = "kv"
	BackendEtcd         = "etcd"
	BackendRedis        = "redis"
	BackendRedisCluster = "redis-cluster"
)

// Backends lists the backend names Open accepts.
var Backends = []string{BackendKV, BackendEtcd, BackendRedis, BackendRedisCluster}

// Pair is a key and its value.
type Pair struct {
	Key   string
	Value []byte
}

// Event is a payload published on a channel.
type Event struct {
	Channel string
	Data    []byte
}

// Consistency is how fresh a read must be.
type Consistency int

const (
	// Linearizable reads see every write acknowledged before the read began (etcd: through
	// the leader's quorum; Redis Cluster: from the master).
	Linearizable Consistency = iota
	// Serializable reads answer from the nearest copy, which may be stale (etcd: the member
	// asked; Redis Cluster: a replica). continuum kv answers every read from the member asked:
	// both levels are the same there, and both are local.
	Serializable
)

func (c Consistency) String() string {
	if c == Serializable {
		return "serializable"
	}
	return "linearizable"
}

// ReadOption adjusts a read.
type ReadOption func(*readOptions)

type readOptions struct{ consistency Consistency }

// WithConsistency sets a read's consistency (default Linearizable).
func WithConsistency(c Consistency) ReadOption { return func(o *readOptions) { o.consistency = c } }

func readOpts(opts []ReadOption) readOptions {
	var o readOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Config says which backend to use and how to reach it.
type Config struct {
	// Backend is one of Backends.
	Backend string
	// Endpoints: etcd/kv client URLs (http://host:port), or Redis host:port addresses (for a
	// Redis Cluster, any of its instances).
	Endpoints []string
	// DialTimeout bounds connecting (default 5 s).
	DialTimeout time.Duration
	// StreamRetention is how many messages a Redis stream keeps (approximately, XADD MAXLEN ~):
	// a subscriber away for longer than that many publications gets a gap. Default 1000.
	// etcd and kv keep history until compaction.
	StreamRetention int64
	// ReadReplicas lets Serializable reads on a Redis Cluster go to replicas (default: they
	// go to masters like every other read).
	ReadReplicas bool
}

// DefaultStreamRetention is Config.StreamRetention's default.
const DefaultStreamRetention = 1000

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	found := false
	for _, b := range Backends {
		found = found || c.Backend == b
	}
	if !found {
		return fmt.Errorf("shareddata backend %q: want one of %s", c.Backend, strings.Join(Backends, ", "))
	}
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("shareddata %s: no endpoints", c.Backend)
	}
	if c.DialTimeout < 0 || c.StreamRetention < 0 {
		return errors.New("shareddata: dial timeout and stream retention must be >= 0")
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.StreamRetention == 0 {
		c.StreamRetention = DefaultStreamRetention
	}
	return nil
}

// Open connects to the configured backend.
func Open(ctx context.Context, cfg Config) (Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Backend {
	case BackendKV, BackendEtcd:
		return openEtcd(ctx, cfg)
	default:
		return openRedis(ctx, cfg)
	}
}

// MaxStateCapacity bounds a state queue's capacity (a 1 MB state of 1 kB metrics is 1000).
const MaxStateCapacity = 100000

// ValidName checks a namespace, group, producer, consumer or channel name: 1 to 200 bytes of
// letters, digits and . _ - (so names never split a key path or a Redis hash tag).
func ValidName(what, name string) error {
	if name == "" || len(name) > 200 {
		return fmt.Errorf("%s %q: must be 1 to 200 characters", what, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%s %q: character %q not allowed (letters, digits, '.', '_' and '-' are)", what, name, r)
		}
	}
	return nil
}

// validKey checks a key: non-empty.
func validKey(key string) error {
	if key == "" {
		return errors.New("key: must not be empty")
	}
	return nil
}

// checkNames checks (what, name) pairs with ValidName.
func checkNames(whatName ...string) error {
	for i := 0; i+1 < len(whatName); i += 2 {
		if err := ValidName(whatName[i], whatName[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func validNames(what string, names ...string) error {
	for _, n := range names {
		if err := ValidName(what, n); err != nil {
			return err
		}
	}
	return nil
}

// validSubscription checks Subscribe's namespace and channels (at least one).
func validSubscription(ns string, channels []string) error {
	if err := ValidName("namespace", ns); err != nil {
		return err
	}
	if len(channels) == 0 {
		return errors.New("subscribe: no channels")
	}
	return validNames("channel", channels...)
}

func validPairs(pairs []Pair) error {
	for _, p := range pairs {
		if err := validKey(p.Key); err != nil {
			return err
		}
	}
	return nil
}

func validCapacity(capacity int) error {
	if capacity < 1 || capacity > MaxStateCapacity {
		return fmt.Errorf("state capacity %d: want 1 to %d", capacity, MaxStateCapacity)
	}
	return nil
}
