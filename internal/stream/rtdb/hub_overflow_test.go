package rtdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/sse"
)

// slowHubEnv is a REST server for writes and, on the same kv, a hub whose listeners queue at
// most limit bytes.
func slowHubEnv(t *testing.T, limit int) (base string, h *hub.Hub) {
	t.Helper()
	kvURL := kvtest.URL(t)
	base = startRTDB(t, func(c *Config) { c.KVEndpoints = []string{kvURL} })
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvURL}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h = hub.New(s.kv, hub.Config{Prefix: cfg.Prefix, ListenerBufferBytes: limit})
	t.Cleanup(h.Close)
	return base, h
}

// next takes the queued events of sub, waiting at most 20 s for some.
func next(t *testing.T, sub *hub.Subscription) []*hub.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// apply applies evs to state as a Firebase client does; it returns the state and the bytes
// of event data received.
func apply(t *testing.T, state any, evs []*hub.Event) (any, int) {
	t.Helper()
	n := 0
	for _, e := range evs {
		var err error
		if state, err = applyEvent(state, sse.StreamEvent{Type: e.Type, Data: sseData(e)}); err != nil {
			t.Fatal(err)
		}
		n += len(e.Data)
	}
	return state, n
}

// current is the value at path as a GET returns it (with the query string qs), decoded.
func current(t *testing.T, base, path string, qs ...string) any {
	t.Helper()
	r := do(t, "GET", base+path+".json"+strings.Join(qs, ""), "")
	if r.code != 200 {
		t.Fatalf("GET %s: %d %s", path, r.code, r.body)
	}
	return decodeJSON(t, r.body)
}

// keepUp reads fast until its state equals the database's value at path (so the hub has
// dispatched every write made so far to every listener of path).
func keepUp(t *testing.T, fast *hub.Subscription, state any, base, path string) any {
	t.Helper()
	want := current(t, base, path)
	for !reflect.DeepEqual(state, want) {
		state, _ = apply(t, state, next(t, fast))
	}
	return state
}

