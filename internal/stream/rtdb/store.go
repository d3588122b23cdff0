package rtdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync/atomic"
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

// kvBytesRead counts the bytes of values the database read from kv (data and what rules read):
// what tests use to check that a denied request reads nothing it does not need.
var kvBytesRead atomic.Int64

// read reads the subtrees at paths in one Txn (one revision).
func (s *store) read(ctx context.Context, ns string, paths [][]string) (*snapshot, error) {
	return s.readAt(ctx, ns, paths, 0)
}

// readAt is read at revision rev (0: the latest).
func (s *store) readAt(ctx context.Context, ns string, paths [][]string, rev int64) (*snapshot, error) {
	ops := make([]clientv3.Op, 0, 2*len(paths))
	for _, p := range paths {
		k := s.key(ns, p)
		ops = append(ops, clientv3.OpGet(k, clientv3.WithRev(rev)), clientv3.OpGet(k+"/", clientv3.WithPrefix(), clientv3.WithRev(rev)))
	}
	if s.rules != nil { // the rules in force at this revision (keys only: just the mod revision)
		ops = append(ops, clientv3.OpGet(s.rules.settingsKey(ns), clientv3.WithKeysOnly(), clientv3.WithRev(rev)))
	}
	if len(ops) > maxTxnOps {
		return nil, fmt.Errorf("%w: it writes %d paths, each read with 2 kv ranges in one Txn of at most %d operations: at most %d paths per write",
			errTooLarge, len(paths), maxTxnOps, (maxTxnOps-1)/2)
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, kvRefused(err)
	}
	snap := &snapshot{rev: resp.Header.Revision}
	if rev > 0 {
		snap.rev = rev
	}
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
				kvBytesRead.Add(int64(len(kv.Value)))
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

// get returns the tree at path. The rules judge the read first, reading only what their
// expressions ask for (nothing for a rule on auth alone), and the subtree is then read at the
// revision they judged: a denied read never reads the data it denies, so neither its latency
// nor its cost depends on that data (GET /.json by anyone is one rules evaluation, not a read of
// the whole database).
func (s *store) get(ctx context.Context, ns string, path []string) (any, error) {
	rev, err := s.readAllowedRev(ctx, ns, path)
	if err != nil {
		return nil, err
	}
	snap, err := s.readAt(ctx, ns, [][]string{path}, rev)
	if errors.Is(err, rpctypes.ErrCompacted) { // the judged revision is gone: read now, judge again
		if snap, err = s.read(ctx, ns, [][]string{path}); err == nil && s.rules != nil {
			err = s.rules.checkRead(ctx, s, ns, path, snap)
		}
	}
	if err != nil {
		return nil, err
	}
	return snap.trees[0], nil
}

// writeAllowedLazy judges ups by the rules before anything under their paths is read, reading
// only what the expressions ask for: a write the rules deny whatever the data is denied without
// reading (or retrying on) the subtree it names. Writes with an increment are judged only with
// the data (newData depends on it); an allowed write is judged again on what it read.
func (s *store) writeAllowedLazy(ctx context.Context, ns string, ups []update) error {
	if s.rules == nil {
		return nil
	}
	if a := AuthFrom(ctx); a != nil && a.Admin {
		return nil
	}
	resolved := make([]any, len(ups))
	nowMs := s.now().UnixMilli()
	for i, u := range ups {
		if len(increments("", u.val, nil)) > 0 {
			return nil
		}
		resolved[i], _ = resolve(u.val, nil, nowMs)
	}
	snap, err := s.rulesSnapshot(ctx, ns)
	if err != nil {
		return err
	}
	_, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved)
	return err
}

// shallow returns the node at path with each child truncated to true (a primitive as itself), as
// Firebase's shallow=true does. It reads the subtree's keys without their values, so listing the
// children of a large node costs the keys, not the data under them.
func (s *store) shallow(ctx context.Context, ns string, path []string) (any, error) {
	k := s.key(ns, path)
	ops := []clientv3.Op{clientv3.OpGet(k), clientv3.OpGet(k+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())}
	if s.rules != nil {
		ops = append(ops, clientv3.OpGet(s.rules.settingsKey(ns), clientv3.WithKeysOnly()))
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, kvRefused(err)
	}
	if s.rules != nil {
		snap := &snapshot{rev: resp.Header.Revision}
		if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
			snap.rulesRev = kvs[0].ModRevision
		}
		// No trees in snap: whatever the rules read is read at snap.rev.
		if err := s.rules.checkReadPaths(ctx, s, ns, path, snap, nil); err != nil {
			return nil, err
		}
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		return leaf(kvs[0].Value), nil
	}
	var t any
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		child, _, _ := strings.Cut(string(kv.Key[len(k)+1:]), "/")
		insert(&t, []string{child}, leaf("true"))
	}
	return t, nil
}

// update is one path's new value (a normalized tree, server values unresolved).
type update struct {
	path []string
	val  any
}

