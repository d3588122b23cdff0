package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// Write commits updates (non-overlapping paths) in one guarded Txn, recomputing it when a
// concurrent write changed what it read. With cond (one update only) it writes only while the
// value there passes cond, else returns PreconditionFailed. It returns the resolved values.
func (s *Store) Write(ctx context.Context, ns string, ups []Update, cond Precondition) ([]any, error) {
	res, _, err := s.WriteRev(ctx, ns, ups, cond)
	return res, err
}

// MayWrite judges ups by the rules as the caller in ctx, on the database as it is now, without
// writing: what an onDisconnect write is checked with when it is registered (Firebase checks
// it then, and again when it runs).
func (s *Store) MayWrite(ctx context.Context, ns string, ups []Update) error {
	if s.rules == nil {
		return nil
	}
	if err := s.writeAllowedLazy(ctx, ns, ups); err != nil {
		return err
	}
	paths := make([][]string, len(ups))
	for i, u := range ups {
		paths[i] = u.Path
	}
	snap, err := s.Read(ctx, ns, paths)
	if err != nil {
		return err
	}
	nowMs := s.now().UnixMilli()
	resolved := make([]any, len(ups))
	var bad error
	for i, u := range ups {
		var e error
		resolved[i], _, e = tree.ResolveAt(u.Val, snap.Trees[i], nowMs, u.Path)
		bad = cmp.Or(bad, e)
	}
	if _, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved); err != nil {
		return err
	}
	return bad
}

// WriteRev is write that also returns the kv revision of its Txn when the Txn changed a key (0
// when it changed none: then no watcher sees an event for it), so that a WebSocket write can
// be acknowledged only after its listeners were sent the change (package ws).
func (s *Store) WriteRev(ctx context.Context, ns string, ups []Update, cond Precondition) ([]any, int64, error) {
	if err := s.writeAllowedLazy(ctx, ns, ups); err != nil {
		return nil, 0, err
	}
	paths := make([][]string, len(ups))
	for i, u := range ups {
		paths[i] = u.Path
	}
	for attempt := 0; ; attempt++ {
		snap, err := s.Read(ctx, ns, paths)
		if err != nil {
			return nil, 0, err
		}
		nowMs := s.now().UnixMilli()
		resolved := make([]any, len(ups))
		consumed := make([]bool, len(ups))
		var bad error // an increment whose sum is not finite: reported after the rules allowed the write
		for i, u := range ups {
			var e error
			resolved[i], consumed[i], e = tree.ResolveAt(u.Val, snap.Trees[i], nowMs, u.Path)
			bad = cmp.Or(bad, e)
		}
		var cmps []clientv3.Cmp
		if s.rules != nil { // judged on the snapshot this attempt read, before cond looks at it
			if cmps, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved); err != nil {
				return nil, 0, err
			}
			if cond != nil {
				if err := s.rules.checkRead(ctx, s, ns, ups[0].Path, snap); err != nil {
					return nil, 0, err
				}
			}
		}
		if cond != nil && !cond(snap.Trees[0]) {
			return nil, 0, PreconditionFailed{Current: snap.Trees[0], Rev: snap.Rev}
		}
		if bad != nil {
			return nil, 0, bad
		}
		// Whether the caller may read every written path: if not, the size limit below is judged
		// on what it writes alone, so that its answer does not depend on the data it cannot see.
		seesAll := true
		if s.rules != nil && cond == nil {
			for _, u := range ups {
				switch err := s.rules.checkReadPaths(ctx, s, ns, u.Path, snap, paths); {
				case errors.Is(err, auth.ErrPermissionDenied):
					seesAll = false
				case err != nil:
					return nil, 0, err
				}
			}
		}
		puts := map[string]string{}
		ancestors := map[string]bool{}
		for i, u := range ups {
			k := s.Key(ns, u.Path)
			tree.Flatten(k, resolved[i], puts)
			for j := range u.Path { // ancestors: a leaf there would shadow the new children
				ancestors[s.Key(ns, u.Path[:j])] = true
			}
		}
		var ops, dels []clientv3.Op
		worst := len(puts) + len(ancestors) // the most operations any hidden data could need
		for i, u := range ups {
			k := s.Key(ns, u.Path)
			cmps = append(cmps,
				clientv3.Compare(clientv3.ModRevision(k), "<", snap.Rev+1),
				clientv3.Compare(clientv3.ModRevision(k+"/"), "<", snap.Rev+1).WithPrefix())
			switch {
			case cond != nil: // the value was compared whole: any change to it, deletes included, fails the Txn
				for old, mr := range snap.keys[i] {
					cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(old), "=", mr))
				}
			case consumed[i]: // the leaves the increments added to must still be there, unchanged
				for _, inc := range increments(k, u.Val, nil) {
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
				ErrTooLarge, len(puts), len(cmps), worst, maxTxnOps)
		}
		if len(ops) > maxTxnOps || len(cmps) > maxTxnOps {
			return nil, 0, fmt.Errorf("%w: it sets or deletes %d keys and ranges and compares %d (at most %d each per write: one kv key per leaf, one Txn per write)",
				ErrTooLarge, len(ops), len(cmps), maxTxnOps)
		}
		resp, err := s.kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, 0, kvRefused(err)
		}
		if resp.Succeeded {
			return resolved, changedRev(resp, len(puts)), nil
		}
		if attempt >= maxRetries {
			return nil, 0, ErrBusy
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
	case tree.ServerValue:
		if x.Increment() {
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
// request over its byte limit) to ErrTooLarge, naming the limit; other errors pass unchanged.
// The client returns etcd's errors as rpctypes.EtcdError (matched by errors.Is) when it knows
// their text, and as a gRPC status otherwise; both forms are checked, so a kv that words the
// refusal differently still maps by its code.
func kvRefused(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrGRPCTooManyOps):
		return fmt.Errorf("%w: the kv store refused it: %v (at most %d operations per Txn: one per key set or deleted, one per compare, 2 ranges per path read)",
			ErrTooLarge, err, maxTxnOps)
	case errors.Is(err, rpctypes.ErrRequestTooLarge), errors.Is(err, rpctypes.ErrGRPCRequestTooLarge),
		status.Code(err) == codes.ResourceExhausted:
		return fmt.Errorf("%w: the kv store refused it: %v", ErrTooLarge, err)
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
