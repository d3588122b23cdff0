package rtdb

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/stream/rtdb/ws"
)

// TestDeniedAnswersDoNotDependOnHiddenData: the rules run before anything that depends on the
// data, on every request kind. Each probe is a request by a caller the rules deny (no read
// and no write at /secret; write but no read at /drop), sent against several states of the
// hidden values, one of which its guess (an ETag, an SDK hash) matches: its answer (status,
// body, ETag) must be the same in every state, so it tells the caller nothing about them.
func TestDeniedAnswersDoNotDependOnHiddenData(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	const guess = `"hunter2"`
	// The last state has 100 leaves: a write-only caller's writes near the per-write limit must
	// not tell how many leaves they replace.
	states := []string{guess, `41`, `{"deep":{"x":1}}`, `null`, object("h", 100, "1")}
	tag := tree.ETag(tree.Leaf(guess))
	hash := ws.Hash(tree.Leaf(guess))
	sse := []string{"Accept", "text/event-stream"}
	rest := func(method, path, body string, hdr ...string) func() string {
		return func() string {
			r := do(t, method, base+path, body, hdr...)
			return fmt.Sprintf("%d %s etag=%q", r.code, r.body, r.hdr.Get("ETag"))
		}
	}
	var w *authWSClient
	ws := func(action string, body map[string]any) func() string {
		return func() string {
			s, d := w.do(action, body)
			b, _ := json.Marshal(d)
			return s + " " + string(b)
		}
	}
	inc := `{".sv":{"increment":1}}`
	keyQuery := "?orderBy=" + url.QueryEscape(`"$key"`) + "&limitToFirst=1"
	probes := []struct {
		name string
		run  func() string
	}{
		{"REST GET", rest("GET", "/secret.json", "")},
		{"REST GET with ETag", rest("GET", "/secret.json", "", "X-Firebase-ETag", "true")},
		{"REST GET shallow", rest("GET", "/secret.json?shallow=true", "")},
		{"REST GET query", rest("GET", "/secret.json"+keyQuery, "")},
		{"REST GET child", rest("GET", "/secret/deep.json", "")},
		{"REST GET write-only", rest("GET", "/drop.json", "")},
		{"REST PUT", rest("PUT", "/secret.json", `"mine"`)},
		{"REST PUT if-match", rest("PUT", "/secret.json", `"mine"`, "if-match", tag)},
		{"REST DELETE if-match", rest("DELETE", "/secret.json", "", "if-match", tag)},
		{"REST PATCH", rest("PATCH", "/secret.json", `{"a":1}`)},
		{"REST POST", rest("POST", "/secret.json", `"mine"`)},
		{"REST PUT increment", rest("PUT", "/secret.json", inc)},
		{"REST PUT if-match write-only", rest("PUT", "/drop.json", `"mine"`, "if-match", tag)},
		{"REST DELETE if-match write-only", rest("DELETE", "/drop.json", "", "if-match", tag)},
		{"REST PUT increment write-only", rest("PUT", "/drop.json", inc, "X-Firebase-ETag", "true")},
		{"REST PATCH increment write-only", rest("PATCH", "/.json", `{"drop":`+inc+`}`)},
		{"REST PUT 60 leaves write-only", rest("PUT", "/drop.json", object("zz", 60, "1"))},
		{"REST PUT 100 leaves write-only", rest("PUT", "/drop.json", object("zz", 100, "1"))},
		{"REST PATCH 60 leaves write-only", rest("PATCH", "/drop.json", object("zz", 60, "1"))},
		{"SSE listen", rest("GET", "/secret.json", "", sse...)},
		{"SSE listen query", rest("GET", "/secret.json"+keyQuery, "", sse...)},
		{"SSE listen write-only", rest("GET", "/drop.json", "", sse...)},
		{"WS listen", ws("q", map[string]any{"p": "/secret", "h": ""})},
		{"WS listen query", ws("q", map[string]any{"p": "/secret", "h": "", "t": 7, "q": map[string]any{"i": ".key", "l": 1}})},
		{"WS get", ws("g", map[string]any{"p": "/secret"})},
		{"WS get query", ws("g", map[string]any{"p": "/secret", "q": map[string]any{"i": ".key", "l": 1}})},
		{"WS put", ws("p", map[string]any{"p": "/secret", "d": "mine"})},
		{"WS merge", ws("m", map[string]any{"p": "/", "d": map[string]any{"secret/a": 1}})},
		{"WS transaction", ws("p", map[string]any{"p": "/secret", "d": "mine", "h": hash})},
		{"WS transaction write-only", ws("p", map[string]any{"p": "/drop", "d": "mine", "h": hash})},
		{"WS put increment write-only", ws("p", map[string]any{"p": "/drop", "d": map[string]any{".sv": map[string]any{"increment": 1}}})},
		{"WS put 60 leaves write-only", ws("p", map[string]any{"p": "/drop", "d": decodeJSON(t, object("zz", 60, "1"))})},
		{"WS put 100 leaves write-only", ws("p", map[string]any{"p": "/drop", "d": decodeJSON(t, object("zz", 100, "1"))})},
		{"WS onDisconnect set", ws("o", map[string]any{"p": "/secret", "d": "mine"})},
		{"WS onDisconnect update", ws("om", map[string]any{"p": "/", "d": map[string]any{"secret/a": 1}})},
		{"WS onDisconnect increment", ws("o", map[string]any{"p": "/secret", "d": map[string]any{".sv": map[string]any{"increment": 1}}})},
	}
	answers := make([]map[string]string, len(probes)) // per probe: answer -> the state it came from
	for _, state := range states {
		w = dialAuthWS(t, base, "default") // a fresh connection: no onDisconnect or listen carried over
		for i, p := range probes {
			for _, at := range []string{"secret", "drop"} { // reset: a write-only probe may have written
				if r := do(t, "PUT", base+"/"+at+".json?auth=s3cret", state); r.code != 200 {
					t.Fatalf("admin put %s: %d %s", at, r.code, r.body)
				}
			}
			a := p.run()
			if answers[i] == nil {
				answers[i] = map[string]string{}
			}
			answers[i][a] = state
		}
		w.c.Close()
	}
	for i, p := range probes {
		if len(answers[i]) != 1 {
			var b strings.Builder
			for a, st := range answers[i] {
				fmt.Fprintf(&b, "\n  hidden %s: %s", st, a)
			}
			t.Errorf("%s: the answer depends on the hidden value:%s", p.name, b.String())
		}
	}
}
