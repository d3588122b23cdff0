package mvcc

import (
	"bytes"
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

// TestConflictsExactBetweenTwoMembers: two members write at random (skewed clocks), exchange
// changes at random and compact; afterwards they hold last-writer-wins over every change, and
// their conflict logs are exact: every record is a concurrent write (its winner's author had not
// seen it) with the value it lost, and every put that lost to a concurrent write of the other
// member is recorded on that member.
func TestConflictsExactBetweenTwoMembers(t *testing.T) {
	var total, pairs int
	defer func() {
		// Not vacuous: the runs made concurrent writes, and the members recorded losers.
		if !t.Failed() && (total == 0 || pairs == 0) {
			t.Errorf("%d conflicts recorded, %d concurrent put pairs checked over all seeds", total, pairs)
		}
		t.Logf("%d conflicts recorded, %d concurrent put pairs checked", total, pairs)
	}()
	for seed := 1; seed <= simSeeds(20, 5); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sim := newReplicaSim(t, 2, uint64(seed)+1000)
			seen := map[ChangeID]VersionVector{} // what each change's author held when it wrote
			for step := 0; step < 150; step++ {
				switch r := sim.rng.IntN(20); {
				case r < 10:
					i := sim.rng.IntN(2)
					vv, n := sim.stores[i].VersionVector(), len(sim.made)
					sim.write(i)
					if len(sim.made) > n {
						seen[sim.made[len(sim.made)-1].ID] = vv
					}
				case r < 18:
					from := sim.rng.IntN(2)
					sim.deliver(from, 1-from, 1+sim.rng.IntN(4))
				default:
					sim.compact(sim.rng.IntN(2))
				}
			}
			sim.heal()
			sim.checkLWW()

			byStamp := map[Stamp]*Change{}
			for i := range sim.made {
				byStamp[stampOf(&sim.made[i])] = &sim.made[i]
			}
			recorded := map[string]bool{} // member/origin/seq/key
			for m, s := range sim.stores {
				for _, c := range s.Conflicts() {
					total++
					recorded[fmt.Sprintf("%d/%v/%s", m, c.Change, c.Key)] = true
					kept := byStamp[c.Kept]
					if kept == nil || seen[kept.ID].Has(c.Change) {
						t.Errorf("member %d recorded %+v: the kept write %v had seen it (or is unknown)", m, c, kept)
					}
					lost := byStamp[c.Lost]
					var op *Op
					for i := range lost.Ops {
						if bytes.Equal(lost.Ops[i].Key, c.Key) {
							op = &lost.Ops[i]
						}
					}
					if op == nil || op.Delete != c.LostDeleted || (!op.Delete && !bytes.Equal(op.Value, c.LostValue)) {
						t.Errorf("member %d recorded %+v; the lost change's op is %+v", m, c, op)
					}
				}
			}
			for _, x := range sim.made {
				for _, y := range sim.made {
					if x.ID.Origin == y.ID.Origin || !stampOf(&x).Less(stampOf(&y)) || seen[y.ID].Has(x.ID) {
						continue // same member, or x is not the older of a concurrent pair
					}
					m := 0
					if sim.stores[1].MemberID() == y.ID.Origin {
						m = 1
					}
					for _, xo := range x.Ops {
						for _, yo := range y.Ops {
							if bytes.Equal(xo.Key, yo.Key) && !xo.Delete {
								pairs++
							}
							if bytes.Equal(xo.Key, yo.Key) && !xo.Delete && !recorded[fmt.Sprintf("%d/%v/%s", m, x.ID, xo.Key)] {
								t.Errorf("%v's put of %s lost to %v's concurrent write, but member %d did not record it", x.ID, xo.Key, y.ID, m)
							}
						}
					}
				}
			}
		})
	}
}
