package mvcc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// replicaSim drives several replicated stores with random local writes and random, partial,
// repeated deliveries between them, then checks the outcome against last-writer-wins computed
// from every change any member made.
type replicaSim struct {
	t      *testing.T
	rng    *rand.Rand
	dirs   []string
	stores []*Store
	clocks []*atomic.Int64 // physical clocks, skewed per member
	made   []Change        // every change a member made, as made (the oracle's input)
	// Collecting deletions as package replication does (frontier.go), per receiving member:
	// the latest frontier each other member reported with a delivery, the latest one reached,
	// and each member's collect bound as last reported; own is each member's own bound.
	reported  [][][]simFrontier // the reports not reached yet, oldest first
	reached   [][]simFrontier
	collectOf [][]int64
	own       []int64
	keys      []string // the key space (nil: simKeys)
}

type simFrontier struct {
	seq  uint64
	wall int64
}

func newReplicaSim(t *testing.T, n int, seed uint64) *replicaSim {
	sim := &replicaSim{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for i := 0; i < n; i++ {
		clk := &atomic.Int64{}
		// Up to ±50 ms of skew between members, so a later write can carry an older wall time.
		clk.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() + sim.rng.Int64N(100e6) - 50e6)
		sim.clocks = append(sim.clocks, clk)
		sim.dirs = append(sim.dirs, t.TempDir())
		sim.stores = append(sim.stores, nil)
		sim.open(i)
	}
	for range n {
		sim.reported = append(sim.reported, make([][]simFrontier, n))
		sim.reached = append(sim.reached, make([]simFrontier, n))
		sim.collectOf = append(sim.collectOf, make([]int64, n))
	}
	sim.own = make([]int64, n)
	t.Cleanup(func() {
		for _, s := range sim.stores {
			s.Close()
		}
	})
	return sim
}

func (sim *replicaSim) open(i int) {
	cfg := DefaultConfig(sim.dirs[i])
	cfg.Replicated = true
	cfg.CompactionBatch = 3
	clk := sim.clocks[i]
	// Each reading moves the clock on by up to 1 ms. The store reads it from its own goroutines
	// (the writer, lease expiry), so the steps come from a source of the store's own, seeded
	// from the simulation's.
	var mu sync.Mutex
	steps := rand.New(rand.NewPCG(sim.rng.Uint64(), sim.rng.Uint64()))
	cfg.Now = func() time.Time {
		mu.Lock()
		d := steps.Int64N(1e6)
		mu.Unlock()
		return time.Unix(0, clk.Add(d))
	}
	s, err := Open(cfg)
	if err != nil {
		sim.t.Fatal(err)
	}
	sim.stores[i] = s
}

var simKeys = []string{"a", "b", "c", "d", "e"}

func (sim *replicaSim) key() []byte {
	keys := simKeys
	if sim.keys != nil {
		keys = sim.keys
	}
	return []byte(keys[sim.rng.IntN(len(keys))])
}

// write makes one random local write on member i.
func (sim *replicaSim) write(i int) {
	ctx := context.Background()
	s := sim.stores[i]
	val := []byte(fmt.Sprintf("m%d-%d", i, sim.rng.IntN(1e6)))
	var err error
	switch sim.rng.IntN(4) {
	case 0, 1:
		_, err = s.Put(ctx, &pb.PutRequest{Key: sim.key(), Value: val})
	case 2:
		k := sim.key()
		end := []byte(nil)
		if sim.rng.IntN(2) == 0 {
			end = []byte{k[0] + 2} // a range of two keys
		}
		_, err = s.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: k, RangeEnd: end})
	case 3:
		k1, k2 := sim.key(), sim.key()
		if bytes.Equal(k1, k2) {
			k2 = append(k2, '2')
		}
		_, err = s.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: k1, Value: val}}},
			{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: k2}}},
		}})
	}
	if err != nil {
		sim.t.Fatalf("member %d write: %v", i, err)
	}
	sim.record(s)
}

// record keeps the change a member's last write made, if it made one, before compaction can
// take it out of the log.
func (sim *replicaSim) record(s *Store) {
	rev := s.Rev()
	if _, err := s.ReadLog(rev, rev, func(c *Change) bool {
		if c.ID.Origin == s.MemberID() && (len(sim.made) == 0 || sim.made[len(sim.made)-1].ID != c.ID) {
			sim.made = append(sim.made, *c)
		}
		return true
	}); err != nil {
		sim.t.Fatal(err)
	}
}

