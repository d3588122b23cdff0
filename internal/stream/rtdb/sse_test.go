package rtdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/stream/rtdb/sse"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/testenv"
)

// sseClient is a listener over HTTP: its events arrive on ev (keep-alives included).
type sseClient struct {
	ev   chan sse.StreamEvent
	resp *http.Response
}

func listen(t *testing.T, url string, hdr ...string) *sseClient {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		t.Fatalf("listen %s: status %d", url, resp.StatusCode)
	}
	return readSSE(t, resp, 100000)
}

// next is the next event other than keep-alive; ok false when the stream ended.
func (c *sseClient) next(t *testing.T) (sse.StreamEvent, bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e, ok := <-c.ev:
			if !ok {
				return e, false
			}
			if e.Type == "keep-alive" {
				continue
			}
			return e, true
		case <-deadline:
			t.Fatal("no event within 20 s")
		}
	}
}

// expect checks the next event is typ with data {"path": path, "data": data} (data compared as JSON).
func (c *sseClient) expect(t *testing.T, typ, path, data string) {
	t.Helper()
	e, ok := c.next(t)
	if !ok {
		t.Fatalf("stream ended, want %s %s %s", typ, path, data)
	}
	var got struct {
		Path string
		Data any
	}
	if err := json.Unmarshal(e.Data, &got); err != nil {
		t.Fatalf("event data %q: %v", e.Data, err)
	}
	var want any
	if err := json.Unmarshal([]byte(data), &want); err != nil {
		t.Fatal(err)
	}
	if e.Type != typ || got.Path != path || !reflect.DeepEqual(got.Data, want) {
		t.Fatalf("got %s %s, want %s {path:%s data:%s}", e.Type, e.Data, typ, path, data)
	}
}

// applyEvent is what a Firebase client does with a put or patch: the state after it.
func applyEvent(state any, e sse.StreamEvent) (any, error) {
	var m struct {
		Path string
		Data any
	}
	if err := json.Unmarshal(e.Data, &m); err != nil {
		return nil, err
	}
	segs, _ := tree.ParsePath(m.Path)
	switch e.Type {
	case "put":
		return setAt(state, segs, m.Data), nil
	case "patch":
		kids, ok := m.Data.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("patch data is not an object: %s", e.Data)
		}
		for k, v := range kids {
			state = setAt(state, append(append([]string(nil), segs...), k), v)
		}
		return state, nil
	}
	return nil, fmt.Errorf("unexpected event %s", e.Type)
}

