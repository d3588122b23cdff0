package shareddata

import (
	"context"
	"fmt"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/netcheck"
)

// maxTxnOps is etcd's default --max-txn-ops (continuum kv has the same limit): one atomic Set
// or Get of more keys than this is refused rather than split.
const maxTxnOps = 128

// etcdStore is the backend for etcd and continuum kv, through etcd's own client.
type etcdStore struct {
	backend string
	cli     *clientv3.Client

	// hints caches each state queue's indices and the revision that wrote them, so that a
	// push is one Txn guarded by that revision; a stale hint costs one retry.
	mu    sync.Mutex
	hints map[string]stateHint
}

type stateHint struct{ head, tail, rev int64 }

func openEtcd(ctx context.Context, cfg Config) (*etcdStore, error) {
	// The client dials lazily and its requests retry until their context ends, so a wrong
	// address would otherwise show nothing until the caller's deadline.
	if err := netcheck.Listening(ctx, cfg.Endpoints, cfg.DialTimeout); err != nil {
		return nil, fmt.Errorf("shareddata %s: %w (is an etcd or continuum kv server there?)", cfg.Backend, err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Context:     context.WithoutCancel(ctx),
		Logger:      zap.NewNop(),
		// A 1 MB state queue read in one response, 100 kB metrics: well inside 16 MiB.
		MaxCallRecvMsgSize: 16 << 20,
		MaxCallSendMsgSize: 2 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("shareddata %s %v: %w", cfg.Backend, cfg.Endpoints, err)
	}
	return &etcdStore{backend: cfg.Backend, cli: cli, hints: map[string]stateHint{}}, nil
}

func (s *etcdStore) Backend() string { return s.backend }
func (s *etcdStore) Close() error    { return s.cli.Close() }

// dedupe drops repeated names, keeping the first (etcd refuses a txn that names a key twice).
func dedupe(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// lastWins keeps each key's last pair, as Redis's MSET does with a repeated key.
func lastWins(pairs []Pair) []Pair {
	last := make(map[string]int, len(pairs))
	for i, p := range pairs {
		last[p.Key] = i
	}
	out := make([]Pair, 0, len(last))
	for i, p := range pairs {
		if last[p.Key] == i {
			out = append(out, p)
		}
	}
	return out
}

func getOpts(o readOptions, more ...clientv3.OpOption) []clientv3.OpOption {
	if o.consistency == Serializable {
		more = append(more, clientv3.WithSerializable())
	}
	return more
}

func (s *etcdStore) Set(ctx context.Context, ns string, pairs ...Pair) error {
	return s.SetAndPublish(ctx, ns, nil, pairs...)
}

func (s *etcdStore) SetAndPublish(ctx context.Context, ns string, events []Event, pairs ...Pair) error {
	if err := ValidName("namespace", ns); err != nil {
		return err
	}
	if err := validPairs(pairs); err != nil {
		return err
	}
	if len(pairs)+len(events) > maxTxnOps {
		return fmt.Errorf("%d pairs and events in one atomic write: %s allows at most %d", len(pairs)+len(events), s.backend, maxTxnOps)
	}
	ops := make([]clientv3.Op, 0, len(pairs)+len(events))
	for _, p := range lastWins(pairs) {
		ops = append(ops, clientv3.OpPut(etcdSDLData(ns)+p.Key, string(p.Value)))
	}
	seen := map[string]bool{}
	for _, e := range events {
		if err := ValidName("channel", e.Channel); err != nil {
			return err
		}
		// A txn may write a key once: two events on one channel in one write would be two
		// puts of its key, so they are refused rather than silently merged.
		if seen[e.Channel] {
			return fmt.Errorf("two events on channel %q in one write: %s delivers one per channel per write", e.Channel, s.backend)
		}
		seen[e.Channel] = true
		ops = append(ops, clientv3.OpPut(etcdSDLEvents(ns)+e.Channel, string(e.Data)))
	}
	if len(ops) == 0 {
		return nil
	}
	_, err := s.cli.Txn(ctx).Then(ops...).Commit()
	return err
}

func (s *etcdStore) Get(ctx context.Context, ns string, keys []string, opts ...ReadOption) (map[string][]byte, error) {
	if err := ValidName("namespace", ns); err != nil {
		return nil, err
	}
	if len(keys) > maxTxnOps {
		return nil, fmt.Errorf("%d keys in one Get: %s allows at most %d", len(keys), s.backend, maxTxnOps)
	}
	o := readOpts(opts)
	ops := make([]clientv3.Op, 0, len(keys))
	for _, k := range keys {
		if err := validKey(k); err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpGet(etcdSDLData(ns)+k, getOpts(o)...))
	}
	out := make(map[string][]byte, len(keys))
	if len(ops) == 0 {
		return out, nil
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	for i, r := range resp.Responses {
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
			out[keys[i]] = kvs[0].Value
		}
	}
	return out, nil
}

// cond runs If(cmp) Then(op) and reports whether the comparison held.
func (s *etcdStore) cond(ctx context.Context, ns, key string, cmp func(k string) clientv3.Cmp, op func(k string) clientv3.Op) (bool, error) {
	if err := ValidName("namespace", ns); err != nil {
		return false, err
	}
	if err := validKey(key); err != nil {
		return false, err
	}
	k := etcdSDLData(ns) + key
	resp, err := s.cli.Txn(ctx).If(cmp(k)).Then(op(k)).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

func (s *etcdStore) SetIf(ctx context.Context, ns, key string, oldValue, newValue []byte) (bool, error) {
	// A value comparison on an absent key fails in etcd, as SDL's SetIf does.
	return s.cond(ctx, ns, key,
		func(k string) clientv3.Cmp { return clientv3.Compare(clientv3.Value(k), "=", string(oldValue)) },
		func(k string) clientv3.Op { return clientv3.OpPut(k, string(newValue)) })
}

func (s *etcdStore) SetIfNotExists(ctx context.Context, ns, key string, value []byte) (bool, error) {
	return s.cond(ctx, ns, key,
		func(k string) clientv3.Cmp { return clientv3.Compare(clientv3.CreateRevision(k), "=", 0) },
		func(k string) clientv3.Op { return clientv3.OpPut(k, string(value)) })
}

func (s *etcdStore) RemoveIf(ctx context.Context, ns, key string, value []byte) (bool, error) {
	return s.cond(ctx, ns, key,
		func(k string) clientv3.Cmp { return clientv3.Compare(clientv3.Value(k), "=", string(value)) },
		func(k string) clientv3.Op { return clientv3.OpDelete(k) })
}

func (s *etcdStore) Remove(ctx context.Context, ns string, keys ...string) error {
	if err := ValidName("namespace", ns); err != nil {
		return err
	}
	if len(keys) > maxTxnOps {
		return fmt.Errorf("%d keys in one Remove: %s allows at most %d", len(keys), s.backend, maxTxnOps)
	}
	ops := make([]clientv3.Op, 0, len(keys))
	for _, k := range dedupe(keys) {
		if err := validKey(k); err != nil {
			return err
		}
		ops = append(ops, clientv3.OpDelete(etcdSDLData(ns)+k))
	}
	if len(ops) == 0 {
		return nil
	}
	_, err := s.cli.Txn(ctx).Then(ops...).Commit()
	return err
}

// keysUnder lists the keys under prefix with the prefix cut off, in key order.
func (s *etcdStore) keysUnder(ctx context.Context, prefix string, opts ...clientv3.OpOption) ([]string, error) {
	resp, err := s.cli.Get(ctx, prefix, append(opts, clientv3.WithPrefix(), clientv3.WithKeysOnly())...)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), prefix))
	}
	return out, nil
}

