package rtdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/stream/rtdb/ws"
)

// wsClient speaks the protocol by hand, to test what the SDK never sends (bad input) and the
// exact order of messages.
type wsClient struct {
	t    testing.TB
	c    *websocket.Conn
	next int
	msgs chan map[string]any
}

func dialWS(t testing.TB, base, ns string) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/.ws?v=5&ns=" + ns
	c, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	wc := &wsClient{t: t, c: c, msgs: make(chan map[string]any, 1000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(wc.msgs)
		var frames []string
		want := 0
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if want == 0 && len(b) <= 6 {
				if n, err := strconv.Atoi(string(b)); err == nil {
					want = n
					continue
				}
			}
			if want > 0 {
				frames = append(frames, string(b))
				if len(frames) < want {
					continue
				}
				b, frames, want = []byte(strings.Join(frames, "")), nil, 0
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("server sent non-JSON %q", b)
				return
			}
			wc.msgs <- m
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	hello := wc.recv()
	d, _ := hello["d"].(map[string]any)
	if hello["t"] != "c" || d["t"] != "h" {
		t.Fatalf("first message %v, want the hello {t:c, d:{t:h, ...}}", hello)
	}
	hd, _ := d["d"].(map[string]any)
	if hd["v"] != "5" || hd["s"] == "" || hd["ts"] == nil {
		t.Fatalf("hello %v: want v 5, a session and a timestamp", hd)
	}
	return wc
}

func (w *wsClient) recv() map[string]any {
	w.t.Helper()
	select {
	case m, ok := <-w.msgs:
		if !ok {
			w.t.Fatal("connection closed")
		}
		return m
	case <-time.After(30 * time.Second): // a deadline, not a measurement
		w.t.Fatal("no message within 30 s")
	}
	return nil
}

func (w *wsClient) sendRaw(s string) {
	w.t.Helper()
	if err := w.c.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		w.t.Fatal(err)
	}
}

// req sends a request and returns its number.
func (w *wsClient) req(action string, body any) int {
	w.t.Helper()
	w.next++
	b, _ := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": w.next, "a": action, "b": body}})
	w.sendRaw(string(b))
	return w.next
}

// reply waits for the response to request r, returning the pushes received before it too.
func (w *wsClient) reply(r int) (status string, data any, before []map[string]any) {
	w.t.Helper()
	for {
		m := w.recv()
		d, _ := m["d"].(map[string]any)
		if n, ok := d["r"].(float64); ok && int(n) == r {
			b := d["b"].(map[string]any)
			s, _ := b["s"].(string)
			return s, b["d"], before
		}
		before = append(before, m)
	}
}

func (w *wsClient) call(action string, body any) (string, any) {
	w.t.Helper()
	s, d, _ := w.reply(w.req(action, body))
	return s, d
}

// push returns the body of a data push (action d or m).
func push(m map[string]any) (action string, body map[string]any) {
	d, _ := m["d"].(map[string]any)
	a, _ := d["a"].(string)
	b, _ := d["b"].(map[string]any)
	return a, b
}

func jsonEq(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	var u, v any
	json.Unmarshal(x, &u)
	json.Unmarshal(y, &v)
	return reflect.DeepEqual(u, v)
}

func TestWSBadInput(t *testing.T) {
	base := startRTDB(t, func(c *Config) { c.MaxBodyBytes = 1 << 16 })
	w := dialWS(t, base, "bad")
	for _, tc := range []struct {
		action string
		body   any
		status string
		reason string
	}{
		{"p", map[string]any{"p": "/a", "d": map[string]any{"a.b": 1}}, "invalid_data", "a.b"},
		{"p", map[string]any{"p": "/a[0]", "d": 1}, "invalid_path", "a[0]"},
		{"m", map[string]any{"p": "/a", "d": 5}, "invalid_data", "object"},
		{"m", map[string]any{"p": "/a", "d": map[string]any{"x": 1, "x/y": 2}}, "invalid_data", "ancestor"},
		{"p", map[string]any{"p": "/a", "d": strings.Repeat("x", 1<<16)}, "too_big", "max-body-bytes"},
		{"p", map[string]any{"p": strings.Repeat("/d", 30), "d": map[string]any{"e": map[string]any{"f": map[string]any{"g": 1}}}}, "invalid_data", "deep"},
		{"m", map[string]any{"p": "/a", "d": map[string]any{"x": 1}, "h": "abc"}, "invalid_data", "only allowed on a put"},
		{"q", map[string]any{"p": "/a", "q": map[string]any{"l": "ten"}, "t": 1}, "invalid_data", "limit"},
		{"zz", map[string]any{}, "invalid_action", "unknown action"},
	} {
		s, d := w.call(tc.action, tc.body)
		if s != tc.status || !strings.Contains(fmt.Sprint(d), tc.reason) {
			t.Errorf("%s %.80v: %s %q, want %s naming %q", tc.action, tc.body, s, d, tc.status, tc.reason)
		}
	}
	// Nothing of the refused writes was stored; the connection still serves.
	if s, d := w.call("g", map[string]any{"p": "/", "q": map[string]any{}}); s != "ok" || d != nil {
		t.Errorf("after refused writes: %s %v, want ok null", s, d)
	}
	// A message that is not the protocol ends the connection with a shutdown naming why.
	w.sendRaw(`{"t":"x"}`)
	m := w.recv()
	if d, _ := m["d"].(map[string]any); m["t"] != "c" || d["t"] != "s" || !strings.Contains(fmt.Sprint(d["d"]), "message type") {
		t.Errorf("after a bad message: %v, want a shutdown {t:c, d:{t:s, d:reason}}", m)
	}
	// A bad namespace or version is refused at the upgrade, naming what is allowed.
	for _, q := range []string{"ns=Bad_NS", "ns=ok&v=4"} {
		resp, err := http.Get(base + "/.ws?" + q)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Error == "" {
			t.Errorf("/.ws?%s: %d %q, want 400 with an error", q, resp.StatusCode, e.Error)
		}
	}
}

