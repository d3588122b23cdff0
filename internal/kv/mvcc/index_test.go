package mvcc

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

func TestIndexVisitAndCompact(t *testing.T) {
	ix := newIndex()
	// a: put@2, put@4, delete@6; b: put@3; c: put@5, delete@7, put@8
	for _, op := range []struct {
		key  string
		rev  int64
		tomb bool
	}{{"a", 2, false}, {"b", 3, false}, {"a", 4, false}, {"c", 5, false}, {"a", 6, true}, {"c", 7, true}, {"c", 8, false}} {
		ix.add([]byte(op.key), entry{rev: revision{op.rev, 0}, tomb: op.tomb}, Stamp{})
	}
	keysAt := func(key, end []byte, rev int64) string {
		var ks []string
		ix.visit(key, end, rev, func(k []byte, e entry) bool {
			ks = append(ks, string(k))
			return true
		})
		return strings.Join(ks, ",")
	}
	tests := []struct {
		name     string
		key, end []byte
		rev      int64
		want     string
	}{
		{"single at 2", []byte("a"), nil, 2, "a"},
		{"single before creation", []byte("b"), nil, 2, ""},
		{"deleted", []byte("a"), nil, 6, ""},
		{"range at 5", []byte("a"), []byte("c"), 5, "a,b"},
		{"from key at 5", []byte("a"), []byte{}, 5, "a,b,c"},
		{"from key at 7", []byte("a"), []byte{}, 7, "b"},
		{"recreated", []byte("a"), []byte{}, 8, "b,c"},
		{"reversed range", []byte("c"), []byte("a"), 8, ""},
	}
	for _, tt := range tests {
		if got := keysAt(tt.key, tt.end, tt.rev); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	keep := map[revision]struct{}{}
	for from := []byte{}; from != nil; {
		from = ix.compactChunk(from, 7, 1, keep, 0)
	}
	// a's versions all end in a tombstone at 6 <= 7: gone. b keeps 3. c keeps only 8 (its
	// tombstone at 7 and the version before it go).
	if _, ok := keep[revision{3, 0}]; !ok || len(keep) != 1 {
		t.Fatalf("keep = %v", keep)
	}
	if ix.keyCount() != 2 || keysAt([]byte("a"), []byte{}, 8) != "b,c" || keysAt([]byte("c"), nil, 7) != "" {
		t.Fatalf("after compaction: %d keys, %q", ix.keyCount(), keysAt([]byte("a"), []byte{}, 8))
	}
}

func TestContentHashCoversEverything(t *testing.T) {
	id, ts := ChangeID{1, 1}, Timestamp{10, 0}
	ops := []Op{{Key: []byte("k"), Value: []byte("v")}}
	base := ContentHash(id, ts, ops)
	variants := map[string][16]byte{
		"origin":  ContentHash(ChangeID{2, 1}, ts, ops),
		"seq":     ContentHash(ChangeID{1, 2}, ts, ops),
		"time":    ContentHash(id, Timestamp{10, 1}, ops),
		"value":   ContentHash(id, ts, []Op{{Key: []byte("k"), Value: []byte("w")}}),
		"lease":   ContentHash(id, ts, []Op{{Key: []byte("k"), Value: []byte("v"), Lease: 1}}),
		"delete":  ContentHash(id, ts, []Op{{Key: []byte("k"), Value: []byte("v"), Delete: true}}),
		"framing": ContentHash(id, ts, []Op{{Key: []byte("kv")}}),
	}
	for name, h := range variants {
		if h == base {
			t.Errorf("changing the %s does not change the hash", name)
		}
	}
	c := Change{ID: id, Time: ts, Revision: 7, Hash: base}
	got, n, err := decodeHeader(encodeHeader(nil, &c, 3))
	if err != nil || n != 3 || got.ID != c.ID || got.Time != c.Time || got.Revision != 7 || got.Hash != base {
		t.Fatalf("header round trip: %+v %d %v", got, n, err)
	}
}

// modelKey is the index's contract kept the simple way, for TestIndexMatchesModel.
type modelKey struct {
	stamp   Stamp
	entries []entry
}

// modelAdd is index.add on the model: a tombstone without a stamp for an unknown key is dropped.
func modelAdd(m map[string]*modelKey, k string, e entry, st Stamp) {
	mk := m[k]
	if mk == nil {
		if e.tomb && st.IsZero() {
			return
		}
		mk = &modelKey{}
		m[k] = mk
	}
	mk.entries = append(mk.entries, e)
	if mk.stamp.Less(st) {
		mk.stamp = st
	}
}

func modelCompact(m map[string]*modelKey, rev int64, keep map[revision]struct{}, retain bool, collectBefore int64) {
	for k, mk := range m {
		i := -1
		for j := len(mk.entries) - 1; j >= 0; j-- {
			if mk.entries[j].rev.main <= rev {
				i = j
				break
			}
		}
		if i < 0 {
			if len(mk.entries) == 0 && retain && mk.stamp.Time.Wall < collectBefore {
				delete(m, k)
			}
			continue
		}
		if mk.entries[i].tomb {
			i++
		} else {
			keep[mk.entries[i].rev] = struct{}{}
		}
		mk.entries = mk.entries[i:]
		if len(mk.entries) == 0 && (!retain || mk.stamp.IsZero() || mk.stamp.Time.Wall < collectBefore) {
			delete(m, k)
		}
	}
}

// TestIndexMatchesModel drives the index and a map-based model with the same random adds,
// deletions without versions and compactions (in chunks), and compares every read. Keys of
// varied lengths, a few longer than a key chunk's quarter, exercise the key arena's chunk
// dropping and the moving of keys out of sparse chunks; compactions exercise version reuse.
func TestIndexMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		retain := seed%2 == 0
		ix := newIndex()
		ix.retainStamps = retain
		m := map[string]*modelKey{}
		keyOf := func() string {
			n := rnd.Intn(300)
			if rnd.Intn(100) == 0 {
				return fmt.Sprintf("big%d-%s", n, strings.Repeat("x", keyChunkSize/4+n))
			}
			return fmt.Sprintf("k%03d-%s", n, strings.Repeat("y", n%97))
		}
		rev := int64(1)
		for step := 0; step < 4000; step++ {
			k := keyOf()
			st := Stamp{Time: Timestamp{Wall: rev}, Origin: uint64(rnd.Intn(3))}
			switch p := rnd.Intn(100); {
			case p < 55:
				rev++
				e := entry{rev: revision{rev, 0}, create: rev, version: 1, lease: int64(rnd.Intn(2))}
				ix.add([]byte(k), e, st)
				modelAdd(m, k, e, st)
			case p < 80:
				rev++
				e := entry{rev: revision{rev, 0}, tomb: true}
				if rnd.Intn(4) == 0 {
					st = Stamp{}
				}
				ix.add([]byte(k), e, st)
				modelAdd(m, k, e, st)
			case p < 95:
				ix.observeDeletion([]byte(k), st)
				mk := m[k]
				if mk == nil {
					mk = &modelKey{}
					m[k] = mk
				}
				if mk.stamp.Less(st) {
					mk.stamp = st
				}
			default:
				at := rev - int64(rnd.Intn(50))
				collect := rev - int64(rnd.Intn(100))
				got, want := map[revision]struct{}{}, map[revision]struct{}{}
				for from := []byte{}; from != nil; {
					from = ix.compactChunk(from, at, 1+rnd.Intn(40), got, collect)
				}
				modelCompact(m, at, want, retain, collect)
				if len(got) != len(want) {
					t.Fatalf("seed %d step %d: compaction kept %d versions, model %d", seed, step, len(got), len(want))
				}
				for r := range want {
					if _, ok := got[r]; !ok {
						t.Fatalf("seed %d step %d: compaction did not keep %v", seed, step, r)
					}
				}
			}
			if step%100 == 0 {
				checkIndexAgainstModel(t, ix, m, rev, rnd)
			}
		}
		checkIndexAgainstModel(t, ix, m, rev, rnd)
	}
}

