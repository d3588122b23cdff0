package replication

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/testenv"
)

// Deleted keys' stamps are collected at compaction once every member of a full mesh holds every
// change stamped before them (collect.go), and not before: the members' bounds come from each
// other's frontiers, carried by heartbeats.
func TestDeletionsCollectedOnceEveryMemberHoldsThem(t *testing.T) {
	for name, mesh := range map[string]map[string][]string{
		"full mesh": {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a", "b"}},
		// a and c never talk: their bounds reach each other relayed by b.
		"line": {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}},
	} {
		t.Run(name, func(t *testing.T) { testDeletionsCollected(t, mesh) })
	}
}

// The checks hold whatever the timing: the bounds move on with the heartbeats while the test
// runs (on a loaded machine they may pass every deletion before the first compaction here, or
// none before the last), so each check compares a deletion's own stamp with a bound read at the
// time, never with a clock reading of the test's.
func testDeletionsCollected(t *testing.T, mesh map[string][]string) {
	ms := startCluster(t, mesh)
	a, c := ms["a"], ms["c"]
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		putKV(t, a.store, fmt.Sprintf("k%02d", i), "v")
	}
	waitConverged(t, ms, 10*time.Second)
	var dels []mvcc.Change    // the deletions' change headers: ids and stamps
	for i := 0; i < 10; i++ { // half deleted on a, half on c
		s := a.store
		if i%2 == 1 {
			s = c.store
		}
		resp, err := s.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte(fmt.Sprintf("k%02d", i))})
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.ChangeAt(resp.Header.Revision)
		if err != nil {
			t.Fatal(err)
		}
		dels = append(dels, d)
	}
	// While the deletions spread, a member's bound passes one only once every member holds it.
	// The bound is read before the version vectors: they only grow, so a deletion held when the
	// bound passed it is held when they are read.
	heldBeforeCollected := func() {
		for name, m := range ms {
			bound := m.store.CollectBefore()
			for other, o := range ms {
				vv := o.store.VersionVector()
				for _, d := range dels {
					if d.Time.Wall < bound && !vv.Has(d.ID) {
						t.Fatalf("%s's collect bound %d passed deletion %v stamped %d, which %s does not hold (holds %v)",
							name, bound, d.ID, d.Time.Wall, other, vv)
					}
				}
			}
		}
	}
	testenv.Eventually(t, 10*time.Second, "the deletions to reach every member", func() bool {
		heldBeforeCollected()
		for _, m := range ms {
			vv := m.store.VersionVector()
			for _, d := range dels {
				if !vv.Has(d.ID) {
					return false
				}
			}
		}
		return true
	})
	waitConverged(t, ms, 10*time.Second)
	// kept is how many keys compaction keeps with collect bound cb: the 10 live ones, and the
	// deleted ones whose deletion is not stamped before cb. Every deletion is stamped at or
	// before last.
	last := int64(0)
	kept := func(cb int64) int {
		n := 10
		for _, d := range dels {
			if d.Time.Wall >= cb {
				n++
			}
		}
		return n
	}
	for _, d := range dels {
		last = max(last, d.Time.Wall)
	}
	for name, m := range ms {
		// Compaction keeps the stamps the bound has not passed. The bound may move on during
		// the compaction (forward only), so the count lies between what the bounds read
		// before and after it allow.
		before := m.store.CollectBefore()
		if err := m.store.Compact(ctx, m.store.Rev(), true); err != nil {
			t.Fatal(err)
		}
		after := m.store.CollectBefore()
		if n := m.store.KeyCount(); n < kept(after) || n > kept(before) {
			t.Fatalf("%s: %d keys in the index after compacting with collect bound %d..%d (deletions stamped %d..%d), want %d..%d",
				name, n, before, after, dels[0].Time.Wall, last, kept(after), kept(before))
		}
	}
	for name, m := range ms {
		testenv.Eventually(t, 30*time.Second, name+"'s collect bound to pass the deletions",
			func() bool { return m.store.CollectBefore() > last })
		putKV(t, m.store, "tick-"+name, "x") // a new revision to compact at
	}
	waitConverged(t, ms, 10*time.Second)
	for name, m := range ms {
		if err := m.store.Compact(ctx, m.store.Rev(), true); err != nil {
			t.Fatal(err)
		}
		if n := m.store.KeyCount(); n != 10+3 {
			t.Fatalf("%s: %d keys in the index after collection, want the 10 live ones and 3 ticks", name, n)
		}
	}
	// Writes go on and the members still agree.
	putKV(t, c.store, "k00", "again")
	waitConverged(t, ms, 10*time.Second)
}