func (s *etcdStore) ListKeys(ctx context.Context, ns, prefix string) ([]string, error) {
	if err := ValidName("namespace", ns); err != nil {
		return nil, err
	}
	keys, err := s.keysUnder(ctx, etcdSDLData(ns)+prefix)
	for i := range keys {
		keys[i] = prefix + keys[i]
	}
	return keys, err
}

func (s *etcdStore) AddMember(ctx context.Context, ns, group string, members ...string) error {
	return s.members(ctx, ns, group, members, func(k string) clientv3.Op { return clientv3.OpPut(k, "") })
}

func (s *etcdStore) RemoveMember(ctx context.Context, ns, group string, members ...string) error {
	return s.members(ctx, ns, group, members, func(k string) clientv3.Op { return clientv3.OpDelete(k) })
}

func (s *etcdStore) members(ctx context.Context, ns, group string, members []string, op func(string) clientv3.Op) error {
	if err := checkNames("namespace", ns, "group", group); err != nil {
		return err
	}
	if err := validNames("member", members...); err != nil {
		return err
	}
	if len(members) > maxTxnOps {
		return fmt.Errorf("%d members in one call: %s allows at most %d", len(members), s.backend, maxTxnOps)
	}
	ops := make([]clientv3.Op, 0, len(members))
	for _, m := range dedupe(members) {
		ops = append(ops, op(etcdSDLGroup(ns, group)+m))
	}
	if len(ops) == 0 {
		return nil
	}
	_, err := s.cli.Txn(ctx).Then(ops...).Commit()
	return err
}

func (s *etcdStore) GetMembers(ctx context.Context, ns, group string) ([]string, error) {
	if err := checkNames("namespace", ns, "group", group); err != nil {
		return nil, err
	}
	return s.keysUnder(ctx, etcdSDLGroup(ns, group))
}

func (s *etcdStore) PublishMetrics(ctx context.Context, group, producer string, value []byte) error {
	if err := checkNames("group", group, "producer", producer); err != nil {
		return err
	}
	_, err := s.cli.Put(ctx, etcdMetricsKey(group, producer), string(value))
	return err
}

func (s *etcdStore) PublishControl(ctx context.Context, group, producer, consumer string, value []byte) error {
	if err := checkNames("group", group, "producer", producer, "consumer", consumer); err != nil {
		return err
	}
	_, err := s.cli.Put(ctx, etcdCtrlKey(group, producer, consumer), string(value))
	return err
}
