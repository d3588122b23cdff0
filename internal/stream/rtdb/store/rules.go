package store

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rules"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// ruleStore finds the rules in force for a database. A database's rules set at runtime
// (PUT /.settings/rules.json) live in kv at settingsKey(ns), so every server on the same kv
// enforces the same rules; a database without them uses the --rules file; with neither,
// everything is allowed (the emulator's default).
//
// Consistency: Store.Read fetches the mod revision of the rules key in the same Txn as the data
// (a keys-only Get: no bytes of the rules), so a request is judged by the rules in force at the
// revision of the data it read; the parsed rules are cached by that mod revision, so a change
// costs one read and one parse per server, and an unchanged key costs nothing more.
type ruleStore struct {
	kv     *clientv3.Client
	prefix string
	file   *rules.Ruleset // --rules, nil for none
	now    func() time.Time
	log    *slog.Logger

	mu    sync.Mutex
	cache map[string]cachedRules // by namespace; guarded by mu
}

type cachedRules struct {
	modRev int64
	rs     *rules.Ruleset
}

// settingsKey is where ns's rules live. Data keys are <prefix>/<ns>[/...] and a namespace cannot
// contain '.', so no data key starts with <prefix>/.settings/.
func (r *ruleStore) settingsKey(ns string) string { return RulesKeyPrefix(r.prefix) + ns }

func newRuleStore(kv *clientv3.Client, cfg Config) (*ruleStore, error) {
	r := &ruleStore{kv: kv, prefix: cfg.Prefix, now: cfg.Now, log: cfg.Logger, cache: map[string]cachedRules{}}
	if cfg.RulesFile != "" {
		b, err := os.ReadFile(cfg.RulesFile)
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		if r.file, err = rules.Parse(b); err != nil {
			return nil, fmt.Errorf("rules %s: %w", cfg.RulesFile, err)
		}
	}
	return r, nil
}

// denyAll is used for stored rules that no longer parse (they were checked when stored, so only
// a hand-edited kv key gets here): failing closed.
var denyAll, _ = rules.Parse([]byte(`{"rules": {}}`))

// at returns ns's rules given the mod revision of its settings key (0: absent) as read at rev;
// nil means no rules (everything allowed).
func (r *ruleStore) at(ctx context.Context, ns string, modRev, rev int64) (*rules.Ruleset, error) {
	if modRev == 0 {
		return r.file, nil
	}
	r.mu.Lock()
	c, ok := r.cache[ns]
	r.mu.Unlock()
	if ok && c.modRev == modRev {
		return c.rs, nil
	}
	resp, err := r.kv.Get(ctx, r.settingsKey(ns), clientv3.WithRev(rev))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 { // deleted since: the revision read says otherwise, so read again later
		return r.file, nil
	}
	rs, err := rules.Parse(resp.Kvs[0].Value)
	if err != nil {
		r.log.Error("stored rules do not parse: denying every request to the database", "ns", ns, "err", err)
		rs = denyAll
	}
	r.mu.Lock()
	if cur, ok := r.cache[ns]; !ok || cur.modRev < resp.Kvs[0].ModRevision {
		r.cache[ns] = cachedRules{resp.Kvs[0].ModRevision, rs}
	}
	r.mu.Unlock()
	return rs, nil
}

// kvData is the database as rules read it: the subtrees a request already read (at snap.Rev)
// and, for anything else an expression asks for, reads at the same revision. With guard set,
// each such read also adds to cmps the compares that fail the write's Txn if the keys read
// changed after snap.Rev, so a write commits only if the rules' view of root is still current.
type kvData struct {
	ctx   context.Context
	st    *Store
	ns    string
	snap  *Snapshot
	paths [][]string
	guard bool
	cmps  []clientv3.Cmp
}

