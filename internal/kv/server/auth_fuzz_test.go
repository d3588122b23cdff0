package server

import (
	"encoding/json"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	"golang.org/x/crypto/bcrypt"
)

// FuzzAuthAdopt feeds arbitrary bytes to the auth store as a peer's copy: nothing may panic,
// a copy that does not decode is an error and changes nothing, and the store keeps answering
// permission checks.
func FuzzAuthAdopt(f *testing.F) {
	good, _ := json.Marshal(authState{Enabled: true, Revision: 7, Stamp: authStamp{Wall: 5, Member: 2},
		Users: []*authpb.User{{Name: []byte("root"), Roles: []string{"root"}}, {Name: []byte("u"), Roles: []string{"r"}}},
		Roles: []*authpb.Role{{Name: []byte("r"), KeyPermission: []*authpb.Permission{{Key: []byte("a"), RangeEnd: []byte{0}, PermType: authpb.READ}}}}})
	f.Add(good)
	f.Add([]byte(`{"stamp":{"wall":9,"member":1},"users":[null],"roles":[null]}`))
	f.Add([]byte(`{"stamp":{"wall":-1}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := openAuthStore(t.TempDir(), bcrypt.MinCost, newSimpleTokens(DefaultAuthTokenTTL))
		if err != nil {
			t.Fatal(err)
		}
		before := a.rev()
		if err := a.adopt(b); err != nil && a.rev() != before {
			t.Fatalf("a copy that failed (%v) moved the revision %+v -> %+v", err, before, a.rev())
		}
		_ = a.permitted(authInfo{user: "u", rev: a.rev()}, []byte("b"), nil, false)
		_ = a.permitted(authInfo{user: "u", rev: a.rev()}, []byte("a"), []byte{0}, true)
		_ = a.adminPermitted(&authInfo{user: "root"})
		_ = a.userList()
		_ = a.roleList()
	})
}

// FuzzSimpleToken: any token string resolves or not, without panicking; only issued ones do.
func FuzzSimpleToken(f *testing.F) {
	f.Add("abcdefghijklmnop.1")
	f.Add(".")
	f.Add("a.b.c")
	f.Add("x.18446744073709551616")
	f.Fuzz(func(t *testing.T, tok string) {
		st := newSimpleTokens(DefaultAuthTokenTTL)
		issued, err := st.assign("u", authRev{Rev: 1})
		if err != nil {
			t.Fatal(err)
		}
		if ai, ok := st.info(tok, authRev{Rev: 3}); ok != (tok == issued) || (ok && (ai.user != "u" || ai.rev != authRev{Rev: 3})) {
			t.Fatalf("token %q: %+v %v (issued %q)", tok, ai, ok, issued)
		}
	})
}

// TestAuthRevisionOrder: copies are adopted with their own revision, so members holding the
// same copy have the same revision; enable (no counter bump, as in etcd) still orders after
// the copy it was made on; of two concurrent changes the larger revision wins on both sides;
// a copy with a smaller counter is never adopted, whatever its stamp.
func TestAuthRevisionOrder(t *testing.T) {
	open := func(member uint64) *authStore {
		a, err := openAuthStore(t.TempDir(), bcrypt.MinCost, newSimpleTokens(DefaultAuthTokenTTL))
		if err != nil {
			t.Fatal(err)
		}
		a.member = member
		return a
	}
	a, b := open(1), open(2)
	sync := func(from, to *authStore) {
		t.Helper()
		if err := to.adopt(from.replicaState()); err != nil {
			t.Fatal(err)
		}
	}
	must(0, a.userAdd("root", nil, nil))(t)
	must(0, a.userGrantRole("root", rootRole))(t)
	sync(a, b)
	if a.rev() != b.rev() || a.rev().Rev != 3 {
		t.Fatalf("after adopting: %+v on the maker, %+v on the adopter (want equal, counter 3 as in etcd)", a.rev(), b.rev())
	}
	before := a.rev()
	must(0, a.enable())(t)
	if a.rev().Rev != before.Rev || !before.less(a.rev()) {
		t.Fatalf("enable: %+v -> %+v, want the same counter and a later revision", before, a.rev())
	}
	sync(a, b)
	if a.rev() != b.rev() || !b.isEnabled() {
		t.Fatalf("after adopting enable: %+v / %+v, enabled %v", a.rev(), b.rev(), b.isEnabled())
	}
	// Concurrent: one change each from the same copy; b's stamp is later (same counter).
	must(0, a.roleAdd("ra"))(t)
	must(0, b.roleAdd("rb"))(t)
	ra, rb := a.rev(), b.rev()
	if ra.Rev != rb.Rev || !ra.less(rb) {
		t.Fatalf("concurrent changes: %+v, %+v; want one counter, b's stamp later", ra, rb)
	}
	sync(a, b) // smaller: ignored
	sync(b, a)
	if a.rev() != rb || b.rev() != rb || len(a.roleList()) != 1 || a.roleList()[0] != "rb" {
		t.Fatalf("after the exchange: %+v / %+v, roles %v; want b's copy on both", a.rev(), b.rev(), a.roleList())
	}
	// A copy with a smaller counter loses to more changes, even with a later stamp.
	must(0, a.roleAdd("x"))(t)
	must(0, a.roleAdd("y"))(t)
	must(0, b.roleAdd("z"))(t)
	sync(b, a)
	if a.roleList()[len(a.roleList())-1] != "y" {
		t.Fatalf("a adopted a copy with a smaller counter: %+v, roles %v", a.rev(), a.roleList())
	}
}
