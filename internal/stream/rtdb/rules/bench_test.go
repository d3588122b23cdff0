package rules

import (
	"testing"
)

// BenchmarkCanWrite is one user-owned write checked against the documentation's rules: a
// .write with $uid, and three .validate rules on the new value.
func BenchmarkCanWrite(b *testing.B) {
	r, err := Parse([]byte(userOwned))
	if err != nil {
		b.Fatal(err)
	}
	db := &tree{v: map[string]any{"users": map[string]any{"ada": map[string]any{"name": "Ada"}}}}
	ups := []Update{{[]string{"users", "ada"}, map[string]any{"name": "Ada L.", "age": 36.0}}}
	a := &Auth{UID: "ada", Provider: "password"}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := r.CanWrite(a, ups, db, now); !ok {
			b.Fatal("denied")
		}
	}
}

// BenchmarkCanRead is a read three levels below a $uid grant.
func BenchmarkCanRead(b *testing.B) {
	r, err := Parse([]byte(userOwned))
	if err != nil {
		b.Fatal(err)
	}
	a := &Auth{UID: "ada"}
	p := []string{"users", "ada", "name"}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := r.CanRead(a, p, &tree{}, now); !ok {
			b.Fatal("denied")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(userOwned)); err != nil {
			b.Fatal(err)
		}
	}
}
