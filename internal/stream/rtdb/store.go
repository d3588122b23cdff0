package rtdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxTxnOps is etcd's default --max-txn-ops, which continuum kv enforces too.
const maxTxnOps = 128

// maxRetries bounds how often a write whose guard failed (a concurrent write under its path) is
// recomputed before the client gets a 503.
const maxRetries = 200

// errTooLarge, errConflict and errPrecondition become 400, 503 and 412.
var (
	errTooLarge = errors.New("write too large")
	errBusy     = errors.New("too much contention: the write was retried and did not commit; try again")
)

// store is the JSON tree of every namespace under one kv prefix.
type store struct {
	kv     *clientv3.Client
	prefix string
	now    func() time.Time
	rules  *ruleStore // checks reads and writes against the security rules (auth_rules.go)
}

// key is the kv key of the node at path in ns.
func (s *store) key(ns string, path []string) string {
	var b strings.Builder
	b.WriteString(s.prefix)
	b.WriteByte('/')
	b.WriteString(ns)
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(p)
	}
	return b.String()
}

// snapshot is what a read saw: per written path, its tree and the keys (with mod revisions).
type snapshot struct {
	rev   int64
	trees []any
	keys  []map[string]int64
	// rulesRev is the mod revision of the database's rules key at rev (0: none stored).
	rulesRev int64
}

// read reads the subtrees at paths in one Txn (one revision).
func (s *store) read(ctx context.Context, ns string, paths [][]string) (*snapshot, error) {
	ops := make([]clientv3.Op, 0, 2*len(paths))
	for _, p := range paths {
		k := s.key(ns, p)
		ops = append(ops, clientv3.OpGet(k), clientv3.OpGet(k+"/", clientv3.WithPrefix()))
	}
	if s.rules != nil { // the rules in force at this revision (keys only: just the mod revision)
		ops = append(ops, clientv3.OpGet(s.rules.settingsKey(ns), clientv3.WithKeysOnly()))
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	snap := &snapshot{rev: resp.Header.Revision}
	if s.rules != nil {
		if kvs := resp.Responses[len(resp.Responses)-1].GetResponseRange().Kvs; len(kvs) > 0 {
			snap.rulesRev = kvs[0].ModRevision
		}
	}
	for i, p := range paths {
		base := s.key(ns, p)
		var t any
		keys := map[string]int64{}
		for _, r := range resp.Responses[2*i : 2*i+2] {
			for _, kv := range r.GetResponseRange().Kvs {
				k := string(kv.Key)
				keys[k] = kv.ModRevision
				var rel []string
				if k != base {
					rel = strings.Split(k[len(base)+1:], "/")
				}
				insert(&t, rel, leaf(kv.Value))
			}
		}
		snap.trees = append(snap.trees, t)
		snap.keys = append(snap.keys, keys)
	}
	return snap, nil
}

// get returns the tree at path.
func (s *store) get(ctx context.Context, ns string, path []string) (any, error) {
	snap, err := s.read(ctx, ns, [][]string{path})
	if err != nil {
		return nil, err
	}
	if s.rules != nil {
		if err := s.rules.checkRead(ctx, s, ns, path, snap); err != nil {
			return nil, err
		}
	}
	return snap.trees[0], nil
}

// update is one path's new value (a normalized tree, server values unresolved).
type update struct {
	path []string
	val  any
}

// preconditionFailed is a failed if-match: the current value.
type preconditionFailed struct{ current any }

func (preconditionFailed) Error() string { return "precondition failed" }

// write commits updates (non-overlapping paths) in one guarded Txn, recomputing it when a
// concurrent write changed what it read. With ifMatch (one update only) it writes only while the
// value's ETag is ifMatch, else returns preconditionFailed. It returns the resolved values.
func (s *store) write(ctx context.Context, ns string, ups []update, ifMatch *string) ([]any, error) {
	paths := make([][]string, len(ups))
	for i, u := range ups {
		paths[i] = u.path
	}
	for attempt := 0; ; attempt++ {
		snap, err := s.read(ctx, ns, paths)
		if err != nil {
			return nil, err
		}
		nowMs := s.now().UnixMilli()
		resolved := make([]any, len(ups))
		consumed := make([]bool, len(ups))
		for i, u := range ups {
			resolved[i], consumed[i] = resolve(u.val, snap.trees[i], nowMs)
		}
		var cmps []clientv3.Cmp
		if s.rules != nil { // judged on the snapshot this attempt read (before if-match: no value leaks)
			if cmps, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved); err != nil {
				return nil, err
			}
		}
		if ifMatch != nil && etag(snap.trees[0]) != *ifMatch {
			return nil, preconditionFailed{snap.trees[0]}
		}
		var ops []clientv3.Op
		puts := map[string]string{}
		dels := map[string]bool{}
		for i, u := range ups {
			k := s.key(ns, u.path)
			val := resolved[i]
			cmps = append(cmps,
				clientv3.Compare(clientv3.ModRevision(k), "<", snap.rev+1),
				clientv3.Compare(clientv3.ModRevision(k+"/"), "<", snap.rev+1).WithPrefix())
			if consumed[i] || ifMatch != nil {
				for old, mr := range snap.keys[i] {
					cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(old), "=", mr))
				}
			}
			flatten(k, val, puts)
			for old := range snap.keys[i] {
				if _, ok := puts[old]; !ok {
					dels[old] = true
				}
			}
			for j := range u.path { // ancestors: a leaf there would shadow the new children
				dels[s.key(ns, u.path[:j])] = true
			}
		}
		for k, v := range puts {
			delete(dels, k)
			ops = append(ops, clientv3.OpPut(k, v))
		}
		for k := range dels {
			ops = append(ops, clientv3.OpDelete(k))
		}
		if len(ops) > maxTxnOps || len(cmps) > maxTxnOps {
			return nil, fmt.Errorf("%w: it sets or deletes %d keys and compares %d (at most %d each per write: one kv key per leaf, one Txn per write)",
				errTooLarge, len(ops), len(cmps), maxTxnOps)
		}
		resp, err := s.kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrTooManyOps) ||
			status.Code(err) == codes.ResourceExhausted {
			return nil, fmt.Errorf("%w: the kv store refused it: %v", errTooLarge, err)
		}
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return resolved, nil
		}
		if attempt >= maxRetries {
			return nil, errBusy
		}
		// Back off a little, more as attempts fail, so contending writers spread out.
		d := time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20))))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
}
