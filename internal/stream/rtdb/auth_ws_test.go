package rtdb

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// authWSClient speaks the SDK's framing to a server: requests {"t":"d","d":{"r":n,"a":..,"b":..}}.
type authWSClient struct {
	t    *testing.T
	c    *websocket.Conn
	r    int
	push []map[string]any // server pushes ("d" actions) read while waiting for a response
}

func dialAuthWS(t *testing.T, base, ns string) *authWSClient {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/.ws?v=5&ns="+ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := &authWSClient{t: t, c: c}
	if m := w.next(); m["t"] != "c" { // the handshake
		t.Fatalf("first message %v, want the handshake", m)
	}
	return w
}

func (w *authWSClient) next() map[string]any {
	w.t.Helper()
	w.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, b, err := w.c.ReadMessage()
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		w.t.Fatalf("message %s: %v", b, err)
	}
	return m
}

// do sends a request and returns its response's status and data.
func (w *authWSClient) do(action string, body map[string]any) (string, any) {
	w.t.Helper()
	w.r++
	msg, _ := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": w.r, "a": action, "b": body}})
	if err := w.c.WriteMessage(websocket.TextMessage, msg); err != nil {
		w.t.Fatal(err)
	}
	for {
		m := w.next()
		d, _ := m["d"].(map[string]any)
		if r, ok := d["r"].(float64); ok && int(r) == w.r {
			b := d["b"].(map[string]any)
			return b["s"].(string), b["d"]
		}
		w.push = append(w.push, d)
	}
}

// waitPush waits for a pushed action a.
func (w *authWSClient) waitPush(a string) map[string]any {
	w.t.Helper()
	for i := 0; ; i++ {
		if i < len(w.push) {
			if w.push[i]["a"] == a {
				return w.push[i]
			}
			continue
		}
		w.push = append(w.push, w.next()["d"].(map[string]any))
		i--
	}
}

func TestWebSocketRules(t *testing.T) {
	ka, _ := testKeys(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", docRules), Emulator: true,
			ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
		c.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	w := dialAuthWS(t, base, "default")
	put := func(p string, v any) string { s, _ := w.do("p", map[string]any{"p": p, "d": v}); return s }

	// Unauthenticated: denied.
	if s := put("/users/ada/name", "Ada"); s != "permission_denied" {
		t.Fatalf("unauthenticated put: %s", s)
	}
	// The JS SDK's mockUserToken (unsigned, iat 0): accepted in emulator mode.
	mock := unsigned(t, jwt.MapClaims{"sub": "ada", "iat": 0, "exp": 3600, "aud": "demo-project",
		"firebase": map[string]any{"sign_in_provider": "custom"}})
	if s, d := w.do("auth", map[string]any{"cred": mock}); s != "ok" || d.(map[string]any)["auth"].(map[string]any)["sub"] != "ada" {
		t.Fatalf("auth: %s %v", s, d)
	}
	if s := put("/users/ada/name", "Ada"); s != "ok" {
		t.Fatalf("own put: %s", s)
	}
	if s := put("/users/ada/name", strings.Repeat("x", 30)); s != "permission_denied" {
		t.Fatalf("put failing .validate: %s", s)
	}
	if s := put("/users/bob/name", "Bob"); s != "permission_denied" {
		t.Fatalf("put to another user: %s", s)
	}
	if s, _ := w.do("q", map[string]any{"p": "/users/bob", "h": ""}); s != "permission_denied" {
		t.Fatalf("listen on another user: %s", s)
	}
	if s, _ := w.do("q", map[string]any{"p": "/users/ada", "h": ""}); s != "ok" {
		t.Fatalf("listen on own node: %s", s)
	}
	if s, _ := w.do("g", map[string]any{"p": "/users/bob"}); s != "permission_denied" {
		t.Fatalf("get of another user: %s", s)
	}
	if s, _ := w.do("m", map[string]any{"p": "/users", "d": map[string]any{"ada/age": 36, "bob/age": 1}}); s != "permission_denied" {
		t.Fatalf("merge with one denied path: %s", s)
	}
	// unauth: back to no credential.
	if s, _ := w.do("unauth", map[string]any{}); s != "ok" {
		t.Fatalf("unauth: %s", s)
	}
	if s := put("/users/ada/age", 36); s != "permission_denied" {
		t.Fatalf("put after unauth: %s", s)
	}
	// A bad token: invalid_token (the SDK then reconnects with a fresh one).
	if s, d := w.do("auth", map[string]any{"cred": signer{ka, "k1"}.token(t, claimsFor("ada", time.Now(), func(c jwt.MapClaims) {
		c["aud"] = "other"
	}))}); s != "invalid_token" || !strings.Contains(d.(string), "Could not parse auth token.") {
		t.Fatalf("bad token: %s %v", s, d)
	}
	// "owner" (gauth) is an admin in emulator mode.
	if s, _ := w.do("gauth", map[string]any{"cred": "owner"}); s != "ok" {
		t.Fatalf("owner: %s", s)
	}
	if s := put("/users/bob/name", "Bob"); s != "ok" {
		t.Fatalf("admin put: %s", s)
	}
	// An ID token that expires: "ac" expired_token, then the connection is unauthenticated.
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	clock.Store(exp.Add(-50 * time.Millisecond).UnixNano())
	tok := signer{ka, "k1"}.token(t, claimsFor("ada", exp.Add(-time.Minute), func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	if s, d := w.do("auth", map[string]any{"cred": tok}); s != "ok" || d.(map[string]any)["expires"] != float64(exp.Unix()) {
		t.Fatalf("auth with an ID token: %s %v", s, d)
	}
	ac := w.waitPush("ac")
	if b := ac["b"].(map[string]any); b["s"] != "expired_token" {
		t.Fatalf("ac: %v", ac)
	}
	clock.Store(exp.Add(time.Second).UnixNano())
	if s := put("/users/ada/age", 37); s != "permission_denied" {
		t.Fatalf("put after expiry: %s", s)
	}
}
