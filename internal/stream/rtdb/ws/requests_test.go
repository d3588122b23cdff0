package ws

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// TestEncodePush: a hub event becomes a data push at the listen's path joined with the
// event's, a patch a merge of children there, a tagged listen's push carries its tag.
func TestEncodePush(t *testing.T) {
	for _, tc := range []struct {
		name string
		base string
		ev   *hub.Event
		tag  string
		want string
	}{
		{"put at the listen", "a/b", &hub.Event{Type: "put", Path: "/", Data: json.RawMessage(`{"x":1}`)}, "",
			`{"t":"d","d":{"a":"d","b":{"p":"a/b","d":{"x":1}}}}`},
		{"put below it", "a", &hub.Event{Type: "put", Path: "/x/y", Data: json.RawMessage(`1`)}, "",
			`{"t":"d","d":{"a":"d","b":{"p":"a/x/y","d":1}}}`},
		{"patch at the root", "", &hub.Event{Type: "patch", Path: "/r", Data: json.RawMessage(`{"k":null,"l":"\u00e9"}`)}, "",
			`{"t":"d","d":{"a":"m","b":{"p":"r","d":{"k":null,"l":"\u00e9"}}}}`},
		{"tagged", "q", &hub.Event{Type: "put", Path: "/k", Data: json.RawMessage(`null`)}, "3",
			`{"t":"d","d":{"a":"d","b":{"p":"q/k","d":null,"t":3}}}`},
	} {
		var tag json.RawMessage
		if tc.tag != "" {
			tag = json.RawMessage(tc.tag)
		}
		base := []string{}
		if tc.base != "" {
			base = strings.Split(tc.base, "/")
		}
		if got := string(encodePush(base, tc.ev, tag)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		var v any
		if err := json.Unmarshal(encodePush(base, tc.ev, tag), &v); err != nil {
			t.Errorf("%s: not JSON: %v", tc.name, err)
		}
	}
}

// FuzzWSRequest feeds arbitrary request bodies to the decoding a write and a query go
// through: they may be refused, never panic, and what is accepted is a valid tree.
func FuzzWSRequest(f *testing.F) {
	f.Add(`{"r":1,"a":"p","b":{"p":"/a","d":{"x":1}}}`)
	f.Add(`{"r":2,"a":"m","b":{"p":"/","d":{"a/b":null,"c":[1,2]}}}`)
	f.Add(`{"r":3,"a":"q","b":{"p":"/a","q":{"i":".value","sp":1,"ep":"z","l":3,"vf":"r"},"t":1}}`)
	f.Add(`{"r":4,"a":"p","b":{"p":"/a/.sv","d":{".sv":"timestamp"}}}`)
	c := &wsConn{s: New(Config{MaxBodyBytes: 16 << 20})}
	f.Fuzz(func(t *testing.T, msg string) {
		var req wsRequest
		if json.Unmarshal([]byte(msg), &req) != nil {
			return
		}
		if ups, err := c.updates(&req); err == nil {
			for _, u := range ups {
				out := map[string]string{}
				tree.Flatten("k", u.Val, out)
			}
		}
		wireQuery(req.B.Q)
	})
}
