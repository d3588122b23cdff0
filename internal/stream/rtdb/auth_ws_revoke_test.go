package rtdb

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/ws"
)

// revokeRules: users own their node, /pub and /open are open to everyone, /secret to no one, /drop may be
// written but not read.
const revokeRules = `{
  "rules": {
    "users": {"$uid": {".read": "auth != null && auth.uid == $uid", ".write": "auth != null && auth.uid == $uid"}},
    "pub": {".read": true, ".write": true},
    "open": {".read": true, ".write": true},
    "secret": {".read": false, ".write": false},
    "drop": {".read": false, ".write": true}
  }
}`

// startRevokeRTDB is a server with revokeRules in emulator mode ("owner" is an admin, mock
// tokens are accepted) and a secret "s3cret"; now, when given, is its clock.
func startRevokeRTDB(t *testing.T, now func() time.Time, edit func(*Config)) string {
	t.Helper()
	return startRTDB(t, func(c *Config) {
		ka, _ := testKeys(t)
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", revokeRules), Emulator: true,
			AuthSecrets: []string{"s3cret"}, ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
		if now != nil {
			c.Now = now
		}
		if edit != nil {
			edit(c)
		}
	})
}

func mockToken(t *testing.T, uid string) string {
	return unsigned(t, jwt.MapClaims{"sub": uid, "iat": 0, "exp": 3600, "aud": "demo-project",
		"firebase": map[string]any{"sign_in_provider": "custom"}})
}

// wsRevokeChecks listens as ada on her node, then calls revoke, which must make the server
// cancel that listen: a "c" push naming the path, and none of the data written after it.
func wsRevokeChecks(t *testing.T, base string, w *authWSClient, revoke func()) {
	t.Helper()
	if s, _ := w.do("q", map[string]any{"p": "/users/ada", "h": ""}); s != "ok" {
		t.Fatalf("listen on own node: %s", s)
	}
	if s, _ := w.do("q", map[string]any{"p": "/pub", "h": ""}); s != "ok" {
		t.Fatalf("listen on /pub: %s", s)
	}
	w.push = nil
	revoke()
	c := w.waitPush("c")
	if b := c["b"].(map[string]any); b["p"] != "/users/ada" {
		t.Fatalf("cancel %v, want p /users/ada", c)
	}
	// Data written afterwards must not reach the client: the admin writes ada's node, then the
	// client writes /pub, whose "ok" comes after every change up to its revision was queued
	// for the connection's listens.
	if r := do(t, "PUT", base+"/users/ada/name.json?auth=s3cret", `"secret name"`); r.code != 200 {
		t.Fatalf("admin write: %d %s", r.code, r.body)
	}
	if s, _ := w.do("p", map[string]any{"p": "/pub/x", "d": 1}); s != "ok" {
		t.Fatalf("put /pub/x: %s", s)
	}
	for _, m := range w.push {
		if b, _ := m["b"].(map[string]any); m["a"] == "d" || m["a"] == "m" {
			if p, _ := b["p"].(string); strings.HasPrefix(p, "users/ada") {
				t.Fatalf("data pushed after the listen was revoked: %v", m)
			}
		}
	}
}

// TestWebSocketListenRevokedOnUnauth (issue 41, defect 19): after "unauth" a listen the rules no
// longer allow is cancelled with "c" (the SDK's onListenRevoked_: its cancel callback fires
// with permission_denied) before unauth's "ok", and no data of it follows.
func TestWebSocketListenRevokedOnUnauth(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	w := dialAuthWS(t, base, "default")
	if s, _ := w.do("auth", map[string]any{"cred": mockToken(t, "ada")}); s != "ok" {
		t.Fatalf("auth: %s", s)
	}
	wsRevokeChecks(t, base, w, func() {
		if s, _ := w.do("unauth", map[string]any{}); s != "ok" {
			t.Fatalf("unauth: %s", s)
		}
		if len(w.push) == 0 || w.push[len(w.push)-1]["a"] != "c" {
			t.Fatalf("pushes before unauth's ok: %v, want the listen's cancel last", w.push)
		}
	})
}

// TestWebSocketListenRevokedOnAuthChange: re-authenticating as another user cancels the
// listens the new caller may not read.
func TestWebSocketListenRevokedOnAuthChange(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	w := dialAuthWS(t, base, "default")
	if s, _ := w.do("auth", map[string]any{"cred": mockToken(t, "ada")}); s != "ok" {
		t.Fatalf("auth: %s", s)
	}
	wsRevokeChecks(t, base, w, func() {
		if s, _ := w.do("auth", map[string]any{"cred": mockToken(t, "bob")}); s != "ok" {
			t.Fatalf("auth as bob: %s", s)
		}
	})
}