func setAt(state any, segs []string, v any) any {
	if arr, ok := v.([]any); ok { // the client keeps arrays as index-keyed objects too
		m := map[string]any{}
		for i, e := range arr {
			if e != nil {
				m[fmt.Sprint(i)] = e
			}
		}
		v = m
	}
	if len(segs) == 0 {
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			return nil
		}
		return v
	}
	m, ok := state.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	if c := setAt(m[segs[0]], segs[1:], v); c == nil {
		delete(m, segs[0])
	} else {
		m[segs[0]] = c
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func TestSSEEventShapes(t *testing.T) {
	base := startRTDB(t, nil)
	do(t, "PUT", base+"/records/old.json", `{"x":0}`)
	parent := listen(t, base+"/records.json")
	parent.expect(t, "put", "/", `{"old":{"x":0}}`)
	child := listen(t, base+"/records/b.json")
	child.expect(t, "put", "/", `null`)

	do(t, "PUT", base+"/records/a.json", `{"x":1,"y":"one"}`)
	parent.expect(t, "put", "/a", `{"x":1,"y":"one"}`)
	// A multi-path PATCH is one event: a patch naming every child it wrote.
	do(t, "PATCH", base+"/records.json", `{"b":{"x":2},"c/x":3}`)
	parent.expect(t, "patch", "/", `{"b":{"x":2},"c":{"x":3}}`)
	child.expect(t, "put", "/x", `2`)
	// A write elsewhere is not seen; a write below is, at its relative path.
	do(t, "PUT", base+"/other.json", `1`)
	do(t, "PUT", base+"/records/b/x.json", `22`)
	parent.expect(t, "put", "/b/x", `22`)
	child.expect(t, "put", "/x", `22`)
	// A one-field record appears and vanishes whole.
	do(t, "PUT", base+"/records/d.json", `{"only":1}`)
	parent.expect(t, "put", "/d", `{"only":1}`)
	do(t, "DELETE", base+"/records/d/only.json", ``)
	parent.expect(t, "put", "/d", `null`)
	// Updating two fields of one record: a patch of that record.
	do(t, "PATCH", base+"/records/a.json", `{"x":10,"y":"ten"}`)
	parent.expect(t, "patch", "/a", `{"x":10,"y":"ten"}`)
	// Writing the same value again changes nothing and sends nothing; deletes are puts of null.
	do(t, "PUT", base+"/records/a/x.json", `10`)
	do(t, "DELETE", base+"/records/a.json", ``)
	parent.expect(t, "put", "/a", `null`)
	// A leaf written above the child's path makes its value null.
	do(t, "PUT", base+"/records.json", `"flat"`)
	parent.expect(t, "put", "/", `"flat"`)
	child.expect(t, "put", "/", `null`)
	do(t, "PUT", base+"/records/b.json", `{"z":[1,2]}`)
	parent.expect(t, "put", "/", `{"b":{"z":[1,2]}}`)
	child.expect(t, "put", "/z", `[1,2]`)
}

func TestSSEEveryWriteInOrder(t *testing.T) {
	base := startRTDB(t, nil)
	l := listen(t, base+"/c.json")
	l.expect(t, "put", "/", `null`)
	const n = 200
	for i := 0; i < n; i++ {
		do(t, "PUT", base+"/c/n.json", fmt.Sprint(i))
	}
	for i := 0; i < n; i++ {
		l.expect(t, "put", "/n", fmt.Sprint(i))
	}
}

// TestSSEConcurrentWritersConverge: many writers at once; a listener's state, built from its
// events as a Firebase client builds it, ends equal to the database's value.
func TestSSEConcurrentWritersConverge(t *testing.T) {
	base := startRTDB(t, nil)
	l := listen(t, base+"/w.json")
	first, _ := l.next(t)
	state, err := applyEvent(nil, first)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				switch i % 3 {
				case 0:
					do(t, "PUT", fmt.Sprintf("%s/w/u%d.json", base, w), fmt.Sprintf(`{"i":%d,"w":%d}`, i, w))
				case 1:
					do(t, "PATCH", base+"/w.json", fmt.Sprintf(`{"u%d/i":%d,"shared/w%d":%d}`, w, i, w, i))
				case 2:
					do(t, "DELETE", fmt.Sprintf("%s/w/shared/w%d.json", base, w), "")
				}
			}
		}()
	}
	wg.Wait()
	var want any
	json.Unmarshal([]byte(do(t, "GET", base+"/w.json", "").body), &want)
	want = setAt(nil, nil, want)
	testenv.Eventually(t, 20*time.Second, "listener state equals the database", func() bool {
		for {
			select {
			case e := <-l.ev:
				if e.Type == "keep-alive" {
					continue
				}
				if state, err = applyEvent(state, e); err != nil {
					t.Fatal(err)
				}
				continue
			default:
			}
			return reflect.DeepEqual(state, want)
		}
	})
}

