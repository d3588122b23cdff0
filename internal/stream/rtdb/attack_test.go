package rtdb

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
)

// probeStates runs probe against each hidden state of /drop (written by an admin first) and
// fails when the answers differ: the caller (who may write /drop but not read it) learns
// something about the hidden value.
func probeStates(t *testing.T, base, at string, states []string, name string, probe func() string) {
	t.Helper()
	answers := map[string]string{}
	for _, st := range states {
		if r := do(t, "DELETE", base+"/"+at+".json?auth=s3cret", ""); r.code != 200 {
			t.Fatalf("admin delete: %d %s", r.code, r.body)
		}
		if r := do(t, "PUT", base+"/"+at+".json?auth=s3cret", st); r.code != 200 {
			t.Fatalf("admin put: %d %s", r.code, r.body)
		}
		answers[probe()] = st
	}
	if len(answers) != 1 {
		var b strings.Builder
		for a, st := range answers {
			fmt.Fprintf(&b, "\n  hidden %.60s: %.300s", st, a)
		}
		t.Errorf("%s: the answer depends on the hidden value:%s", name, b.String())
	}
}

// fresh is an object of n leaves whose names no hidden value uses.
func fresh(n int) string {
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("zz%03d", i)] = i
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestWriteOnlyWriteLimitIgnoresHiddenKeys: a caller who may write /drop but not read it
// learned how many leaves are hidden there: the kv-Txn limit counted the deletes of the hidden
// keys, and the 400 even printed the count ("it sets or deletes N keys"). Now the old leaves go
// in range deletes and such a caller's limit is judged on the worst case its own data allows. Without the message,
// the status alone (200 vs 400) tells whether the hidden value has more than 128-K leaves, and
// a write naming a guessed key (overwritten, so not deleted) tells whether that key exists.
func TestWriteOnlyWriteLimitIgnoresHiddenKeys(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	states := []string{`null`, `{"a":1,"b":2,"c":3}`, `{"a":1}`}
	probeStates(t, base, "drop", states, "REST PUT 128 fresh leaves", func() string {
		r := do(t, "PUT", base+"/drop.json", fresh(128))
		return fmt.Sprintf("%d %s", r.code, r.body)
	})
	probeStates(t, base, "drop", states, "REST PUT 126 fresh leaves (print=silent)", func() string {
		r := do(t, "PUT", base+"/drop.json?print=silent", fresh(126))
		return fmt.Sprintf("%d %s", r.code, r.body)
	})
	w := dialAuthWS(t, base, "default")
	probeStates(t, base, "drop", states, "WS put 126 fresh leaves", func() string {
		var d map[string]any
		json.Unmarshal([]byte(fresh(126)), &d)
		s, b := w.do("p", map[string]any{"p": "/drop", "d": d})
		return fmt.Sprintf("%s %v", s, b)
	})
}

// TestValidateHoldsOnAncestorsOfTheWrite: Firebase's own example ("data written to /foo must
// be a string less than 100 characters", and the widget whose size must be a number in 0..99
// and that may have no other child, "$other": {".validate": false}). A .validate holds on the
// node's new value whatever location the write names: Firebase evaluates it on every node whose
// value the write changes, the ancestors of the written path included. It was only evaluated
// at and under the written path, so writing one level below the validated node turned it into
// an object nobody validated. A delete below a validated node is judged on what remains.
func TestValidateHoldsOnAncestorsOfTheWrite(t *testing.T) {
	const rulesText = `{"rules": {
	  ".read": true,
	  "foo": {".write": true, ".validate": "newData.isString() && newData.val().length < 100"},
	  "user": {".write": true, ".validate": "newData.hasChildren(['name', 'age'])"},
	  "widget": {".write": true,
	    "size": {".validate": "newData.isNumber() && newData.val() >= 0 && newData.val() <= 99"},
	    "$other": {".validate": false}}
	}}`
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", rulesText), AuthSecrets: []string{"s3cret"}}
	})
	// The direct writes are refused, as they must be.
	for _, w := range [][2]string{{"/foo.json", `1`}, {"/widget/size.json", `"big"`}, {"/widget/junk.json", `1`}} {
		if r := do(t, "PUT", base+w[0], w[1]); r.code != 401 {
			t.Fatalf("PUT %s %s: %d %s, want 401", w[0], w[1], r.code, r.body)
		}
	}
	// One level down, they pass.
	for _, w := range [][2]string{{"/foo/x.json", `1`}, {"/widget/size/x.json", `"big"`}, {"/widget/junk/x.json", `1`}} {
		if r := do(t, "PUT", base+w[0], w[1]); r.code != 401 {
			t.Errorf("PUT %s %s: %d %s, want 401 (the .validate above the written path fails on its new value)", w[0], w[1], r.code, r.body)
		}
	}
	if r := do(t, "GET", base+"/.json", ""); r.body != "null" {
		t.Errorf("database now: %s, want nothing written", r.body)
	}
	// Deletes: of a child the parent's .validate needs, refused; of the whole node, allowed.
	if r := do(t, "PUT", base+"/user.json", `{"name":"ada","age":36}`); r.code != 200 {
		t.Fatalf("PUT /user: %d %s", r.code, r.body)
	}
	if r := do(t, "DELETE", base+"/user/name.json", ""); r.code != 401 {
		t.Errorf("DELETE /user/name: %d %s, want 401 (/user would lose a child its .validate requires)", r.code, r.body)
	}
	if r := do(t, "PUT", base+"/user/age.json", `37`); r.code != 200 {
		t.Errorf("PUT /user/age: %d %s, want 200 (/user still valid)", r.code, r.body)
	}
	if r := do(t, "DELETE", base+"/user.json", ""); r.code != 200 {
		t.Errorf("DELETE /user: %d %s, want 200 (a deleted node is not validated)", r.code, r.body)
	}
}