// TestWebSocketListenRevokedOnExpiry (issue 41, defect 19): when the ID token expires the
// server sends "ac" and cancels the listens an unauthenticated caller may not read.
func TestWebSocketListenRevokedOnExpiry(t *testing.T) {
	ka, _ := testKeys(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	base := startRevokeRTDB(t, func() time.Time { return time.Unix(0, clock.Load()) }, nil)
	w := dialAuthWS(t, base, "default")
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	clock.Store(exp.Add(-time.Minute).UnixNano())
	tok := signer{ka, "k1"}.token(t, claimsFor("ada", exp.Add(-2*time.Minute), func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	if s, d := w.do("auth", map[string]any{"cred": tok}); s != "ok" {
		t.Fatalf("auth: %s %v", s, d)
	}
	wsRevokeChecks(t, base, w, func() {
		// The expiry timer was armed for a minute of the fake clock: re-arm it closer by
		// authenticating again with the clock 50 ms before the expiry.
		clock.Store(exp.Add(-50 * time.Millisecond).UnixNano())
		if s, _ := w.do("auth", map[string]any{"cred": tok}); s != "ok" {
			t.Fatalf("auth again: %s", s)
		}
		w.waitPush("ac")
		clock.Store(exp.Add(time.Second).UnixNano())
	})
}

// lockedRules replaces revokeRules at runtime: /pub may no longer be read.
const lockedRules = `{"rules": {"pub": {".read": false, ".write": true}, "open": {".read": true, ".write": true}}}`

// TestWebSocketListenRevokedOnRulesChange: a PUT of /.settings/rules.json that denies a running
// listen cancels it with "c", and none of its data follows.
func TestWebSocketListenRevokedOnRulesChange(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	w := dialAuthWS(t, base, "default")
	for _, p := range []string{"/pub", "/open"} {
		if s, _ := w.do("q", map[string]any{"p": p, "h": ""}); s != "ok" {
			t.Fatalf("listen on %s: %s", p, s)
		}
	}
	// A query listen on /pub too: its cancel names the query the SDK sent.
	query := map[string]any{"i": ".key", "l": 5.0, "vf": "l"}
	if s, _ := w.do("q", map[string]any{"p": "/pub", "h": "", "t": 1, "q": query}); s != "ok" {
		t.Fatalf("query listen on /pub: %s", s)
	}
	w.push = nil
	if r := do(t, "PUT", base+"/.settings/rules.json?auth=s3cret", lockedRules); r.code != 200 {
		t.Fatalf("rules: %d %s", r.code, r.body)
	}
	var plain, tagged bool
	for !plain || !tagged {
		c := w.waitPush("c")
		w.push = w.push[1:]
		b := c["b"].(map[string]any)
		if b["p"] != "/pub" {
			t.Fatalf("cancel %v, want p /pub", c)
		}
		if q, ok := b["q"].([]any); ok {
			if len(q) != 1 || q[0].(map[string]any)["i"] != ".key" {
				t.Fatalf("cancel of the query listen %v, want q [%v]", c, query)
			}
			tagged = true
		} else {
			plain = true
		}
	}
	if r := do(t, "PUT", base+"/pub/y.json?auth=s3cret", `"hidden"`); r.code != 200 {
		t.Fatalf("admin write: %d %s", r.code, r.body)
	}
	if s, _ := w.do("p", map[string]any{"p": "/open/x", "d": 1}); s != "ok" {
		t.Fatalf("put /open/x: %s", s)
	}
	for _, m := range w.push {
		if b, _ := m["b"].(map[string]any); (m["a"] == "d" || m["a"] == "m") && strings.HasPrefix(b["p"].(string), "pub") {
			t.Fatalf("data pushed after the listen was revoked: %v", m)
		}
	}
	if s, _ := w.do("q", map[string]any{"p": "/pub", "h": ""}); s != "permission_denied" {
		t.Fatalf("a new listen on /pub: %s", s)
	}
}

// TestFirstValueAheadOfTheWatch: a listen's first value read at a revision the hub's watch has
// not reached (the kv's revision moved on with keys outside the prefix, which the watch never
// delivers) is held until the hub reaches it, then sent, over WebSocket and SSE alike: the
// listen does not hang and its value comes before its "ok".
func TestFirstValueAheadOfTheWatch(t *testing.T) {
	kvURL := kvtest.URL(t)
	base := startRTDBOn(t, kvURL, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", revokeRules), AuthSecrets: []string{"s3cret"}}
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{kvURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	do(t, "PUT", base+"/pub/a.json", `1`)
	w := dialAuthWS(t, base, "default")
	if s, _ := w.do("q", map[string]any{"p": "/open", "h": ""}); s != "ok" { // starts the hub's watch
		t.Fatalf("listen /open: %s", s)
	}
	for i := range 3 {
		if _, err := cli.Put(context.Background(), fmt.Sprintf("/elsewhere/%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	w.push = nil
	if s, _ := w.do("q", map[string]any{"p": "/pub", "h": ""}); s != "ok" {
		t.Fatalf("listen /pub: %s", s)
	}
	if len(w.push) != 1 || w.push[0]["a"] != "d" {
		t.Fatalf("pushes before the listen's ok: %v, want its value", w.push)
	}
	cli.Put(context.Background(), "/elsewhere/sse", "x")
	l := listen(t, base+"/pub/a.json")
	l.expect(t, "put", "/", `1`)
}

// TestWebSocketListenRacingRulesChange: a listen that starts while the rules change under it
// ends denied either way: its request answers permission_denied, or it is cancelled with "c";
// and no data written after the change reaches it.
func TestWebSocketListenRacingRulesChange(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	for i := range 15 {
		if r := do(t, "PUT", base+"/.settings/rules.json?auth=s3cret", revokeRules); r.code != 200 {
			t.Fatalf("rules: %d %s", r.code, r.body)
		}
		w := dialAuthWS(t, base, "default")
		if s, _ := w.do("q", map[string]any{"p": "/open", "h": ""}); s != "ok" {
			t.Fatalf("listen /open: %s", s)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			do(t, "PUT", base+"/.settings/rules.json?auth=s3cret", lockedRules)
		}()
		s, _ := w.do("q", map[string]any{"p": "/pub", "h": ""})
		<-done
		if r := do(t, "PUT", base+"/pub/z.json?auth=s3cret", fmt.Sprint(i)); r.code != 200 {
			t.Fatalf("admin write: %d %s", r.code, r.body)
		}
		if st, _ := w.do("p", map[string]any{"p": "/open/x", "d": i}); st != "ok" {
			t.Fatalf("put /open/x: %s", st)
		}
		switch s {
		case "permission_denied":
		case "ok":
			w.waitPush("c")
		default:
			t.Fatalf("listen /pub: %s", s)
		}
		for _, m := range w.push {
			if b, _ := m["b"].(map[string]any); (m["a"] == "d" || m["a"] == "m") && b["p"] == "pub/z" {
				t.Fatalf("round %d: data written after the rules change reached the listen: %v", i, m)
			}
		}
		w.c.Close()
	}
}

// TestWebSocketRequestAfterExpiryIsUnauthenticated: a request after the ID token's exp runs as
// an unauthenticated caller even when the expiry timer has not fired yet (it was armed for an
// hour of real time here; on a busy machine it may fire late): the clock is checked at each
// request.
func TestWebSocketRequestAfterExpiryIsUnauthenticated(t *testing.T) {
	ka, _ := testKeys(t)
	var clock atomic.Int64
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	clock.Store(exp.Add(-time.Hour).UnixNano())
	base := startRevokeRTDB(t, func() time.Time { return time.Unix(0, clock.Load()) }, nil)
	do(t, "PUT", base+"/users/ada.json?auth=s3cret", `"hers"`)
	w := dialAuthWS(t, base, "default")
	tok := signer{ka, "k1"}.token(t, claimsFor("ada", exp.Add(-2*time.Hour), func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	if s, d := w.do("auth", map[string]any{"cred": tok}); s != "ok" {
		t.Fatalf("auth: %s %v", s, d)
	}
	if s, d := w.do("g", map[string]any{"p": "/users/ada"}); s != "ok" || d != "hers" {
		t.Fatalf("get before expiry: %s %v", s, d)
	}
	clock.Store(exp.Add(time.Second).UnixNano())
	if s, d := w.do("g", map[string]any{"p": "/users/ada"}); s != "permission_denied" {
		t.Errorf("get after the token's exp (timer not fired): %s %v, want permission_denied", s, d)
	}
}

// TestWebSocketOnDisconnectIsBounded: a connection keeps at most ws.MaxOnDisconnect onDisconnect
// writes (each holds its body until the connection ends); one more is too_big, and a cancel
// makes room again.
func TestWebSocketOnDisconnectIsBounded(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	w := dialAuthWS(t, base, "default")
	for i := 0; i < ws.MaxOnDisconnect; i++ {
		if s, d := w.do("o", map[string]any{"p": fmt.Sprintf("/pub/k%d", i), "d": i}); s != "ok" {
			t.Fatalf("onDisconnect %d: %s %v", i, s, d)
		}
	}
	if s, d := w.do("o", map[string]any{"p": "/pub/one-more", "d": 1}); s != "too_big" {
		t.Errorf("onDisconnect past the bound: %s %v, want too_big", s, d)
	}
	if s, d := w.do("oc", map[string]any{"p": "/pub/k0"}); s != "ok" {
		t.Fatalf("cancel: %s %v", s, d)
	}
	if s, d := w.do("o", map[string]any{"p": "/pub/one-more", "d": 1}); s != "ok" {
		t.Errorf("onDisconnect after a cancel: %s %v, want ok", s, d)
	}
}
