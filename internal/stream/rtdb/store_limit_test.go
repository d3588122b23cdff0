package rtdb

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// object is {"<prefix>0": v, ..., "<prefix><n-1>": v} as JSON text.
func object(prefix string, n int, v string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", prefix+itoa(i), v)
	}
	b.WriteByte('}')
	return b.String()
}

// TestWritesAtTheTxnOpLimit: writes near kv's 128 operations per Txn either commit or get a 400
// naming the limit — never a 500 from the kv's "too many operations" — whichever of the write's
// Txns (its read, its guarded commit) or whichever part of it (puts, deletes, compares from
// if-match, increments and the rules' reads) passes the limit.
func TestWritesAtTheTxnOpLimit(t *testing.T) {
	const rules = `{"rules": {".read": true, "$top": {".write": "$top !== 'guarded'"},
	  "guarded": {"$k": {".write": "root.child('allow').child($k).exists()"}}}}`
	base := startRTDB(t, func(c *Config) { c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", rules)} })
	if r := do(t, "PUT", base+"/allow.json", object("k", 70, "true")); r.code != 200 {
		t.Fatalf("setup: %d %s", r.code, r.body)
	}
	for _, p := range []string{"/wide.json", "/wide2.json"} {
		if r := do(t, "PUT", base+p, object("k", 127, "1")); r.code != 200 {
			t.Fatalf("setup: %d %s", r.code, r.body)
		}
	}
	etagOf := func(path string) string {
		r := do(t, "GET", base+path, "", "X-Firebase-ETag", "true")
		return r.hdr.Get("ETag")
	}
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		ok                       bool
	}{
		{"put 127 leaves", "PUT", "/p127.json", object("k", 127, "1"), nil, true},
		{"put 128 leaves (and the root key's delete)", "PUT", "/p128.json", object("k", 128, "1"), nil, false},
		{"put 129 leaves", "PUT", "/p129.json", object("k", 129, "1"), nil, false},
		{"put 300 leaves", "PUT", "/p300.json", object("k", 300, "1"), nil, false},
		{"patch 63 paths", "PATCH", "/.json", object("m63/", 63, "1"), nil, true},
		{"patch 64 paths", "PATCH", "/.json", object("m64/", 64, "1"), nil, false},
		{"patch 100 paths", "PATCH", "/.json", object("m100/", 100, "1"), nil, false},
		{"patch 63 children of one node", "PATCH", "/c63.json", object("k", 63, "1"), nil, true},
		{"patch 64 children of one node", "PATCH", "/c64.json", object("k", 64, "1"), nil, false},
		// The leaves an increment replaces go in one range delete, and it compares only the
		// leaves it adds to (here none): it fits.
		{"increment over 127 leaves", "PUT", "/wide2.json", `{".sv":{"increment":1}}`, nil, true},
		{"if-match over 127 leaves", "PUT", "/wide.json", `1`, []string{"if-match", "*etag*"}, false},
		{"rules' reads: 30 guarded paths", "PATCH", "/guarded.json", object("k", 30, "1"), nil, true},
		{"rules' reads: 35 guarded paths", "PATCH", "/guarded.json", object("k", 35, "1"), nil, false},
	} {
		hdr := tc.hdr
		if len(hdr) == 2 && hdr[1] == "*etag*" {
			hdr = []string{hdr[0], etagOf("/wide.json")}
		}
		r := do(t, tc.method, base+tc.path, tc.body, hdr...)
		switch {
		case tc.ok && r.code != 200:
			t.Errorf("%s: %d %.300s, want 200", tc.name, r.code, r.body)
		case !tc.ok && (r.code != 400 || !strings.Contains(r.body, "write too large") || !strings.Contains(r.body, "128")):
			t.Errorf("%s: %d %.300s, want 400 naming the limit of 128", tc.name, r.code, r.body)
		}
	}
	// The WebSocket protocol answers the same writes with too_big.
	w := dialWS(t, base, "default")
	for _, tc := range []struct {
		action string
		body   map[string]any
	}{
		{"p", map[string]any{"p": "/w129", "d": decodeJSON(t, object("k", 129, "1"))}},
		{"m", map[string]any{"p": "/", "d": decodeJSON(t, object("wm/", 64, "1"))}},
	} {
		if s, d := w.call(tc.action, tc.body); s != "too_big" || !strings.Contains(fmt.Sprint(d), "128") {
			t.Errorf("websocket %s: %s %.300v, want too_big naming the limit of 128", tc.action, s, d)
		}
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