// TestWSListenOrder checks the order Firebase's server keeps: a listen's value before its
// "ok"; a write's change pushed to a listen of the same connection before the write's "ok";
// a multi-leaf change as one merge; nothing after an unlisten.
func TestWSListenOrder(t *testing.T) {
	base := startRTDB(t, nil)
	do(t, "PUT", base+"/l/a.json?ns=ord", `{"x":1,"y":{"z":2}}`)
	w := dialWS(t, base, "ord")
	s, _, before := w.reply(w.req("q", map[string]any{"p": "/l", "h": ""}))
	if s != "ok" || len(before) != 1 {
		t.Fatalf("listen: %s after %v, want ok after one data push", s, before)
	}
	if a, b := push(before[0]); a != "d" || b["p"] != "l" || !jsonEq(b["d"], map[string]any{"a": map[string]any{"x": 1, "y": map[string]any{"z": 2}}}) {
		t.Fatalf("first value: %s %v", a, b)
	}
	s, _, before = w.reply(w.req("p", map[string]any{"p": "/l/a/x", "d": 5}))
	if s != "ok" || len(before) != 1 {
		t.Fatalf("put: %s after %v, want ok after its data", s, before)
	}
	if a, b := push(before[0]); a != "d" || b["p"] != "l/a/x" || !jsonEq(b["d"], 5) {
		t.Errorf("put's change: %s %v, want d at l/a/x = 5", a, b)
	}
	// Replacing a subtree: new leaves and deleted ones in one revision, one merge of the
	// changed children (the hub's patch: y's only leaf went, so y is null).
	s, _, before = w.reply(w.req("p", map[string]any{"p": "/l/a", "d": map[string]any{"x": 6, "w": true}}))
	if s != "ok" || len(before) != 1 {
		t.Fatalf("subtree put: %s after %v", s, before)
	}
	if a, b := push(before[0]); a != "m" || b["p"] != "l/a" || !jsonEq(b["d"], map[string]any{"x": 6, "w": true, "y": nil}) {
		t.Errorf("subtree change: %s %v, want one merge at l/a", a, b)
	}
	// A leaf replaced by an object (a put of the object) and back.
	s, _, before = w.reply(w.req("p", map[string]any{"p": "/l/a/w", "d": map[string]any{"deep": 1}}))
	if a, b := push(before[0]); s != "ok" || a != "d" || b["p"] != "l/a/w" || !jsonEq(b["d"], map[string]any{"deep": 1}) {
		t.Errorf("leaf to object: %s %v", a, b)
	}
	s, _, before = w.reply(w.req("p", map[string]any{"p": "/l/a/w", "d": "leaf"}))
	if a, b := push(before[0]); s != "ok" || a != "d" || b["p"] != "l/a/w" || !jsonEq(b["d"], "leaf") {
		t.Errorf("object to leaf: %s %v", a, b)
	}
	// A leaf written above the listen leaves it null.
	w2 := dialWS(t, base, "ord")
	w2.call("q", map[string]any{"p": "/l/a/x", "h": ""})
	if s, _ := w.call("p", map[string]any{"p": "/l", "d": 7}); s != "ok" {
		t.Fatal(s)
	}
	for {
		a, b := push(w2.recv())
		if a == "d" && b["p"] == "l/a/x" && b["d"] == nil {
			break
		}
		if a == "" {
			continue
		}
		t.Fatalf("listen under a new leaf got %s %v, want d l/a/x null", a, b)
	}
	// After an unlisten, writes there push nothing: the next message is the write's ok.
	w.call("n", map[string]any{"p": "/l"})
	if s, _, before := w.reply(w.req("p", map[string]any{"p": "/l", "d": 8})); s != "ok" || len(before) != 0 {
		t.Errorf("after unlisten: %s after %v, want ok alone", s, before)
	}
}