func checkIndexAgainstModel(t *testing.T, ix *index, m map[string]*modelKey, rev int64, rnd *rand.Rand) {
	t.Helper()
	if ix.keyCount() != len(m) {
		t.Fatalf("index holds %d keys, model %d", ix.keyCount(), len(m))
	}
	// Every key's stamp and its versions at a few revisions.
	for k, mk := range m {
		if got := ix.stamp([]byte(k)); got != mk.stamp {
			t.Fatalf("stamp of %.20q: %v, model %v", k, got, mk.stamp)
		}
		for _, e := range mk.entries {
			if !ix.has([]byte(k), e.rev) {
				t.Fatalf("%.20q lost version %v", k, e.rev)
			}
		}
		at := rev - int64(rnd.Intn(60))
		var want entry
		wantOK := false
		for j := len(mk.entries) - 1; j >= 0; j-- {
			if mk.entries[j].rev.main <= at {
				want, wantOK = mk.entries[j], !mk.entries[j].tomb
				break
			}
		}
		if got, ok := ix.get([]byte(k), at); ok != wantOK || (ok && got != want) {
			t.Fatalf("%.20q at %d: %v %v, model %v %v", k, at, got, ok, want, wantOK)
		}
	}
	// A full range in key order.
	at := rev - int64(rnd.Intn(60))
	var got []string
	ix.visit([]byte{}, []byte{}, at, func(k []byte, e entry) bool {
		got = append(got, string(k))
		return true
	})
	var want []string
	for k, mk := range m {
		for j := len(mk.entries) - 1; j >= 0; j-- {
			if mk.entries[j].rev.main <= at {
				if !mk.entries[j].tomb {
					want = append(want, k)
				}
				break
			}
		}
	}
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("range at %d: %d keys, model %d", at, len(got), len(want))
	}
	// The arenas account for exactly what the tree holds: live key bytes per chunk, and every
	// version either reachable from a key or on the free list.
	live := make([]int, len(ix.keys.chunks))
	reachable := 0
	ix.tree.Ascend(func(r keyRec) bool {
		live[r.ref.chunk] += int(r.ref.n)
		for id := r.head; id != 0; id = ix.vers.node(id).prev {
			reachable++
		}
		return true
	})
	for c := range live {
		if live[c] != ix.keys.live[c] {
			t.Fatalf("key chunk %d: %d live bytes, arena counts %d", c, live[c], ix.keys.live[c])
		}
		if ix.keys.chunks[c] == nil && live[c] > 0 {
			t.Fatalf("key chunk %d was dropped with %d live bytes", c, live[c])
		}
	}
	free := 0
	for id := ix.vers.free; id != 0; id = ix.vers.node(id).prev {
		free++
	}
	if reachable+free != int(ix.vers.used) {
		t.Fatalf("versions: %d reachable + %d free != %d handed out", reachable, free, ix.vers.used)
	}
}