func TestSSEQueryListener(t *testing.T) {
	base := startRTDB(t, nil)
	do(t, "PUT", base+"/q.json", `{"a":1,"b":2}`)
	l := listen(t, base+`/q.json?orderBy="$key"&limitToLast=2`)
	l.expect(t, "put", "/", `{"a":1,"b":2}`)
	do(t, "PUT", base+"/q/c.json", `3`) // c enters, a leaves
	l.expect(t, "patch", "/", `{"a":null,"c":3}`)
	do(t, "PUT", base+"/q/a.json", `9`) // outside the window: nothing
	do(t, "PUT", base+"/q/b.json", `20`)
	l.expect(t, "put", "/b", `20`)
	if r := do(t, "GET", base+`/q.json?orderBy=bad`, "", "Accept", "text/event-stream"); r.code != 400 {
		t.Fatalf("bad query: %d %s", r.code, r.body)
	}
}

func TestSSEManyListeners(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	base := startRTDB(t, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	t.Cleanup(tr.CloseIdleConnections)
	ls := make([]*sseClient, n)
	for i := range ls {
		ls[i] = listenWith(t, tr, base+"/many.json")
	}
	for _, l := range ls {
		l.expect(t, "put", "/", `null`)
	}
	const writes = 10
	for i := 0; i < writes; i++ {
		do(t, "PUT", base+"/many/v.json", fmt.Sprint(i))
	}
	for _, l := range ls {
		for i := 0; i < writes; i++ {
			l.expect(t, "put", "/v", fmt.Sprint(i))
		}
	}
}

func listenWith(t *testing.T, tr *http.Transport, url string) *sseClient {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readSSE(t, resp, 64)
}

// readSSE reads resp's events onto a client's channel (of capacity buf) until the stream ends;
// the body is closed and the reader waited for at cleanup.
func readSSE(t *testing.T, resp *http.Response, buf int) *sseClient {
	c := &sseClient{ev: make(chan sse.StreamEvent, buf), resp: resp}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.ev)
		rd := sse.NewEventReader(resp.Body)
		for {
			e, err := rd.Next()
			if err != nil {
				return
			}
			c.ev <- e
		}
	}()
	t.Cleanup(func() { resp.Body.Close(); <-done })
	return c
}

// TestSSEReconnectAfterServerRestart: the realtime database restarts (same address, same kv);
// the stream ends, the client reconnects as Firebase's does and its first event, a full put,
// holds every write, the ones made while it was away included.
func TestSSEReconnectAfterServerRestart(t *testing.T) {
	kvURL := kvtest.URL(t)
	addr := testenv.FreeAddr(t)
	start := func() func() {
		cfg := DefaultConfig()
		cfg.KVEndpoints = []string{kvURL}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var ln net.Listener
		testenv.EventuallyNoError(t, 10*time.Second, "listen again on "+addr, func() (err error) {
			ln, err = net.Listen("tcp", addr)
			return err
		})
		hs := &http.Server{Handler: s}
		hs.RegisterOnShutdown(s.hub.Close)
		go hs.Serve(ln)
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			hs.Shutdown(ctx)
			s.Close()
		}
	}
	stop := start()
	base := "http://" + addr
	l := listen(t, base+"/r.json")
	l.expect(t, "put", "/", `null`)
	do(t, "PUT", base+"/r/a.json", `1`)
	l.expect(t, "put", "/a", `1`)
	stop()
	if _, ok := l.next(t); ok {
		t.Fatal("stream still open after the server stopped")
	}
	// Written through another server while the first is down.
	other := startRTDB(t, func(c *Config) { c.KVEndpoints = []string{kvURL} })
	do(t, "PUT", other+"/r/b.json", `2`)
	stop = start()
	defer stop()
	l2 := listen(t, base+"/r.json")
	l2.expect(t, "put", "/", `{"a":1,"b":2}`)
	do(t, "PUT", base+"/r/c.json", `3`)
	l2.expect(t, "put", "/c", `3`)
}

