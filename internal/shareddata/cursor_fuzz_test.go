package shareddata

import (
	"strings"
	"testing"
)

// FuzzRedisCursor: any string is either refused or parsed into a position that formats back
// to an equivalent cursor.
func FuzzRedisCursor(f *testing.F) {
	for _, s := range []string{"0-0", "1795607621349-11.42", "1-2.", "-1", "1-2.-3", "a-b", "1.2-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, num, err := parseRedisCursor(Cursor(s))
		if err != nil {
			if !strings.Contains(err.Error(), "not a Redis stream position") {
				t.Fatalf("%q: error %v does not say what is wrong", s, err)
			}
			return
		}
		id2, num2, err := parseRedisCursor(redisCursor(id, num))
		if err != nil || id2 != id || num2 != num {
			t.Fatalf("%q -> (%q, %d) -> (%q, %d, %v)", s, id, num, id2, num2, err)
		}
	})
}

// FuzzValidName: an accepted name never contains a character that splits a key path, a Redis
// hash tag or a cursor.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"cell-7", "a/b", "{x}", "", "g.1_2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidName("group", s) == nil && strings.ContainsAny(s, "/{}:#, \x00") {
			t.Fatalf("%q accepted", s)
		}
	})
}

// FuzzRedisSubscriptionCursor: a multi-channel cursor is either refused, naming what is wrong,
// or parsed into positions that format back to the same positions.
func FuzzRedisSubscriptionCursor(f *testing.F) {
	for _, s := range []string{"a=1-0.1,b=2-0.3", "a=1-0", "a=1-0,a=2-0", "b=1-0.1", "a=", "=1-0", "a=1-0;b=2-0"} {
		f.Add(s)
	}
	channels := []string{"a", "b"}
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := startPositions(Cursor(s), channels)
		if err != nil {
			if !strings.Contains(err.Error(), "cursor") {
				t.Fatalf("%q: error %v does not name the cursor", s, err)
			}
			return
		}
		pos2, err := startPositions(multiCursor(channels, pos), channels)
		if err != nil || len(pos2) != len(pos) {
			t.Fatalf("%q -> %v -> %v, %v", s, pos, pos2, err)
		}
		for i := range pos {
			if pos[i] != pos2[i] {
				t.Fatalf("%q -> %v -> %v", s, pos, pos2)
			}
		}
	})
}

// FuzzEtcdCursor: an etcd cursor is refused or formats back to itself.
func FuzzEtcdCursor(f *testing.F) {
	for _, s := range []string{"5", "5.0", "5.-1", "-5", "5.", "x.1", "12.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseEtcdCursor(Cursor(s), "etcd")
		if err != nil {
			if !strings.Contains(err.Error(), "not a position in etcd") {
				t.Fatalf("%q: error %v does not say what is wrong", s, err)
			}
			return
		}
		if c.idx >= 0 {
			c2, err := parseEtcdCursor(Cursor(c.String()), "etcd")
			if err != nil || c2 != c {
				t.Fatalf("%q -> %v -> %v, %v", s, c, c2, err)
			}
		}
	})
}