// TestKeyArenaFreesChunks checks that deleting and compacting away most keys frees key chunks
// (the arena does not keep the high-water mark of keys forever).
func TestKeyArenaFreesChunks(t *testing.T) {
	ix := newIndex()
	key := func(i int) []byte { return []byte(fmt.Sprintf("key-%06d-%s", i, strings.Repeat("p", 40))) }
	const n = 20000
	for i := 0; i < n; i++ {
		ix.add(key(i), entry{rev: revision{int64(i + 1), 0}, create: int64(i + 1), version: 1}, Stamp{})
	}
	chunksHeld := func() int {
		c := 0
		for _, b := range ix.keys.chunks {
			if b != nil {
				c++
			}
		}
		return c
	}
	before := chunksHeld()
	// Delete 9 keys in 10, then compact past the deletions.
	rev := int64(n)
	for i := 0; i < n; i++ {
		if i%10 != 0 {
			rev++
			ix.add(key(i), entry{rev: revision{rev, 0}, tomb: true}, Stamp{})
		}
	}
	// A chunk's survivors move when compaction visits them after the chunk became sparse; keys
	// compacted later in the same pass make earlier chunks sparse, so the second pass frees them.
	for pass := 0; pass < 2; pass++ {
		for from := []byte{}; from != nil; {
			from = ix.compactChunk(from, rev, 1000, map[revision]struct{}{}, 0)
		}
	}
	after := chunksHeld()
	if ix.keyCount() != n/10 {
		t.Fatalf("%d keys left, want %d", ix.keyCount(), n/10)
	}
	if after*4 > before {
		t.Fatalf("key chunks: %d before deleting 90%% of keys, %d after compaction; want at most a quarter", before, after)
	}
	for i := 0; i < n; i += 10 {
		if _, ok := ix.get(key(i), rev); !ok {
			t.Fatalf("key %d lost while its chunk was compacted", i)
		}
	}
}