// deliver sends member to up to max changes it lacks from member from, as a peer stream would.
func (sim *replicaSim) deliver(from, to, max int) {
	src, dst := sim.stores[from], sim.stores[to]
	start, err := src.LogStart(dst.VersionVector())
	if errors.Is(err, ErrLogTruncated) {
		// What dst lacks has left src's log: a snapshot, then the log after it (as the
		// replication stream does).
		sim.snapshot(src, dst)
		start, err = src.LogStart(dst.VersionVector())
	}
	if err != nil {
		sim.t.Fatalf("log start %d->%d: %v", from, to, err)
	}
	if start == 0 {
		sim.report(from, to) // a heartbeat
		return
	}
	var batch []Change
	if _, err := src.ReadLog(start, 0, func(c *Change) bool {
		batch = append(batch, *c)
		return len(batch) < max
	}); err != nil {
		sim.t.Fatal(err)
	}
	for i := range batch {
		if _, err := dst.ApplyRemote(context.Background(), &batch[i]); err != nil {
			sim.t.Fatalf("apply %v from %d at %d: %v", batch[i].ID, from, to, err)
		}
	}
	sim.report(from, to)
}

// report hands member to what a batch from member from carries: from's frontier and bound;
// to then recomputes its bounds (the replicator does every heartbeat).
func (sim *replicaSim) report(from, to int) {
	defer sim.collect(to)
	seq, wall := sim.stores[from].Frontier()
	sim.reported[to][from] = append(sim.reported[to][from], simFrontier{seq, wall})
	sim.collectOf[to][from] = max(sim.collectOf[to][from], sim.own[from])
}

// replaced resets what the members know of member i for collection: it is a new member (a new
// id, an empty store), as if the old one had been removed and the new one added.
func (sim *replicaSim) replaced(i int) {
	sim.own[i] = 0
	for x := range sim.stores {
		sim.reported[x][i], sim.reached[x][i], sim.collectOf[x][i] = nil, simFrontier{}, 0
		sim.reported[i][x], sim.reached[i][x], sim.collectOf[i][x] = nil, simFrontier{}, 0
	}
}

// collect computes member i's bounds from what it heard, as Replicator.updateCollect does, and
// sets its store's collect bound.
func (sim *replicaSim) collect(i int) {
	held := sim.stores[i].VersionVector()
	own, global := int64(-1), int64(0)
	for y := range sim.stores {
		if y == i {
			continue
		}
		pending := sim.reported[i][y]
		for len(pending) > 0 && held[sim.stores[y].MemberID()] >= pending[0].seq {
			sim.reached[i][y] = pending[0]
			pending = pending[1:]
		}
		sim.reported[i][y] = pending
		if w := sim.reached[i][y].wall; own < 0 || w < own {
			own = w
		}
	}
	sim.own[i] = max(sim.own[i], own)
	global = sim.own[i]
	for y := range sim.stores {
		if y != i {
			global = min(global, sim.collectOf[i][y])
		}
	}
	if global > 0 {
		sim.stores[i].SetCollectBefore(global)
	}
}

// snapshot merges src's state into dst in chunks of three entries.
func (sim *replicaSim) snapshot(src, dst *Store) {
	snapshotsTaken.Add(1)
	ctx := context.Background()
	var chunk []SnapshotEntry
	vv, _, err := src.Snapshot(ctx, func(e SnapshotEntry) error {
		chunk = append(chunk, e)
		if len(chunk) == 3 {
			err := dst.InstallSnapshot(ctx, chunk)
			chunk = nil
			return err
		}
		return nil
	})
	if err == nil {
		err = dst.InstallSnapshot(ctx, chunk)
	}
	if err == nil {
		err = dst.RaiseVersionVector(ctx, vv)
	}
	if err != nil {
		sim.t.Fatalf("snapshot: %v", err)
	}
}

// expected computes the state last-writer-wins gives over every change the members made.
func (sim *replicaSim) expected() map[string]string {
	type win struct {
		st  Stamp
		op  Op
		set bool
	}
	wins := map[string]*win{}
	for i := range sim.made {
		c := &sim.made[i]
		for _, op := range c.Ops {
			w := wins[string(op.Key)]
			if w == nil {
				w = &win{}
				wins[string(op.Key)] = w
			}
			if st := stampOf(c); !w.set || w.st.Less(st) {
				*w = win{st: st, op: op, set: true}
			}
		}
	}
	want := map[string]string{}
	for k, w := range wins {
		if !w.op.Delete {
			want[k] = string(w.op.Value)
		}
	}
	return want
}

func state(t *testing.T, s *Store) map[string]string {
	r, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range r.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	return got
}