// fill writes n children k0..k<n-1> of size bytes under path, 50 per PATCH.
func fill(t *testing.T, base, path string, n, size int) {
	t.Helper()
	v, _ := json.Marshal(strings.Repeat("v", size))
	for i := 0; i < n; i += 50 {
		var b strings.Builder
		b.WriteByte('{')
		for j := i; j < min(i+50, n); j++ {
			if j > i {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":%s`, j, v)
		}
		b.WriteByte('}')
		if r := do(t, "PATCH", base+path+".json", b.String()); r.code != 200 {
			t.Fatalf("fill: %d %s", r.code, r.body)
		}
	}
}

// TestHubSlowListenerGetsTouchedChildren: a listener that stops reading while a large node
// changes in a few children, past its buffer, gets one patch of exactly the children the
// missed writes touched (null for the deleted ones) — bytes in proportion to the change, not to
// the node — and ends in the database's state.
func TestHubSlowListenerGetsTouchedChildren(t *testing.T) {
	const size = 1 << 10
	base, h := slowHubEnv(t, 4<<10)
	fill(t, base, "/big", 300, size)
	ctx := context.Background()
	slow, err := h.Subscribe(ctx, "default", []string{"big"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := h.Subscribe(ctx, "default", []string{"big"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	slowState, _ := apply(t, nil, next(t, slow)) // the first put; then slow stops reading
	enc, _ := json.Marshal(slowState)
	nodeBytes := len(enc)
	if nodeBytes < 300*size {
		t.Fatalf("setup: the node has %d bytes", nodeBytes)
	}
	val := func(i int) string {
		b, _ := json.Marshal(fmt.Sprintf("%d:%s", i, strings.Repeat("w", size)))
		return string(b)
	}
	touched := map[string]bool{}
	for i := range 20 { // replaced, several twice
		do(t, "PUT", fmt.Sprintf("%s/big/k%d.json", base, i%15), val(i))
		touched[fmt.Sprintf("k%d", i%15)] = true
	}
	for i := 100; i < 105; i++ { // deleted
		do(t, "DELETE", fmt.Sprintf("%s/big/k%d.json", base, i), "")
		touched[fmt.Sprintf("k%d", i)] = true
	}
	for i := 0; i < 10; i++ { // added
		do(t, "PUT", fmt.Sprintf("%s/big/n%d.json", base, i), val(i))
		touched[fmt.Sprintf("n%d", i)] = true
	}
	do(t, "PATCH", base+"/big.json", `{"k200": {"deep": 1}, "k201": null}`) // one multi-child patch
	touched["k200"], touched["k201"] = true, true
	do(t, "PUT", base+"/big/k202/deep/er.json", `2`) // a write below a child sends that child
	touched["k202"] = true

	keepUp(t, fast, nil, base, "/big")
	if slow.Overflows() == 0 {
		t.Fatal("the slow listener's queue did not overflow")
	}
	evs := next(t, slow)
	if len(evs) != 1 || evs[0].Type != "patch" || evs[0].Path != "/" {
		t.Fatalf("slow listener got %d events (first %s %s), want one patch at /", len(evs), evs[0].Type, evs[0].Path)
	}
	var kids map[string]json.RawMessage
	if err := json.Unmarshal(evs[0].Data, &kids); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for k := range kids {
		got = append(got, k)
	}
	for k := range touched {
		want = append(want, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("patch children %v, want the touched ones %v", got, want)
	}
	for i := 100; i < 105; i++ {
		if v := string(kids[fmt.Sprintf("k%d", i)]); v != "null" {
			t.Errorf("deleted child k%d arrived as %s, want null", i, v)
		}
	}
	slowState, n := apply(t, slowState, evs)
	if n > nodeBytes/5 {
		t.Errorf("slow listener received %d bytes for a node of %d, want far fewer", n, nodeBytes)
	}
	if want := current(t, base, "/big"); !reflect.DeepEqual(slowState, want) {
		t.Fatal("slow listener's state differs from the database's")
	}
	t.Logf("node %d bytes; slow listener received %d bytes in one patch of %d children", nodeBytes, n, len(kids))

	// The listener is back to single events.
	do(t, "PUT", base+"/big/k1.json", `1`)
	if evs := next(t, slow); len(evs) != 1 || evs[0].Path != "/k1" || string(evs[0].Data) != "1" {
		t.Fatalf("after the patch: %d events, first %s %s", len(evs), evs[0].Path, evs[0].Data)
	}
}

// TestHubSlowListenerFallsBackToFullPut: the folded queue is a full put of the current value
// when a missed write replaced the listened node itself, when the listener has a query (its
// result is re-sent), and when the missed children's names outgrow the buffer.
func TestHubSlowListenerFallsBackToFullPut(t *testing.T) {
	const limit = 4 << 10
	base, h := slowHubEnv(t, limit)
	ctx := context.Background()
	q, err := hub.ParseQuery(url.Values{"orderBy": {`"$key"`}, "limitToFirst": {"3"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		query *hub.Query
		write func(path string)
	}{
		{"put at the node", nil, func(path string) {
			fill(t, base, path, 20, 1<<10)
			do(t, "PUT", base+path+".json", `"a leaf"`) // the node itself replaced (a put at "/")
			do(t, "PUT", base+path+".json", `{"x": {"y": 1}, "z": 2}`)
			do(t, "PUT", base+path+"/w.json", `3`)
		}},
		{"query", q, func(path string) {
			for i := range 30 { // children in the query's result, each changed ten times
				v, _ := json.Marshal(fmt.Sprintf("%d:%s", i, strings.Repeat("q", 1<<10)))
				do(t, "PUT", fmt.Sprintf("%s%s/a%d.json", base, path, i%3), string(v))
			}
		}},
		{"too many children", nil, func(path string) {
			fill(t, base, path, 20, 1<<10) // overflow
			for i := range 3 {             // then more names than the buffer holds
				var b strings.Builder
				b.WriteByte('{')
				for j := range 50 {
					if j > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `"m%d_%d":1`, i, j)
				}
				b.WriteByte('}')
				do(t, "PATCH", base+path+".json", b.String())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/" + strings.ReplaceAll(tc.name, " ", "-")
			do(t, "PUT", base+path+".json", `{"a": 1}`)
			slow, err := h.Subscribe(ctx, "default", []string{path[1:]}, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			fast, err := h.Subscribe(ctx, "default", []string{path[1:]}, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Close()
			next(t, slow)
			fastState, _ := apply(t, nil, next(t, fast))
			tc.write(path)
			want := current(t, base, path)
			if tc.query != nil {
				want = current(t, base, path, `?orderBy="$key"&limitToFirst=3`)
			}
			for !reflect.DeepEqual(fastState, want) {
				fastState, _ = apply(t, fastState, next(t, fast))
			}
			if slow.Overflows() == 0 {
				t.Fatal("no overflow")
			}
			evs := next(t, slow)
			if len(evs) != 1 || evs[0].Type != "put" || evs[0].Path != "/" {
				t.Fatalf("got %d events (first %s %s), want one full put", len(evs), evs[0].Type, evs[0].Path)
			}
			if got, _ := apply(t, nil, evs); !reflect.DeepEqual(got, want) {
				t.Fatalf("full put %s, want the current value", evs[0].Data)
			}
		})
	}
}

// TestHubSlowListenerUnderConcurrentWrites: writers put and delete children concurrently while
// a listener reads only now and then (its queue folds each time); after the writes it reaches
// the database's state.
func TestHubSlowListenerUnderConcurrentWrites(t *testing.T) {
	base, h := slowHubEnv(t, 2<<10)
	ctx := context.Background()
	slow, err := h.Subscribe(ctx, "default", []string{"cw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	state, _ := apply(t, nil, next(t, slow))
	const writers, each = 4, 45
	pad := strings.Repeat("p", 512)
	thirds := make(chan struct{}, writers*3)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				k := fmt.Sprintf("%s/cw/k%d.json", base, (w*7+i*3)%40)
				if i%5 == 4 {
					do(t, "DELETE", k, "")
				} else {
					do(t, "PUT", k, fmt.Sprintf(`{"w":%d,"i":%d,"pad":%q}`, w, i, pad))
				}
				if (i+1)%(each/3) == 0 {
					thirds <- struct{}{}
				}
			}
		}()
	}
	for third := range 3 { // read once per third of the writes: the queue overflows in between
		for range writers {
			<-thirds
		}
		if third < 2 {
			state, _ = apply(t, state, next(t, slow))
		}
	}
	for range writers {
		<-done
	}
	want := current(t, base, "/cw")
	for !reflect.DeepEqual(state, want) {
		state, _ = apply(t, state, next(t, slow))
	}
	if slow.Overflows() == 0 {
		t.Error("the queue never overflowed")
	}
}