// precondition is a conditional write's test of the value it replaces (one update only): a
// REST if-match (the value's ETag) or a WebSocket transaction's put (the SDK's hash of it).
// Its outcome tells the caller whether the value equals a guess, so a conditional write needs
// the rules' read permission at its path as well as the write permission, and both are
// checked before the test runs: a caller denied either gets a denial whatever the value is.
type precondition func(cur any) bool

// etagIs is REST's if-match: the value's ETag is tag.
func etagIs(tag string) precondition { return func(cur any) bool { return etag(cur) == tag } }

// preconditionFailed is a failed precondition: the current value, read at rev.
type preconditionFailed struct {
	current any
	rev     int64
}

func (preconditionFailed) Error() string { return "precondition failed" }

// write commits updates (non-overlapping paths) in one guarded Txn, recomputing it when a
// concurrent write changed what it read. With cond (one update only) it writes only while the
// value there passes cond, else returns preconditionFailed. It returns the resolved values.
func (s *store) write(ctx context.Context, ns string, ups []update, cond precondition) ([]any, error) {
	res, _, err := s.writeRev(ctx, ns, ups, cond)
	return res, err
}

// mayWrite judges ups by the rules as the caller in ctx, on the database as it is now, without
// writing: what an onDisconnect write is checked with when it is registered (Firebase checks
// it then, and again when it runs).
func (s *store) mayWrite(ctx context.Context, ns string, ups []update) error {
	if s.rules == nil {
		return nil
	}
	if err := s.writeAllowedLazy(ctx, ns, ups); err != nil {
		return err
	}
	paths := make([][]string, len(ups))
	for i, u := range ups {
		paths[i] = u.path
	}
	snap, err := s.read(ctx, ns, paths)
	if err != nil {
		return err
	}
	nowMs := s.now().UnixMilli()
	resolved := make([]any, len(ups))
	var bad error
	for i, u := range ups {
		var e error
		resolved[i], _, e = resolveAt(u.val, snap.trees[i], nowMs, u.path)
		bad = cmp.Or(bad, e)
	}
	if _, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved); err != nil {
		return err
	}
	return bad
}

// writeRev is write that also returns the kv revision of its Txn when the Txn changed a key (0
// when it changed none: then no watcher sees an event for it), so that a WebSocket write can
// be acknowledged only after its listeners were sent the change (ws.go).
func (s *store) writeRev(ctx context.Context, ns string, ups []update, cond precondition) ([]any, int64, error) {
	if err := s.writeAllowedLazy(ctx, ns, ups); err != nil {
		return nil, 0, err
	}
	paths := make([][]string, len(ups))
	for i, u := range ups {
		paths[i] = u.path
	}
	for attempt := 0; ; attempt++ {
		snap, err := s.read(ctx, ns, paths)
		if err != nil {
			return nil, 0, err
		}
		nowMs := s.now().UnixMilli()
		resolved := make([]any, len(ups))
		consumed := make([]bool, len(ups))
		var bad error // an increment whose sum is not finite: reported after the rules allowed the write
		for i, u := range ups {
			var e error
			resolved[i], consumed[i], e = resolveAt(u.val, snap.trees[i], nowMs, u.path)
			bad = cmp.Or(bad, e)
		}
		var cmps []clientv3.Cmp
		if s.rules != nil { // judged on the snapshot this attempt read, before cond looks at it
			if cmps, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved); err != nil {
				return nil, 0, err
			}
			if cond != nil {
				if err := s.rules.checkRead(ctx, s, ns, ups[0].path, snap); err != nil {
					return nil, 0, err
				}
			}
		}
		if cond != nil && !cond(snap.trees[0]) {
			return nil, 0, preconditionFailed{snap.trees[0], snap.rev}
		}
		if bad != nil {
			return nil, 0, bad
		}
		// Whether the caller may read every written path: if not, the size limit below is judged
		// on what it writes alone, so that its answer does not depend on the data it cannot see.
		seesAll := true
		if s.rules != nil && cond == nil {
			for _, u := range ups {
				switch err := s.rules.checkReadPaths(ctx, s, ns, u.path, snap, paths); {
				case errors.Is(err, ErrPermissionDenied):
					seesAll = false
				case err != nil:
					return nil, 0, err
				}
			}
		}
		puts := map[string]string{}
		ancestors := map[string]bool{}
		for i, u := range ups {
			k := s.key(ns, u.path)
			flatten(k, resolved[i], puts)
			for j := range u.path { // ancestors: a leaf there would shadow the new children
				ancestors[s.key(ns, u.path[:j])] = true
			}
		}
		var ops, dels []clientv3.Op
		worst := len(puts) + len(ancestors) // the most operations any hidden data could need
		for i, u := range ups {
			k := s.key(ns, u.path)
			cmps = append(cmps,
				clientv3.Compare(clientv3.ModRevision(k), "<", snap.rev+1),
				clientv3.Compare(clientv3.ModRevision(k+"/"), "<", snap.rev+1).WithPrefix())
			switch {
			case cond != nil: // the value was compared whole: any change to it, deletes included, fails the Txn
				for old, mr := range snap.keys[i] {
					cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(old), "=", mr))
				}
			case consumed[i]: // the leaves the increments added to must still be there, unchanged
				for _, inc := range increments(k, u.val, nil) {
					if mr, ok := snap.keys[i][inc]; ok {
						cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(inc), "=", mr))
					}
				}
			}
			d, w := replaceDeletes(k, puts, snap.keys[i])
			dels = append(dels, d...)
			worst += w
		}
		for k, v := range puts {
			ops = append(ops, clientv3.OpPut(k, v))
		}
		for k := range ancestors {
			if _, ok := puts[k]; !ok {
				ops = append(ops, clientv3.OpDelete(k))
			}
		}
		ops = append(ops, dels...)
		if !seesAll && (worst > maxTxnOps || len(cmps) > maxTxnOps) {
			return nil, 0, fmt.Errorf("%w: it sets %d keys and compares %d; replacing data the caller may not read takes up to %d operations whatever that data is (at most %d per write: one kv key per leaf set, one range delete per gap between them, one Txn per write)",
				errTooLarge, len(puts), len(cmps), worst, maxTxnOps)
		}
		if len(ops) > maxTxnOps || len(cmps) > maxTxnOps {
			return nil, 0, fmt.Errorf("%w: it sets or deletes %d keys and ranges and compares %d (at most %d each per write: one kv key per leaf, one Txn per write)",
				errTooLarge, len(ops), len(cmps), maxTxnOps)
		}
		resp, err := s.kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, 0, kvRefused(err)
		}
		if resp.Succeeded {
			return resolved, changedRev(resp, len(puts)), nil
		}
		if attempt >= maxRetries {
			return nil, 0, errBusy
		}
		// Back off a little, more as attempts fail, so contending writers spread out.
		d := time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20))))
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(d):
		}
	}
}