// TestDeniedRequestsReadNoHiddenData: a REST GET (and a WebSocket get) read the whole subtree
// before the rules judged it, so a caller denied /secret learned its size from the answer's
// latency (and any anonymous caller could make the server read and decode the whole database,
// GET /.json, as often as it liked). The denial needs none of it: the rules now judge first,
// reading only what their expressions ask for. Checked by the bytes the server reads from kv
// (not by timing), for REST GET, WebSocket get, and denied REST PUT/PATCH and WebSocket put.
func TestDeniedRequestsReadNoHiddenData(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	big := `"` + strings.Repeat("a", 1<<20) + `"`
	for i := 0; i < 4; i++ {
		if r := do(t, "PUT", fmt.Sprintf("%s/secret/k%d.json?auth=s3cret", base, i), big); r.code != 200 {
			t.Fatalf("admin put: %d %.200s", r.code, r.body)
		}
	}
	w := dialAuthWS(t, base, "default")
	for _, c := range []struct {
		name string
		run  func() string
	}{
		{"REST GET", func() string { return fmt.Sprint(do(t, "GET", base+"/secret.json", "").code) }},
		{"REST GET root", func() string { return fmt.Sprint(do(t, "GET", base+"/.json", "").code) }},
		{"REST PUT", func() string { return fmt.Sprint(do(t, "PUT", base+"/secret.json", `1`).code) }},
		{"REST PATCH", func() string { return fmt.Sprint(do(t, "PATCH", base+"/secret.json", `{"k0":1}`).code) }},
		{"WS get", func() string { s, _ := w.do("g", map[string]any{"p": "/secret"}); return s }},
		{"WS put", func() string { s, _ := w.do("p", map[string]any{"p": "/secret", "d": 1}); return s }},
		{"WS onDisconnect set", func() string { s, _ := w.do("o", map[string]any{"p": "/secret", "d": 1}); return s }},
	} {
		before := store.KVBytesRead.Load()
		ans := c.run()
		read := store.KVBytesRead.Load() - before
		if ans != "401" && ans != "permission_denied" {
			t.Errorf("%s: %s, want a denial", c.name, ans)
		}
		if read > 64<<10 {
			t.Errorf("%s: the denied request read %d bytes from kv (the hidden value is 4 MiB): it must be judged before the data is read", c.name, read)
		}
	}
	// The admin still reads it all.
	before := store.KVBytesRead.Load()
	if r := do(t, "GET", base+"/secret.json?auth=s3cret", ""); r.code != 200 || len(r.body) < 4<<20 {
		t.Errorf("admin GET: %d, %d bytes", r.code, len(r.body))
	}
	if read := store.KVBytesRead.Load() - before; read < 4<<20 {
		t.Errorf("admin GET read %d bytes: the counter does not count reads", read)
	}
}