func (d *kvData) Get(path []string) (any, error) {
	for i, p := range d.paths {
		if hasPathPrefix(path, p) {
			return toRulesValue(tree.At(d.snap.Trees[i], path[len(p):])), nil
		}
	}
	k := d.st.Key(d.ns, path)
	one, err := d.st.kv.Get(d.ctx, k, clientv3.WithRev(d.snap.Rev))
	if err != nil {
		return nil, err
	}
	below, err := d.st.kv.Get(d.ctx, k+"/", clientv3.WithPrefix(), clientv3.WithRev(d.snap.Rev))
	if err != nil {
		return nil, err
	}
	var t any
	for _, kv := range append(one.Kvs, below.Kvs...) {
		KVBytesRead.Add(int64(len(kv.Value)))
		var rel []string
		if key := string(kv.Key); key != k {
			rel = strings.Split(key[len(k)+1:], "/")
		}
		tree.Insert(&t, rel, tree.Leaf(kv.Value))
	}
	if d.guard {
		d.cmps = append(d.cmps,
			clientv3.Compare(clientv3.ModRevision(k), "<", d.snap.Rev+1),
			clientv3.Compare(clientv3.ModRevision(k+"/"), "<", d.snap.Rev+1).WithPrefix())
	}
	return toRulesValue(t), nil
}

func hasPathPrefix(p, prefix []string) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

// toRulesValue converts a tree to the values rules see: nil, bool, float64, string, map.
func toRulesValue(t any) any {
	switch x := t.(type) {
	case tree.Leaf:
		var v any
		if json.Unmarshal([]byte(x), &v) != nil {
			return nil
		}
		return v
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = toRulesValue(e)
		}
		return m
	}
	return nil
}

// checkRead is called by Store.Get with what it read: nil when auth (from ctx) may read path.
func (r *ruleStore) checkRead(ctx context.Context, st *Store, ns string, path []string, snap *Snapshot) error {
	return r.checkReadPaths(ctx, st, ns, path, snap, [][]string{path})
}

// checkReadPaths is checkRead where snap holds the trees of paths (none: everything the rules
// ask for is read at snap.Rev).
func (r *ruleStore) checkReadPaths(ctx context.Context, st *Store, ns string, path []string, snap *Snapshot, paths [][]string) error {
	a := auth.AuthFrom(ctx)
	if a != nil && a.Admin {
		return nil
	}
	rs, err := r.at(ctx, ns, snap.rulesRev, snap.Rev)
	if err != nil || rs == nil {
		return err
	}
	d := &kvData{ctx: ctx, st: st, ns: ns, snap: snap, paths: paths}
	ok, err := rs.CanRead(a.ForRules(), path, d, r.now())
	if err != nil {
		return err
	}
	if !ok {
		return auth.ErrPermissionDenied
	}
	return nil
}

// checkWrite is called by Store.Write on each attempt, with the snapshot it read and its
// updates with server values resolved (so newData sees the timestamp the write will store). It
// returns the compares the Txn must add (the keys the rules read outside the written subtrees).
func (r *ruleStore) checkWrite(ctx context.Context, st *Store, ns string, snap *Snapshot, ups []Update, resolved []any) ([]clientv3.Cmp, error) {
	a := auth.AuthFrom(ctx)
	if a != nil && a.Admin {
		return nil, nil
	}
	rs, err := r.at(ctx, ns, snap.rulesRev, snap.Rev)
	if err != nil || rs == nil {
		return nil, err
	}
	d := &kvData{ctx: ctx, st: st, ns: ns, snap: snap, guard: true}
	rups := make([]rules.Update, len(ups))
	for i, u := range ups {
		if len(snap.Trees) > 0 { // else (a snapshot with no trees) everything is read at snap.Rev
			d.paths = append(d.paths, u.Path)
		}
		rups[i] = rules.Update{Path: u.Path, Value: toRulesValue(resolved[i])}
	}
	ok, err := rs.CanWrite(a.ForRules(), rups, d, r.now())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, auth.ErrPermissionDenied
	}
	// The rules key itself: rules replaced meanwhile must be applied to this write.
	d.cmps = append(d.cmps, clientv3.Compare(clientv3.ModRevision(r.settingsKey(ns)), "<", snap.Rev+1))
	return d.cmps, nil
}

// ReadAllowed checks the caller in ctx against the rules for a read of path that Store.Read
// returned as snap (its first path): what a listener that reads through Store.Read directly
// (to know the revision to follow from) calls before sending anything.
func (s *Store) ReadAllowed(ctx context.Context, ns string, path []string, snap *Snapshot) error {
	if s.rules == nil {
		return nil
	}
	return s.rules.checkRead(ctx, s, ns, path, snap)
}