// replaceDeletes is what removes the old keys under k (olds, as read) that the write's puts do
// not overwrite: k itself if it was a leaf, and one range delete per gap between the sorted put
// keys under k that holds an old key (a range must not contain a key the Txn puts: the kv
// refuses that as a duplicate key). The write's guard (no key under k changed since the read)
// makes a range delete remove exactly what was read. worst is how many operations this could
// take for any old value: the caller's own data bounds it, so a limit judged on worst does not
// depend on data the caller may not see.
func replaceDeletes(k string, puts map[string]string, olds map[string]int64) (ops []clientv3.Op, worst int) {
	var under []string
	for p := range puts {
		if strings.HasPrefix(p, k+"/") {
			under = append(under, p)
		}
	}
	sort.Strings(under)
	worst = len(under) + 1
	if _, put := puts[k]; !put {
		worst++
		if _, ok := olds[k]; ok {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	gaps := map[int]bool{}
	for old := range olds {
		if _, put := puts[old]; put || old == k {
			continue
		}
		gaps[sort.SearchStrings(under, old)] = true
	}
	for g := range gaps {
		lo, hi := k+"/", clientv3.GetPrefixRangeEnd(k+"/")
		if g > 0 {
			lo = under[g-1] + "\x00"
		}
		if g < len(under) {
			hi = under[g]
		}
		ops = append(ops, clientv3.OpDelete(lo, clientv3.WithRange(hi)))
	}
	return ops, worst
}

// increments lists the kv keys (k plus the path below it) where v holds an increment.
func increments(k string, v any, out []string) []string {
	switch x := v.(type) {
	case serverValue:
		if !x.timestamp {
			out = append(out, k)
		}
	case map[string]any:
		for c, e := range x {
			out = increments(k+"/"+c, e, out)
		}
	}
	return out
}

// kvRefused maps the kv's refusal of a request by its size (too many operations in one Txn, a
// request over its byte limit) to errTooLarge, naming the limit; other errors pass unchanged.
// The client returns etcd's errors as rpctypes.EtcdError (matched by errors.Is) when it knows
// their text, and as a gRPC status otherwise; both forms are checked, so a kv that words the
// refusal differently still maps by its code.
func kvRefused(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrGRPCTooManyOps):
		return fmt.Errorf("%w: the kv store refused it: %v (at most %d operations per Txn: one per key set or deleted, one per compare, 2 ranges per path read)",
			errTooLarge, err, maxTxnOps)
	case errors.Is(err, rpctypes.ErrRequestTooLarge), errors.Is(err, rpctypes.ErrGRPCRequestTooLarge),
		status.Code(err) == codes.ResourceExhausted:
		return fmt.Errorf("%w: the kv store refused it: %v", errTooLarge, err)
	}
	return err
}

// changedRev is the revision of a committed write Txn if it put a key or deleted one that existed.
func changedRev(resp *clientv3.TxnResponse, puts int) int64 {
	changed := puts > 0
	for _, r := range resp.Responses {
		if d := r.GetResponseDeleteRange(); d != nil && d.Deleted > 0 {
			changed = true
		}
	}
	if !changed {
		return 0
	}
	return resp.Header.Revision
}