func TestSSEKeepAliveAndAuth(t *testing.T) {
	revoke := make(chan struct{})
	base := startRTDB(t, func(c *Config) {
		c.Stream.KeepAlive = 50 * time.Millisecond
		c.Stream.ReadAuth = func(r *http.Request, ns string, path []string) (sse.ReadGrant, error) {
			switch r.URL.Query().Get("auth") {
			case "expiring":
				return sse.ReadGrant{Allowed: true, Expires: time.Now().Add(300 * time.Millisecond)}, nil
			case "revocable":
				return sse.ReadGrant{Allowed: true, Revoked: revoke}, nil
			case "ok":
				return sse.ReadGrant{Allowed: true}, nil
			}
			return sse.ReadGrant{}, nil
		}
	})
	if r := do(t, "GET", base+"/a.json", "", "Accept", "text/event-stream"); r.code != 401 || !strings.Contains(r.body, "Permission denied") {
		t.Fatalf("no auth: %d %s", r.code, r.body)
	}
	l := listen(t, base+"/a.json?auth=ok")
	l.expect(t, "put", "/", `null`)
	for e := range l.ev {
		if e.Type == "keep-alive" && string(e.Data) == "null" {
			break
		}
		t.Fatalf("want keep-alive, got %s %s", e.Type, e.Data)
	}
	ex := listen(t, base+"/a.json?auth=expiring")
	ex.expect(t, "put", "/", `null`)
	if e, _ := ex.next(t); e.Type != "auth_revoked" {
		t.Fatalf("want auth_revoked, got %q %s", e.Type, e.Data)
	}
	if _, ok := ex.next(t); ok {
		t.Fatal("stream open after auth_revoked")
	}
	rv := listen(t, base+"/a.json?auth=revocable")
	rv.expect(t, "put", "/", `null`)
	close(revoke)
	if e, _ := rv.next(t); e.Type != "cancel" || string(e.Data) != "null" {
		t.Fatalf("want cancel, got %q %s", e.Type, e.Data)
	}
}

// TestSSEKVRestart: the kv store restarts with its data under a listening server; the hub's watch
// resumes after the last revision it saw, and the listener hears the writes made afterwards.
func TestSSEKVRestart(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Name, cfg.DataDir = "test", t.TempDir()
	cfg.ListenClientURLs = []string{"http://" + testenv.FreeAddr(t)}
	ks, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kvURL := ks.ClientURLs()[0]
	base := startRTDB(t, func(c *Config) { c.KVEndpoints = []string{kvURL} })
	l := listen(t, base+"/k.json")
	l.expect(t, "put", "/", `null`)
	do(t, "PUT", base+"/k/a.json", `1`)
	l.expect(t, "put", "/a", `1`)
	ks.Close()
	testenv.EventuallyNoError(t, 20*time.Second, "restart kv on its address", func() (err error) {
		ks, err = server.Start(cfg)
		return err
	})
	t.Cleanup(func() { ks.Close() })
	testenv.EventuallyNoError(t, 20*time.Second, "write after the kv restart", func() error {
		if r := do(t, "PUT", base+"/k/b.json", `2`); r.code != 200 {
			return fmt.Errorf("status %d: %s", r.code, r.body)
		}
		return nil
	})
	l.expect(t, "put", "/b", `2`)
}

// TestSSERootListener: a listener on the database's root, which may itself be a leaf.
func TestSSERootListener(t *testing.T) {
	base := startRTDB(t, nil)
	l := listen(t, base+"/.json?ns=rootdb")
	l.expect(t, "put", "/", `null`)
	do(t, "PUT", base+"/.json?ns=rootdb", `5`)
	l.expect(t, "put", "/", `5`)
	do(t, "PUT", base+"/a/b.json?ns=rootdb", `1`)
	l.expect(t, "put", "/", `{"a":{"b":1}}`)
	do(t, "PUT", base+"/a/b.json", `2`) // another database
	do(t, "PATCH", base+"/.json?ns=rootdb", `{"a/c":3,"d":4}`)
	l.expect(t, "patch", "/", `{"a":{"b":1,"c":3},"d":4}`)
}
