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