func TestReplicasConvergeUnderRandomDelivery(t *testing.T) {
	seeds := simSeeds(40, 8)
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sim := newReplicaSim(t, 3, uint64(seed))
			sim.run(120, simMix{write: 11, deliver: 18, compact: 19, maxDeliver: 4})
			sim.heal()
			sim.checkLWW()
		})
	}
}

// TestDeletionsCollectedWithoutResurrection: members exchange frontiers as package replication
// does (frontier.go) and compact often, over a key space large enough for deleted keys to stay
// deleted for a while, so their stamps are collected while changes are still in flight; no
// deletion is ever overtaken by an older put (the state stays last-writer-wins over every change
// made), and the members converge.
func TestDeletionsCollectedWithoutResurrection(t *testing.T) {
	seeds := simSeeds(12, 3)
	collected := deletionsCollected.Load()
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sim := newReplicaSim(t, 3, uint64(1000+seed))
			sim.keys = keys
			sim.run(600, simMix{write: 9, deliver: 17, compact: 19, maxDeliver: 6})
			sim.heal()
			sim.checkLWW()
		})
	}
	if n := deletionsCollected.Load() - collected; n == 0 {
		t.Fatal("no deleted key's stamp was ever collected: the test exercised nothing")
	} else {
		t.Logf("%d deleted keys' stamps collected", n)
	}
}