// TestWriteOnlyIncrementIgnoresHiddenKeys: the same oracle without a large body: an
// increment at /drop (write, no read) compared every hidden key it read, so its answer was 204
// for a small hidden value and a 400 naming the count for one of 130 leaves. It now compares
// only the leaves it adds to.
func TestWriteOnlyIncrementIgnoresHiddenKeys(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	half := func(from int) string {
		m := map[string]int{}
		for i := from; i < from+65; i++ {
			m[fmt.Sprintf("h%03d", i)] = i
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	answers := map[string]string{}
	for _, big := range []bool{false, true} {
		do(t, "DELETE", base+"/drop.json?auth=s3cret", "")
		if big { // 130 hidden leaves, written in two PUTs (a write holds at most 128 keys)
			for _, from := range []int{0, 65} {
				if r := do(t, "PUT", fmt.Sprintf("%s/drop/p%d.json?auth=s3cret", base, from), half(from)); r.code != 200 {
					t.Fatalf("admin patch: %d %.200s", r.code, r.body)
				}
			}
		} else {
			do(t, "PUT", base+"/drop.json?auth=s3cret", `{"h000":1}`)
		}
		r := do(t, "PUT", base+"/drop.json", `{".sv":{"increment":1}}`)
		answers[fmt.Sprintf("%d %s", r.code, r.body)] = fmt.Sprint("big=", big)
	}
	if len(answers) != 1 {
		t.Errorf("a write-only increment's answer depends on the hidden value: %v", answers)
	}
}

// TestIDTokenClaimsAsFirebaseRequires: docs/stream.md says ID tokens are verified "as
// Firebase documents it": iat and auth_time in the past (Firebase: both required), aud = the
// project id (Firebase: exactly that string). Tokens without iat, without auth_time, or with an
// audience list naming another project too were accepted; they are refused, and the token
// with all of them is still accepted. Low severity: each still needs a
// signature by a configured key.
func TestIDTokenClaimsAsFirebaseRequires(t *testing.T) {
	ka, _ := testKeys(t)
	good := signer{ka, "k1"}
	now := time.Now()
	rulesFile := writeFile(t, "rules.json", `{"rules": {"$uid": {".read": "auth != null && auth.uid === $uid"}}}`)
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: rulesFile, ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
	})
	for _, c := range []struct {
		name string
		edit func(jwt.MapClaims)
	}{
		{"no iat", func(c jwt.MapClaims) { delete(c, "iat") }},
		{"no auth_time", func(c jwt.MapClaims) { delete(c, "auth_time") }},
		{"aud a list with another project", func(c jwt.MapClaims) { c["aud"] = []string{"another-project", project} }},
	} {
		r := do(t, "GET", base+"/ada.json", "", "Authorization", "Bearer "+good.token(t, claimsFor("ada", now, c.edit)))
		if r.code != 401 {
			t.Errorf("%s: %d %s, want 401 (not a valid Firebase ID token)", c.name, r.code, r.body)
		}
	}
	if r := do(t, "GET", base+"/ada.json", "", "Authorization", "Bearer "+good.token(t, claimsFor("ada", now, nil))); r.code != 200 {
		t.Errorf("a complete ID token: %d %s, want 200", r.code, r.body)
	}
}

// TestIncrementOverflowIsRefused: an increment whose sum overflows a float64 would store +Inf,
// which is not JSON, and then break every read at or above it (REST answered 200 with an empty
// body, a WebSocket get was never answered). Anyone who may write one leaf (here the open /pub)
// could do it. The write is refused (400 naming the path; a WebSocket error status) and the
// value stays as it was.
func TestIncrementOverflowIsRefused(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	do(t, "PUT", base+"/pub/y.json", `"fine"`)
	do(t, "PUT", base+"/pub/x.json", `1e308`)
	r := do(t, "PUT", base+"/pub/x.json", `{".sv":{"increment":1e308}}`)
	if r.code != 400 || !strings.Contains(r.body, "/pub/x") || !strings.Contains(r.body, "finite") {
		t.Errorf("overflowing increment: %d %q, want 400 naming /pub/x and why", r.code, r.body)
	}
	r = do(t, "PATCH", base+"/pub.json", `{"x":{".sv":{"increment":-1e308}},"z":{".sv":{"increment":1}}}`)
	if r.code != 200 {
		t.Errorf("a finite increment next to it: %d %q", r.code, r.body)
	}
	do(t, "PUT", base+"/pub/x.json", `-1e308`)
	r = do(t, "PATCH", base+"/pub.json", `{"x":{".sv":{"increment":-1e308}},"z":{".sv":{"increment":1}}}`)
	if r.code != 400 {
		t.Errorf("a PATCH whose one increment overflows: %d %q, want 400", r.code, r.body)
	}
	w := dialAuthWS(t, base, "default")
	if s, b := w.do("p", map[string]any{"p": "/pub/x", "d": map[string]any{".sv": map[string]any{"increment": -1e308}}}); s == "ok" {
		t.Errorf("WebSocket overflowing increment: %s %v, want an error status", s, b)
	}
	for _, p := range []string{"/pub/x.json", "/pub.json", "/.json?auth=s3cret"} {
		if g := do(t, "GET", base+p, ""); g.code != 200 || !json.Valid([]byte(g.body)) {
			t.Errorf("GET %s after an overflowing increment: %d %q, want valid JSON", p, g.code, g.body)
		}
	}
	if g := do(t, "GET", base+"/pub.json", ""); g.body != `{"x":-1e+308,"y":"fine","z":1}` {
		t.Errorf("GET /pub.json: %s, want the refused writes to have changed nothing", g.body)
	}
}
