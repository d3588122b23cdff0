package store

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// ReadAllowedLazy checks a read of path by the caller in ctx without reading the subtree first:
// one keys-only read of the rules key gives the revision, and the rules read at that revision
// only what their expressions ask for (a listener then reads the value itself).
func (s *Store) ReadAllowedLazy(ctx context.Context, ns string, path []string) error {
	_, err := s.readAllowedRev(ctx, ns, path)
	return err
}

// readAllowedRev is readAllowedLazy that also returns the revision it judged at (0 when it
// judged nothing: no rules, or an admin).
func (s *Store) readAllowedRev(ctx context.Context, ns string, path []string) (int64, error) {
	if s.rules == nil {
		return 0, nil
	}
	if a := auth.AuthFrom(ctx); a != nil && a.Admin {
		return 0, nil
	}
	snap, err := s.rulesSnapshot(ctx, ns)
	if err != nil {
		return 0, err
	}
	return snap.Rev, s.rules.checkReadPaths(ctx, s, ns, path, snap, nil)
}

// rulesSnapshot is a snapshot with no trees: the current revision and the mod revision of ns's
// rules key there (read keys-only). Rules judged on it read whatever they need at its revision.
func (s *Store) rulesSnapshot(ctx context.Context, ns string) (*Snapshot, error) {
	resp, err := s.kv.Get(ctx, s.rules.settingsKey(ns), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Rev: resp.Header.Revision}
	if len(resp.Kvs) > 0 {
		snap.rulesRev = resp.Kvs[0].ModRevision
	}
	return snap, nil
}
