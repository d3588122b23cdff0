package replication

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

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

func testDeletionsCollected(t *testing.T, mesh map[string][]string) {
	ms := startCluster(t, mesh)
	a, c := ms["a"], ms["c"]
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		putKV(t, a.store, fmt.Sprintf("k%02d", i), "v")
	}
	waitConverged(t, ms, 10*time.Second)
	for i := 0; i < 10; i++ { // half deleted on a, half on c
		s := a.store
		if i%2 == 1 {
			s = c.store
		}
		if _, err := s.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte(fmt.Sprintf("k%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, ms, 10*time.Second)
	deleted := max(a.store.Clock().Last().Wall, c.store.Clock().Last().Wall) // after every deletion's stamp
	for name, m := range ms {
		// Before the bound passes the deletions, compaction keeps their stamps (20 keys).
		if m.store.CollectBefore() < deleted {
			if err := m.store.Compact(ctx, m.store.Rev(), true); err != nil {
				t.Fatal(err)
			}
			if n := m.store.KeyCount(); n != 20 && m.store.CollectBefore() < deleted {
				t.Fatalf("%s: %d keys in the index before the collect bound passed the deletions, want 20", name, n)
			}
		}
	}
	for name, m := range ms {
		testenv.Eventually(t, 30*time.Second, name+"'s collect bound to pass the deletions",
			func() bool { return m.store.CollectBefore() > deleted })
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