// TestWSOrderAcrossListens: with several listens on one connection, a write of that connection
// reaches each of them before its "ok", and a transaction refused as stale is answered only
// after each was sent the value written meanwhile by another connection.
func TestWSOrderAcrossListens(t *testing.T) {
	base := startRTDB(t, nil)
	a, b := dialWS(t, base, "ord3"), dialWS(t, base, "ord3")
	paths := []string{"/x/y", "/x", "/"}
	for _, p := range paths {
		if s, _ := a.call("q", map[string]any{"p": p, "h": ""}); s != "ok" {
			t.Fatalf("listen %s: %s", p, s)
		}
	}
	// pushed counts the pushes before an answer that bring x/y to v (a put at x/y, or a put or
	// merge above it holding v there).
	pushed := func(before []map[string]any, v float64) int {
		n := 0
		for _, m := range before {
			a, body := push(m)
			if a == "" {
				continue
			}
			d := body["d"]
			for _, seg := range strings.Split(strings.TrimPrefix("x/y", fmt.Sprint(body["p"])), "/") {
				if seg == "" {
					continue
				}
				o, _ := d.(map[string]any)
				d = o[seg]
			}
			if d == v {
				n++
			}
		}
		return n
	}
	for i := range 5 {
		v := float64(100 + i)
		if s, _ := b.call("p", map[string]any{"p": "/x/y", "d": v}); s != "ok" {
			t.Fatal(s)
		}
		s, _, before := a.reply(a.req("p", map[string]any{"p": "/x/y", "d": 1, "h": ws.Hash(tree.Leaf("-1"))}))
		if s != "datastale" || pushed(before, v) != len(paths) {
			t.Fatalf("stale transaction %d: %s after %d pushes of %v, want datastale after %d", i, s, pushed(before, v), v, len(paths))
		}
		s, _, before = a.reply(a.req("p", map[string]any{"p": "/x/y", "d": v + 50}))
		if s != "ok" || pushed(before, v+50) != len(paths) {
			t.Fatalf("write %d: %s after %d pushes of %v, want ok after %d", i, s, pushed(before, v+50), v+50, len(paths))
		}
	}
}

// TestWSTransactionHash: a put with h applies only while the value has that SDK hash.
func TestWSTransactionHash(t *testing.T) {
	base := startRTDB(t, nil)
	w := dialWS(t, base, "tx")
	w.call("p", map[string]any{"p": "/c", "d": 7})
	if s, d := w.call("p", map[string]any{"p": "/c", "d": 8, "h": ws.Hash(tree.Leaf("6"))}); s != "datastale" || d == "" {
		t.Errorf("stale hash: %s %v, want datastale with a reason", s, d)
	}
	if s, _ := w.call("p", map[string]any{"p": "/c", "d": 8, "h": ws.Hash(tree.Leaf("7"))}); s != "ok" {
		t.Errorf("current hash: %s, want ok", s)
	}
	if s, _ := w.call("p", map[string]any{"p": "/new", "d": 1, "h": ""}); s != "ok" {
		t.Errorf("empty hash on an absent value: %s, want ok", s)
	}
	if r := do(t, "GET", base+"/.json?ns=tx", ""); !jsonEq(json.RawMessage(r.body), map[string]any{"c": 8, "new": 1}) {
		t.Errorf("stored %s", r.body)
	}
}

// TestWSFrames: a message split into numbered frames is joined, both ways.
func TestWSFrames(t *testing.T) {
	base := startRTDB(t, nil)
	w := dialWS(t, base, "fr")
	big := strings.Repeat("é", 20000) // 40000 bytes: three frames
	b, _ := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": 1, "a": "p", "b": map[string]any{"p": "/big", "d": big}}})
	parts := []string{string(b[:10000]), string(b[10000:30000]), string(b[30000:])}
	w.sendRaw(strconv.Itoa(len(parts)))
	for _, p := range parts {
		w.c.WriteMessage(websocket.TextMessage, []byte(p)) // byte cuts: frames join before decoding
	}
	w.next = 1
	if s, _, _ := w.reply(1); s != "ok" {
		t.Fatalf("multi-frame put: %s", s)
	}
	w.sendRaw("0") // keep-alive: no answer, no harm
	if s, d := w.call("g", map[string]any{"p": "/big", "q": map[string]any{}}); s != "ok" || d != big {
		t.Errorf("get of a multi-frame value: %s, %d bytes", s, len(fmt.Sprint(d)))
	}
}

// TestWSOnDisconnectAndClose: onDisconnect writes run when the client goes, and Close ends
// connections and their listens without leaking (TestMain checks goroutines).
func TestWSOnDisconnectAndClose(t *testing.T) {
	base := startRTDB(t, nil)
	w := dialWS(t, base, "od")
	w.call("o", map[string]any{"p": "/p/u", "d": "offline"})
	w.call("om", map[string]any{"p": "/p", "d": map[string]any{"v/left": true}})
	w.call("o", map[string]any{"p": "/p/c/x", "d": 1})
	w.call("oc", map[string]any{"p": "/p/c"})
	w.call("q", map[string]any{"p": "/p", "h": ""})
	w.c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r := do(t, "GET", base+"/p.json?ns=od", "")
		if jsonEq(json.RawMessage(r.body), map[string]any{"u": "offline", "v": map[string]any{"left": true}}) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("onDisconnect writes: %s", r.body)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
