package rtdb

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// TestSSERules: REST streaming under the rules: a listener needs read permission at its path,
// a bad token is 401 with its message, and a stream ends with auth_revoked when its ID token
// expires.
func TestSSERules(t *testing.T) {
	ka, _ := testKeys(t)
	sg := signer{ka, "k1"}
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", docRules), AuthSecrets: []string{"s3cret"},
			ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
	})
	now := time.Now()
	ada := sg.token(t, claimsFor("ada", now, nil))
	sse := []string{"Accept", "text/event-stream"}
	if r := do(t, "GET", base+"/users/bob.json?auth="+ada, "", sse...); r.code != 401 || r.body != denied {
		t.Fatalf("another user's node: %d %q", r.code, r.body)
	}
	if r := do(t, "GET", base+"/users.json?auth="+ada, "", sse...); r.code != 401 {
		t.Fatalf("above the grant: %d %q", r.code, r.body)
	}
	if r := do(t, "GET", base+"/posts.json?auth=x.y.z", "", sse...); r.code != 401 || !strings.Contains(r.body, "Could not parse auth token.") {
		t.Fatalf("bad token: %d %q", r.code, r.body)
	}
	l := listen(t, base+"/users/ada.json", "Authorization", "Bearer "+ada)
	l.expect(t, "put", "/", `null`)
	if r := do(t, "PUT", base+"/users/ada/name.json?auth="+ada, `"Ada"`); r.code != 200 {
		t.Fatalf("write: %d %s", r.code, r.body)
	}
	e, _ := l.next(t)
	if st, err := applyEvent(nil, e); err != nil || !reflect.DeepEqual(st, map[string]any{"name": "Ada"}) {
		t.Fatalf("after the write: %s %s -> %v, %v", e.Type, e.Data, st, err)
	}
	listen(t, base+"/admins.json?auth=s3cret").expect(t, "put", "/", `null`) // a secret bypasses .read false
	// A token about to expire: the stream gets auth_revoked, then ends.
	exp := time.Now().Truncate(time.Second).Add(2 * time.Second)
	short := sg.token(t, claimsFor("ada", now, func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	ex := listen(t, base+"/users/ada.json?auth="+short)
	ex.expect(t, "put", "/", `{"name":"Ada"}`)
	if e, _ := ex.next(t); e.Type != "auth_revoked" {
		t.Fatalf("want auth_revoked, got %q %s", e.Type, e.Data)
	}
	if _, ok := ex.next(t); ok {
		t.Fatal("stream open after auth_revoked")
	}
}

// TestSSECancelledOnRulesChange: a PUT of /.settings/rules.json that denies a running stream
// ends it with "cancel" before any data written after the change.
func TestSSECancelledOnRulesChange(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	l := listen(t, base+"/pub.json")
	l.expect(t, "put", "/", `null`)
	open := listen(t, base+"/open.json")
	open.expect(t, "put", "/", `null`)
	if r := do(t, "PUT", base+"/.settings/rules.json?auth=s3cret", lockedRules); r.code != 200 {
		t.Fatalf("rules: %d %s", r.code, r.body)
	}
	if r := do(t, "PUT", base+"/pub/y.json?auth=s3cret", `"hidden"`); r.code != 200 {
		t.Fatalf("admin write: %d %s", r.code, r.body)
	}
	if e, _ := l.next(t); e.Type != "cancel" {
		t.Fatalf("want cancel, got %q %s", e.Type, e.Data)
	}
	if _, ok := l.next(t); ok {
		t.Fatal("stream open after cancel")
	}
	// A stream the new rules still allow goes on.
	do(t, "PUT", base+"/open/x.json", `1`)
	open.expect(t, "put", "/x", `1`)
}