func TestApplyRemoteOrderAndDuplicates(t *testing.T) {
	a := openTest(t, func(c *Config) { c.Replicated = true })
	b := openTest(t, func(c *Config) { c.Replicated = true })
	ctx := context.Background()
	put(t, a, "k", "1")
	put(t, a, "k", "2")
	var log []Change
	if _, err := a.ReadLog(1, 0, func(c *Change) bool { log = append(log, *c); return true }); err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 {
		t.Fatalf("%d changes in the log, want 2", len(log))
	}
	if _, err := b.ApplyRemote(ctx, &log[1]); err == nil || !errors.Is(err, ErrGap) {
		t.Fatalf("second change first: %v, want ErrGap", err)
	}
	rev, err := b.ApplyRemote(ctx, &log[0])
	if err != nil || rev != 2 {
		t.Fatalf("first change: rev %d err %v", rev, err)
	}
	if rev, err := b.ApplyRemote(ctx, &log[0]); err != nil || rev != 0 {
		t.Fatalf("duplicate: rev %d err %v, want 0 and no error", rev, err)
	}
	if _, err := b.ApplyRemote(ctx, &log[1]); err != nil {
		t.Fatal(err)
	}
	if got := state(t, b)["k"]; got != "2" {
		t.Fatalf("k = %q after both changes, want 2", got)
	}
	// b's own write now orders after a's (HLC observed a's time), so it wins on a too.
	put(t, b, "k", "3")
	start, err := a.LogStart(b.VersionVector())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadLog(1, 0, func(c *Change) bool {
		if c.ID.Origin == b.MemberID() {
			if _, err := a.ApplyRemote(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if start != 0 {
		t.Fatalf("a's log start for b = %d, want 0 (b has all of a's changes)", start)
	}
	if got := state(t, a)["k"]; got != "3" {
		t.Fatalf("a: k = %q, want b's later write 3", got)
	}
}

// TestKDurableWritesSurviveMemberLoss: a write acknowledged as 2-durable (held by two members)
// survives losing any one member, data directory and all; members that remain (and a fresh
// replacement) converge to last-writer-wins over what survived; reads on a member see its own
// writes at once and revisions never go back.
func TestKDurableWritesSurviveMemberLoss(t *testing.T) {
	seeds := simSeeds(30, 6)
	ctx := context.Background()
	before := snapshotsTaken.Load()
	defer func() {
		if !t.Failed() && snapshotsTaken.Load() == before {
			t.Error("no seed needed a snapshot: the replacement member never met a collected log")
		}
	}()
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sim := newReplicaSim(t, 3, uint64(seed)*7919)
			n := len(sim.stores)
			var acked []ChangeID
			lastRev := make([]int64, n)
			for step := 0; step < 100; step++ {
				switch r := sim.rng.IntN(10); {
				case r < 6:
					i := sim.rng.IntN(n)
					k, v := sim.key(), fmt.Sprintf("w%d-%d", i, step)
					resp, err := sim.stores[i].Put(ctx, &pb.PutRequest{Key: k, Value: []byte(v)})
					if err != nil {
						t.Fatal(err)
					}
					sim.record(sim.stores[i])
					// Read-your-writes and monotonic revisions on the member written to.
					got, err := sim.stores[i].Range(&pb.RangeRequest{Key: k})
					if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != v {
						t.Fatalf("member %d does not read its own write %s=%s: %+v %v", i, k, v, got, err)
					}
					if got.Header.Revision < lastRev[i] {
						t.Fatalf("member %d revision went back from %d to %d", i, lastRev[i], got.Header.Revision)
					}
					lastRev[i] = got.Header.Revision
					if sim.rng.IntN(2) == 0 {
						// 2-durable: acknowledged once another member holds it.
						c, err := sim.stores[i].ChangeAt(resp.Header.Revision)
						if err != nil {
							t.Fatal(err)
						}
						j := (i + 1 + sim.rng.IntN(n-1)) % n
						sim.deliver(i, j, 1<<30)
						if !sim.stores[j].VersionVector().Has(c.ID) {
							t.Fatalf("member %d lacks %v after delivery", j, c.ID)
						}
						acked = append(acked, c.ID)
					}
				case r == 9:
					// Collect what every member holds: a replacement member will need a
					// snapshot for it.
					i := sim.rng.IntN(n)
					sim.stores[i].SetStable(sim.minVV())
					if err := sim.stores[i].Compact(ctx, sim.stores[i].Rev(), true); err != nil && !errors.Is(err, ErrCompacted) {
						t.Fatal(err)
					}
				default:
					from, to := sim.rng.IntN(n), sim.rng.IntN(n)
					if from != to {
						sim.deliver(from, to, 1+sim.rng.IntN(3))
					}
				}
			}
			// Lose one member entirely; a fresh, empty member takes its place.
			lost := sim.rng.IntN(n)
			sim.stores[lost].Close()
			if err := os.RemoveAll(sim.dirs[lost]); err != nil {
				t.Fatal(err)
			}
			sim.dirs[lost] = t.TempDir()
			sim.open(lost)
			sim.replaced(lost)
			for round := 0; round < n; round++ {
				for i := 0; i < n; i++ {
					sim.deliver(i, (i+1)%n, 1<<30)
				}
			}
			for _, id := range acked {
				for i, s := range sim.stores {
					if !s.VersionVector().Has(id) {
						t.Fatalf("2-durable change %v lost: member %d (after losing member %d) lacks it", id, i, lost)
					}
				}
			}
			want := sim.expectedHeld()
			for i, s := range sim.stores {
				if got := state(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("member %d state\n got %v\nwant %v", i, got, want)
				}
			}
		})
	}
}

// expectedHeld is last-writer-wins over the changes made that the members still hold: after a
// member's loss, its changes that had not reached another member are gone, and only those.
func (sim *replicaSim) expectedHeld() map[string]string {
	type win struct {
		st Stamp
		op Op
	}
	vv := sim.stores[0].VersionVector()
	wins := map[string]win{}
	for i := range sim.made {
		c := &sim.made[i]
		if !vv.Has(c.ID) {
			continue
		}
		for _, op := range c.Ops {
			if w, ok := wins[string(op.Key)]; !ok || w.st.Less(stampOf(c)) {
				wins[string(op.Key)] = win{stampOf(c), op}
			}
		}
	}
	want := map[string]string{}
	for k, w := range wins {
		if !w.op.Delete {
			want[k] = string(w.op.Value)
		}
	}
	return want
}

// minVV is what every member holds.
func (sim *replicaSim) minVV() VersionVector {
	out := sim.stores[0].VersionVector()
	for _, s := range sim.stores[1:] {
		vv := s.VersionVector()
		for o, seq := range out {
			if vv[o] < seq {
				out[o] = vv[o]
			}
		}
	}
	return out
}

// snapshotsTaken counts snapshot transfers in the simulations, so a test can check that it
// exercised them; deletionsCollected counts the deleted keys' stamps compaction dropped.
var snapshotsTaken, deletionsCollected atomic.Int64

// RevokeLeasesOf deletes exactly the live keys whose latest version the removed member wrote
// with a lease, and the deletions replicate like any change.
func TestRevokeLeasesOfRemovedMember(t *testing.T) {
	x := openTest(t, func(c *Config) { c.Replicated = true }) // the member to be removed
	a := openTest(t, func(c *Config) { c.Replicated = true })
	b := openTest(t, func(c *Config) { c.Replicated = true })
	ctx := context.Background()
	id, _, err := x.LeaseGrant(ctx, 0, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x/leased-1", "x/leased-2", "x/overwritten"} {
		if _, err := x.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte("x"), Lease: id}); err != nil {
			t.Fatal(err)
		}
	}
	put(t, x, "x/plain", "x")
	ship := func(from, to *Store) {
		t.Helper()
		start, err := from.LogStart(to.VersionVector())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := from.ReadLog(max(start, 1), 0, func(c *Change) bool {
			if !to.VersionVector().Has(c.ID) {
				if _, err := to.ApplyRemote(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	ship(x, a)
	put(t, a, "x/overwritten", "a") // a later write by another member: no longer x's lease
	if _, err := a.RevokeLeasesOf(ctx, a.MemberID()); err == nil {
		t.Fatal("a member revoked its own leases through RevokeLeasesOf")
	}
	n, err := a.RevokeLeasesOf(ctx, x.MemberID())
	if err != nil || n != 2 {
		t.Fatalf("revoked %d keys, err %v; want 2", n, err)
	}
	want := map[string]string{"x/overwritten": "a", "x/plain": "x"}
	if got := state(t, a); !maps.Equal(got, want) {
		t.Fatalf("a after the revoke: %v, want %v", got, want)
	}
	if n, err := a.RevokeLeasesOf(ctx, x.MemberID()); err != nil || n != 0 {
		t.Fatalf("second revoke: %d keys, %v", n, err)
	}
	// b gets x's writes and a's changes in either order and ends in the same state.
	ship(a, b)
	ship(x, b)
	if got := state(t, b); !maps.Equal(got, want) {
		t.Fatalf("b: %v, want %v", got, want)
	}
}

// simMix is a random run's mix of steps out of 20: r < write writes, r < deliver delivers up to
// maxDeliver changes between two members, r < compact compacts a member, the rest restart one.
type simMix struct{ write, deliver, compact, maxDeliver int }

// run takes steps random steps.
func (sim *replicaSim) run(steps int, mix simMix) {
	n := len(sim.stores)
	for step := 0; step < steps; step++ {
		switch r := sim.rng.IntN(20); {
		case r < mix.write:
			sim.write(sim.rng.IntN(n))
		case r < mix.deliver:
			from, to := sim.rng.IntN(n), sim.rng.IntN(n)
			if from != to {
				sim.deliver(from, to, 1+sim.rng.IntN(mix.maxDeliver))
			}
		case r < mix.compact:
			sim.compact(sim.rng.IntN(n))
		default:
			i := sim.rng.IntN(n)
			sim.stores[i].Close()
			sim.open(i)
		}
	}
}

// compact compacts member i at its current revision: superseded versions go; deletions and the
// change log go only as far as the bounds package replication would give (SetStable, collect).
func (sim *replicaSim) compact(i int) {
	sim.stores[i].SetStable(sim.minVV())
	sim.collect(i)
	before := sim.stores[i].ix.keyCount()
	if err := sim.stores[i].Compact(context.Background(), sim.stores[i].Rev(), true); err != nil && err != ErrCompacted {
		sim.t.Fatal(err)
	}
	deletionsCollected.Add(int64(max(before-sim.stores[i].ix.keyCount(), 0)))
}

// heal delivers everything, in a ring, so changes reach every member transitively.
func (sim *replicaSim) heal() {
	n := len(sim.stores)
	for round := 0; round < n; round++ {
		for i := 0; i < n; i++ {
			sim.deliver(i, (i+1)%n, 1<<30)
		}
	}
}

// checkLWW checks that every member holds the same changes, the state last-writer-wins gives
// over every change made, and the same HashKV.
func (sim *replicaSim) checkLWW() {
	t := sim.t
	t.Helper()
	want := sim.expected()
	h0, _, _, err := sim.stores[0].HashKV(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sim.stores {
		if !s.VersionVector().Covers(sim.stores[0].VersionVector()) || !sim.stores[0].VersionVector().Covers(s.VersionVector()) {
			t.Fatalf("member %d version vector %v, member 0 %v", i, s.VersionVector(), sim.stores[0].VersionVector())
		}
		if got := state(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("member %d state\n got %v\nwant %v (last writer wins over all changes)", i, got, want)
		}
		h, _, _, err := s.HashKV(0)
		if err != nil {
			t.Fatal(err)
		}
		if h != h0 {
			t.Fatalf("member %d HashKV %x, member 0 %x", i, h, h0)
		}
	}
}

// simSeeds is how many seeds a simulation runs: def in `make test`, short with -short, and
// $CONTINUUM_SOAK times def for `make soak`.
func simSeeds(def, short int) int {
	if n, err := strconv.Atoi(os.Getenv("CONTINUUM_SOAK")); err == nil && n > 1 {
		return def * n
	}
	if testing.Short() {
		return short
	}
	return def
}
