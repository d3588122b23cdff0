package tree

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzValueRoundTrip: any body either is refused or normalizes to a tree whose leaves, stored as
// kv keys and read back, give the same canonical JSON; every stored key is valid, and no key is
// both a leaf and a prefix of another (a node is a leaf or has children).
func FuzzValueRoundTrip(f *testing.F) {
	for _, s := range []string{`null`, `1`, `"s"`, `{"a":{"b":[1,null,{"c":true}]},"d":{}}`, `{"a.b":1}`,
		`{"x":{".value":2,".priority":1}}`, `[[],[[]]]`, `{"n":1.50}`, `{"u":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, err := ParseJSON([]byte(body))
		if err != nil {
			return
		}
		tree, err := Normalize(v, 1)
		if err != nil {
			return
		}
		if _, ok := tree.(ServerValue); ok {
			return
		}
		tree, _ = Resolve(tree, nil, 0)
		kvs := map[string]string{}
		Flatten("/rtdb/ns/p", tree, kvs)
		var back any
		for k, val := range kvs {
			if !strings.HasPrefix(k, "/rtdb/ns/p") {
				t.Fatalf("key %q outside the path", k)
			}
			rel := strings.Split(strings.TrimPrefix(k, "/rtdb/ns/p"), "/")[1:]
			for _, s := range rel {
				if ValidateKey(s) != nil {
					t.Fatalf("stored key %q has an invalid segment %q", k, s)
				}
			}
			for k2 := range kvs {
				if strings.HasPrefix(k2, k+"/") {
					t.Fatalf("%q is a leaf and has the child %q", k, k2)
				}
			}
			Insert(&back, rel, Leaf(val))
		}
		if a, b := Canonical(tree), Canonical(back); !bytes.Equal(a, b) {
			t.Fatalf("%s: stored %s, read back %s", body, a, b)
		}
		_ = Encode(back, false)
	})
}
