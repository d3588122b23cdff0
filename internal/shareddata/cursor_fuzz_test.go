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
