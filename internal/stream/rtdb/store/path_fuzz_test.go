package store

import (
	"net/url"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// FuzzParsePath: a parsed path's segments are valid keys, and re-joined (escaped) they parse back
// to the same segments; a path that fails names why in Firebase's words.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"", "/", "a/b", "/a//b/", "a.b", "a$", "x/[y]", "\x00", "ünï/cødé", strings.Repeat("a/", 40), "%2F", "a%20b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		segs, err := tree.ParsePath(p)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "Invalid") && !strings.HasPrefix(err.Error(), "Path is too deep") {
				t.Fatalf("%q: error %v", p, err)
			}
			return
		}
		if len(segs) > tree.MaxDepth {
			t.Fatalf("%q: %d segments", p, len(segs))
		}
		esc := make([]string, len(segs))
		for i, s := range segs {
			if tree.ValidateKey(s) != nil || strings.Contains(s, "/") {
				t.Fatalf("%q: invalid segment %q", p, s)
			}
			esc[i] = url.PathEscape(s)
		}
		back, err := tree.ParseURLPath("/" + strings.Join(esc, "/") + ".json")
		if err != nil || strings.Join(back, "/") != strings.Join(segs, "/") || len(back) != len(segs) {
			t.Fatalf("%q: %q round-trips to %q, %v", p, segs, back, err)
		}
		// A valid path has a valid kv key whose segments split back.
		s := &Store{prefix: "/rtdb"}
		k := s.Key("ns", segs)
		if got := strings.Split(k, "/")[3:]; strings.Join(got, "/") != strings.Join(segs, "/") {
			t.Fatalf("%q: key %q", p, k)
		}
	})
}
