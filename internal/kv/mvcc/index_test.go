package mvcc

import (
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
