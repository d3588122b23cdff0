package mvcc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// stepClock is a physical clock that the test moves: stores reading it get stamps in the order
// the test chose, whatever the machine's clock does.
func stepClock() (func() time.Time, func(time.Duration)) {
	var ns atomic.Int64
	ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return func() time.Time { return time.Unix(0, ns.Load()) }, func(d time.Duration) { ns.Add(int64(d)) }
}

// sendNew applies to dst every change of src's own that dst lacks, as replication would.
func sendNew(t *testing.T, src, dst *Store) {
	t.Helper()
	have := dst.VersionVector()[src.MemberID()]
	if _, err := src.ReadLog(1, 0, func(c *Change) bool {
		if c.ID.Origin == src.MemberID() && c.ID.Seq > have {
			if _, err := dst.ApplyRemote(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
}

// TestConflictRecordedForConcurrentLoser: two members write one key while cut off from each
// other, then exchange their changes. Both keep the later write; the member that made it records
// the earlier one (its value, stamps and origin), once, even when the change is sent again; the
// member whose write lost records nothing (the winner arrived after its own write, in order).
// Writes that saw each other (a causal overwrite) and a deletion losing to a deletion record
// nothing; a deletion losing to a put is recorded as a lost deletion.
func TestConflictRecordedForConcurrentLoser(t *testing.T) {
	now, step := stepClock()
	var mu sync.Mutex
	var hooked []Conflict
	edge := openTest(t, func(c *Config) { c.Replicated = true; c.Now = now })
	cloud := openTest(t, func(c *Config) {
		c.Replicated = true
		c.Now = now
		c.OnConflict = func(cf Conflict) { mu.Lock(); hooked = append(hooked, cf); mu.Unlock() }
	})

	// Concurrent: edge first, cloud later, neither having seen the other's.
	put(t, edge, "k", "edge")
	step(time.Millisecond)
	put(t, cloud, "k", "cloud")
	// Concurrent deletion losing to a put, and two deletions of one key (nothing lost).
	put(t, edge, "d", "x")
	put(t, edge, "dd", "x")
	sendNew(t, edge, cloud)
	sendNew(t, cloud, edge)
	if len(cloud.Conflicts()) != 1 || len(edge.Conflicts()) != 0 {
		t.Fatalf("after the first exchange: cloud %v, edge %v; want one conflict on cloud", cloud.Conflicts(), edge.Conflicts())
	}
	del := func(s *Store, k string) {
		if _, err := s.DeleteRange(context.Background(), &pb.DeleteRangeRequest{Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	del(edge, "d")
	del(edge, "dd")
	step(time.Millisecond)
	put(t, cloud, "d", "cloud-d")
	del(cloud, "dd")
	// A causal overwrite: edge writes c, cloud receives it and then overwrites it.
	put(t, edge, "c", "1")
	sendNew(t, edge, cloud)
	put(t, cloud, "c", "2")
	sendNew(t, cloud, edge)
	sendNew(t, edge, cloud)

	for _, s := range []*Store{edge, cloud} {
		if got := state(t, s); got["k"] != "cloud" || got["d"] != "cloud-d" || got["c"] != "2" || len(got) != 3 {
			t.Fatalf("state %v, want k=cloud d=cloud-d c=2", got)
		}
	}
	cs := cloud.Conflicts()
	if len(cs) != 2 || len(edge.Conflicts()) != 0 {
		t.Fatalf("cloud recorded %+v, edge %+v; want two on cloud (k's value, d's deletion), none on edge", cs, edge.Conflicts())
	}
	k, d := cs[0], cs[1]
	if string(k.Key) != "k" || string(k.LostValue) != "edge" || k.LostDeleted || k.KeptDeleted ||
		k.Lost.Origin != edge.MemberID() || k.Kept.Origin != cloud.MemberID() || !k.Lost.Less(k.Kept) ||
		k.Change.Origin != edge.MemberID() || k.Change.Seq != 1 || k.Revision == 0 {
		t.Errorf("k's conflict = %+v", k)
	}
	if string(d.Key) != "d" || !d.LostDeleted || d.LostValue != nil || d.KeptDeleted || d.Lost.Origin != edge.MemberID() {
		t.Errorf("d's conflict = %+v", d)
	}
	if cloud.ConflictsTotal() != 2 {
		t.Errorf("ConflictsTotal = %d, want 2", cloud.ConflictsTotal())
	}
	mu.Lock()
	if fmt.Sprint(hooked) != fmt.Sprint(cs) {
		t.Errorf("OnConflict saw %+v, the log holds %+v", hooked, cs)
	}
	mu.Unlock()
}

// TestConflictLogBounded: the log keeps the latest ConflictLogSize conflicts, oldest first, and
// the total counts them all.
func TestConflictLogBounded(t *testing.T) {
	now, step := stepClock()
	a := openTest(t, func(c *Config) { c.Replicated = true; c.Now = now })
	b := openTest(t, func(c *Config) { c.Replicated = true; c.Now = now; c.ConflictLogSize = 3 })
	for i := 0; i < 5; i++ {
		put(t, a, fmt.Sprintf("k%d", i), "a")
	}
	step(time.Millisecond)
	for i := 0; i < 5; i++ {
		put(t, b, fmt.Sprintf("k%d", i), "b")
	}
	sendNew(t, a, b)
	cs := b.Conflicts()
	if len(cs) != 3 || b.ConflictsTotal() != 5 {
		t.Fatalf("%d conflicts held, %d total; want 3 and 5", len(cs), b.ConflictsTotal())
	}
	for i, c := range cs {
		if want := fmt.Sprintf("k%d", i+2); string(c.Key) != want {
			t.Errorf("conflict %d is %s, want %s (oldest first, the first two dropped)", i, c.Key, want)
		}
	}
	if err := (&Config{Dir: "x", CompactionBatch: 1, ConflictLogSize: -1}).Validate(); err == nil {
		t.Error("ConflictLogSize -1 accepted")
	}
}
