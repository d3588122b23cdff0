package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rules"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// maxTxnOps is etcd's default --max-txn-ops, which continuum kv enforces too.
const maxTxnOps = 128

// maxRetries bounds how often a write whose guard failed (a concurrent write under its path) is
// recomputed before the client gets a 503.
const maxRetries = 200

// ErrTooLarge and ErrBusy become 400 and 503 (WebSocket: too_big and unavailable).
var (
	ErrTooLarge = errors.New("write too large")
	ErrBusy     = errors.New("too much contention: the write was retried and did not commit; try again")
)

// Store is the JSON tree of every namespace under one kv prefix.
type Store struct {
	kv     *clientv3.Client
	prefix string
	now    func() time.Time
	rules  *ruleStore // checks reads and writes against the security rules (rules.go); nil: none
}

// Config is what a Store needs beside its kv client.
type Config struct {
	Prefix    string // every database lives under it ("/rtdb")
	Now       func() time.Time
	Logger    *slog.Logger
	RulesFile string // a database.rules.json for databases without rules of their own ("": none)
}

// New is the store under cfg.Prefix on kv, judging every read and write by the security rules
// (the rules file, or a database's own stored at SettingsKey).
func New(kv *clientv3.Client, cfg Config) (*Store, error) {
	rs, err := newRuleStore(kv, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{kv: kv, prefix: cfg.Prefix, now: cfg.Now, rules: rs}, nil
}

// WithoutRules is the store under prefix that applies no rules: what the listener hub reads
// with, for listeners judged before they subscribed.
func WithoutRules(kv *clientv3.Client, prefix string) *Store {
	return &Store{kv: kv, prefix: prefix, now: time.Now}
}

// SettingsKey is the kv key of ns's rules (PUT /.settings/rules.json).
func (s *Store) SettingsKey(ns string) string { return RulesKeyPrefix(s.prefix) + ns }

// RulesFile is the rules databases without their own follow (nil: none, everything allowed).
func (s *Store) RulesFile() *rules.Ruleset {
	if s.rules == nil {
		return nil
	}
	return s.rules.file
}

// Key is the kv key of the node at path in ns.
func (s *Store) Key(ns string, path []string) string {
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

// Snapshot is what a read saw: per written path, its tree and the keys (with mod revisions).
type Snapshot struct {
	Rev   int64
	Trees []any
	keys  []map[string]int64
	// rulesRev is the mod revision of the database's rules key at rev (0: none stored).
	rulesRev int64
}

// KVBytesRead counts the bytes of values the database read from kv (data and what rules read):
// what tests use to check that a denied request reads nothing it does not need.
var KVBytesRead atomic.Int64

// Read reads the subtrees at paths in one Txn (one revision).
func (s *Store) Read(ctx context.Context, ns string, paths [][]string) (*Snapshot, error) {
	return s.ReadAt(ctx, ns, paths, 0)
}

// ReadAt is read at revision rev (0: the latest).
func (s *Store) ReadAt(ctx context.Context, ns string, paths [][]string, rev int64) (*Snapshot, error) {
	ops := make([]clientv3.Op, 0, 2*len(paths))
	for _, p := range paths {
		k := s.Key(ns, p)
		ops = append(ops, clientv3.OpGet(k, clientv3.WithRev(rev)), clientv3.OpGet(k+"/", clientv3.WithPrefix(), clientv3.WithRev(rev)))
	}
	if s.rules != nil { // the rules in force at this revision (keys only: just the mod revision)
		ops = append(ops, clientv3.OpGet(s.rules.settingsKey(ns), clientv3.WithKeysOnly(), clientv3.WithRev(rev)))
	}
	if len(ops) > maxTxnOps {
		return nil, fmt.Errorf("%w: it writes %d paths, each read with 2 kv ranges in one Txn of at most %d operations: at most %d paths per write",
			ErrTooLarge, len(paths), maxTxnOps, (maxTxnOps-1)/2)
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, kvRefused(err)
	}
	snap := &Snapshot{Rev: resp.Header.Revision}
	if rev > 0 {
		snap.Rev = rev
	}
	if s.rules != nil {
		if kvs := resp.Responses[len(resp.Responses)-1].GetResponseRange().Kvs; len(kvs) > 0 {
			snap.rulesRev = kvs[0].ModRevision
		}
	}
	for i, p := range paths {
		base := s.Key(ns, p)
		var t any
		keys := map[string]int64{}
		for _, r := range resp.Responses[2*i : 2*i+2] {
			for _, kv := range r.GetResponseRange().Kvs {
				k := string(kv.Key)
				KVBytesRead.Add(int64(len(kv.Value)))
				keys[k] = kv.ModRevision
				var rel []string
				if k != base {
					rel = strings.Split(k[len(base)+1:], "/")
				}
				tree.Insert(&t, rel, tree.Leaf(kv.Value))
			}
		}
		snap.Trees = append(snap.Trees, t)
		snap.keys = append(snap.keys, keys)
	}
	return snap, nil
}

// Get returns the tree at path. The rules judge the read first, reading only what their
// expressions ask for (nothing for a rule on auth alone), and the subtree is then read at the
// revision they judged: a denied read never reads the data it denies, so neither its latency
// nor its cost depends on that data (GET /.json by anyone is one rules evaluation, not a read of
// the whole database).
func (s *Store) Get(ctx context.Context, ns string, path []string) (any, error) {
	rev, err := s.readAllowedRev(ctx, ns, path)
	if err != nil {
		return nil, err
	}
	snap, err := s.ReadAt(ctx, ns, [][]string{path}, rev)
	if errors.Is(err, rpctypes.ErrCompacted) { // the judged revision is gone: read now, judge again
		if snap, err = s.Read(ctx, ns, [][]string{path}); err == nil && s.rules != nil {
			err = s.rules.checkRead(ctx, s, ns, path, snap)
		}
	}
	if err != nil {
		return nil, err
	}
	return snap.Trees[0], nil
}

// writeAllowedLazy judges ups by the rules before anything under their paths is read, reading
// only what the expressions ask for: a write the rules deny whatever the data is denied without
// reading (or retrying on) the subtree it names. Writes with an increment are judged only with
// the data (newData depends on it); an allowed write is judged again on what it read.
func (s *Store) writeAllowedLazy(ctx context.Context, ns string, ups []Update) error {
	if s.rules == nil {
		return nil
	}
	if a := auth.AuthFrom(ctx); a != nil && a.Admin {
		return nil
	}
	resolved := make([]any, len(ups))
	nowMs := s.now().UnixMilli()
	for i, u := range ups {
		if len(increments("", u.Val, nil)) > 0 {
			return nil
		}
		resolved[i], _ = tree.Resolve(u.Val, nil, nowMs)
	}
	snap, err := s.rulesSnapshot(ctx, ns)
	if err != nil {
		return err
	}
	_, err = s.rules.checkWrite(ctx, s, ns, snap, ups, resolved)
	return err
}

// Shallow returns the node at path with each child truncated to true (a primitive as itself), as
// Firebase's shallow=true does. It reads the subtree's keys without their values, so listing the
// children of a large node costs the keys, not the data under them.
func (s *Store) Shallow(ctx context.Context, ns string, path []string) (any, error) {
	k := s.Key(ns, path)
	ops := []clientv3.Op{clientv3.OpGet(k), clientv3.OpGet(k+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())}
	if s.rules != nil {
		ops = append(ops, clientv3.OpGet(s.rules.settingsKey(ns), clientv3.WithKeysOnly()))
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, kvRefused(err)
	}
	if s.rules != nil {
		snap := &Snapshot{Rev: resp.Header.Revision}
		if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
			snap.rulesRev = kvs[0].ModRevision
		}
		// No trees in snap: whatever the rules read is read at snap.Rev.
		if err := s.rules.checkReadPaths(ctx, s, ns, path, snap, nil); err != nil {
			return nil, err
		}
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		return tree.Leaf(kvs[0].Value), nil
	}
	var t any
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		child, _, _ := strings.Cut(string(kv.Key[len(k)+1:]), "/")
		tree.Insert(&t, []string{child}, tree.Leaf("true"))
	}
	return t, nil
}

// Update is one path's new value (a normalized tree, server values unresolved).
type Update struct {
	Path []string
	Val  any
}

// Precondition is a conditional write's test of the value it replaces (one update only): a
// REST if-match (the value's ETag) or a WebSocket transaction's put (the SDK's hash of it).
// Its outcome tells the caller whether the value equals a guess, so a conditional write needs
// the rules' read permission at its path as well as the write permission, and both are
// checked before the test runs: a caller denied either gets a denial whatever the value is.
type Precondition func(cur any) bool

// ETagIs is REST's if-match: the value's ETag is tag.
func ETagIs(tag string) Precondition { return func(cur any) bool { return tree.ETag(cur) == tag } }

// PreconditionFailed is a failed Precondition: the current value, read at rev.
type PreconditionFailed struct {
	Current any
	Rev     int64
}

func (PreconditionFailed) Error() string { return "precondition failed" }
