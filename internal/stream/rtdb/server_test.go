package rtdb

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.ExitUnlessLeaked(code, "stream/rtdb.", "etcd/client/v3.", "internal/kv/")
}

// startRTDB starts a realtime database on a fresh kv and returns its base URL.
func startRTDB(t *testing.T, edit func(*Config)) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvtest.URL(t)}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs.URL
}

type reply struct {
	code int
	body string
	hdr  http.Header
}

func do(t *testing.T, method, url, body string, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return reply{code: -1}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil { // Errorf, not Fatal: do runs in the tests' goroutines too
		t.Errorf("%s %s: %v", method, url, err)
		return reply{code: -1}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b), resp.Header}
}

func TestRESTSemantics(t *testing.T) {
	base := startRTDB(t, nil)
	steps := []struct {
		method, path, body string
		code               int
		want               string // the response body
	}{
		{"GET", "/.json", "", 200, `null`},
		{"PUT", "/users/ada.json", `{"name":"Ada","born":1815,"tags":{"math":true}}`, 200, `{"born":1815,"name":"Ada","tags":{"math":true}}`},
		{"GET", "/users.json", "", 200, `{"ada":{"born":1815,"name":"Ada","tags":{"math":true}}}`},
		{"GET", "/users/ada/name.json", "", 200, `"Ada"`},
		{"GET", "/users/nobody.json", "", 200, `null`},
		// PUT replaces: the old children go.
		{"PUT", "/users/ada.json", `{"name":"Ada L."}`, 200, `{"name":"Ada L."}`},
		{"GET", "/users/ada.json", "", 200, `{"name":"Ada L."}`},
		// PATCH updates the named children only; multi-path keys reach deeper.
		{"PATCH", "/users.json", `{"ada/born":1815,"grace/name":"Grace"}`, 200, `{"ada/born":1815,"grace/name":"Grace"}`},
		{"GET", "/users.json", "", 200, `{"ada":{"born":1815,"name":"Ada L."},"grace":{"name":"Grace"}}`},
		{"GET", "/users.json?shallow=true", "", 200, `{"ada":true,"grace":true}`},
		{"GET", "/users/nobody.json?shallow=true", "", 200, `null`},
		// null in a PATCH deletes that child.
		{"PATCH", "/users/ada.json", `{"born":null}`, 200, `{}`},
		{"GET", "/users/ada.json", "", 200, `{"name":"Ada L."}`},
		// A leaf replaced by children and back: never both.
		{"PUT", "/users/ada/name/first.json", `"Ada"`, 200, `"Ada"`},
		{"GET", "/users/ada.json", "", 200, `{"name":{"first":"Ada"}}`},
		{"PUT", "/users/ada.json", `"just a string"`, 200, `"just a string"`},
		{"GET", "/users.json", "", 200, `{"ada":"just a string","grace":{"name":"Grace"}}`},
		// Writing null deletes; empty objects vanish.
		{"PUT", "/users/ada.json", `null`, 200, `null`},
		{"PUT", "/users/empty.json", `{"a":{},"b":{"c":null}}`, 200, `null`},
		{"GET", "/users.json", "", 200, `{"grace":{"name":"Grace"}}`},
		{"DELETE", "/users/grace.json", "", 200, `null`},
		{"GET", "/.json", "", 200, `null`},
		// Arrays are stored as index-keyed objects and read back as arrays.
		{"PUT", "/list.json", `[1,"two",null,{"x":3}]`, 200, `[1,"two",null,{"x":3}]`},
		{"GET", "/list/1.json", "", 200, `"two"`},
		{"GET", "/list.json?shallow=true", "", 200, `[true,true,null,true]`},
		// Numbers are canonical; .value unwraps and .priority is dropped.
		{"PUT", "/n.json", `{"a":1.0,"b":2.5e0,"c":{".value":7,".priority":1}}`, 200, `{"a":1,"b":2.5,"c":7}`},
		{"GET", "/n.json?shallow=true", "", 200, `{"a":true,"b":true,"c":true}`},
		{"GET", "/n/a.json?shallow=true", "", 200, `1`},
		{"GET", "/n/a.json?format=export", "", 200, `1`},
		{"PUT", "/n.json?print=silent", `5`, 204, ``},
		{"GET", "/n.json?print=pretty", "", 200, `5`},
		{"PUT", "/p.json", `{"a":1}`, 200, `{"a":1}`},
		{"GET", "/p.json?print=pretty", "", 200, "{\n  \"a\": 1\n}"},
		// Percent-escaped keys; ns selects a separate database.
		{"PUT", "/k%20x.json?ns=other", `1`, 200, `1`},
		{"GET", "/.json?ns=other", "", 200, `{"k x":1}`},
		{"GET", "/k%20x.json", "", 200, `null`},
	}
	for i, s := range steps {
		r := do(t, s.method, base+s.path, s.body)
		if r.code != s.code || r.body != s.want {
			t.Fatalf("step %d: %s %s %s: got %d %s, want %d %s", i, s.method, s.path, s.body, r.code, r.body, s.code, s.want)
		}
	}
}

func TestPostPushIDsOrdered(t *testing.T) {
	base := startRTDB(t, nil)
	var names []string
	for i := range 30 {
		r := do(t, "POST", base+"/msgs.json", `{"i":`+string(rune('0'+i%10))+`}`)
		var got struct{ Name string }
		if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil || len(got.Name) != 20 {
			t.Fatalf("POST: %d %s", r.code, r.body)
		}
		names = append(names, got.Name)
	}
	if !sort.StringsAreSorted(names) {
		t.Fatalf("push ids not in creation order: %q", names)
	}
	var all map[string]map[string]int
	r := do(t, "GET", base+"/msgs.json", "")
	if err := json.Unmarshal([]byte(r.body), &all); err != nil || len(all) != 30 {
		t.Fatalf("GET: %v %d children", err, len(all))
	}
	for i, n := range names {
		if all[n]["i"] != i%10 {
			t.Fatalf("%s: %v, want i=%d", n, all[n], i%10)
		}
	}
}

func TestETagIfMatch(t *testing.T) {
	base := startRTDB(t, nil)
	do(t, "PUT", base+"/counter.json", `{"n":1}`)
	r := do(t, "GET", base+"/counter.json", "", "X-Firebase-ETag", "true")
	tag := r.hdr.Get("ETag")
	if r.code != 200 || tag == "" {
		t.Fatalf("GET with X-Firebase-ETag: %d %q", r.code, tag)
	}
	if r2 := do(t, "GET", base+"/counter.json", ""); r2.hdr.Get("ETag") != "" {
		t.Fatal("ETag without X-Firebase-ETag")
	}
	// A racing writer changes the value: the stale if-match gets 412 with the current value.
	do(t, "PUT", base+"/counter/n.json", `2`)
	r = do(t, "PUT", base+"/counter.json", `{"n":100}`, "if-match", tag)
	if r.code != 412 || r.body != `{"n":2}` || r.hdr.Get("ETag") == "" || r.hdr.Get("ETag") == tag {
		t.Fatalf("stale if-match: %d %s etag %q", r.code, r.body, r.hdr.Get("ETag"))
	}
	// Retrying with the returned ETag succeeds.
	r = do(t, "PUT", base+"/counter.json", `{"n":3}`, "if-match", r.hdr.Get("ETag"))
	if r.code != 200 || r.body != `{"n":3}` {
		t.Fatalf("fresh if-match: %d %s", r.code, r.body)
	}
	// A deletion under the path changes the ETag too.
	do(t, "PUT", base+"/counter/m.json", `1`)
	tag = do(t, "GET", base+"/counter.json", "", "X-Firebase-ETag", "true").hdr.Get("ETag")
	do(t, "DELETE", base+"/counter/m.json", "")
	if r := do(t, "PUT", base+"/counter.json", `0`, "if-match", tag); r.code != 412 {
		t.Fatalf("if-match after a deletion: %d %s", r.code, r.body)
	}
	// A write asked for an ETag answers the one a GET would give now.
	w := do(t, "PUT", base+"/counter.json", `{"n":7}`, "X-Firebase-ETag", "true")
	if g := do(t, "GET", base+"/counter.json", "", "X-Firebase-ETag", "true"); w.hdr.Get("ETag") == "" || w.hdr.Get("ETag") != g.hdr.Get("ETag") {
		t.Fatalf("PUT answered ETag %q, GET %q", w.hdr.Get("ETag"), g.hdr.Get("ETag"))
	}
	// The ETag of null: a transaction creating a node.
	tag = do(t, "GET", base+"/fresh.json", "", "X-Firebase-ETag", "true").hdr.Get("ETag")
	if r := do(t, "PUT", base+"/fresh.json", `true`, "if-match", tag); r.code != 200 {
		t.Fatalf("if-match on null: %d %s", r.code, r.body)
	}
}

// TestTransactionsRace runs the Admin SDK's transaction loop (GET with ETag, PUT with if-match,
// on 412 retry with the returned value and ETag) from 10 clients: no increment is lost.
func TestTransactionsRace(t *testing.T) {
	base := startRTDB(t, nil)
	const clients, each = 10, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	for range clients {
		wg.Go(func() {
			for range each {
				r := do(t, "GET", base+"/tx.json", "", "X-Firebase-ETag", "true")
				for {
					var n int
					json.Unmarshal([]byte(r.body), &n)
					nr := do(t, "PUT", base+"/tx.json", itoa(n+1), "if-match", r.hdr.Get("ETag"))
					if nr.code == 200 {
						break
					}
					if nr.code != 412 {
						t.Errorf("PUT: %d %s", nr.code, nr.body)
						return
					}
					mu.Lock()
					conflicts++
					mu.Unlock()
					r = nr
				}
			}
		})
	}
	wg.Wait()
	if r := do(t, "GET", base+"/tx.json", ""); r.body != itoa(clients*each) {
		t.Fatalf("total %s, want %d (%d conflicts)", r.body, clients*each, conflicts)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestServerValues(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	base := startRTDB(t, func(c *Config) { c.Now = func() time.Time { return now } })
	r := do(t, "PUT", base+"/a.json", `{"at":{".sv":"timestamp"},"n":{".sv":{"increment":2}}}`)
	if r.code != 200 || r.body != `{"at":1700000000123,"n":2}` {
		t.Fatalf("PUT: %d %s", r.code, r.body)
	}
	r = do(t, "PATCH", base+"/a.json", `{"n":{".sv":{"increment":-0.5}}}`)
	if r.code != 200 || r.body != `{"n":1.5}` {
		t.Fatalf("PATCH increment: %d %s", r.code, r.body)
	}
	do(t, "PUT", base+"/s.json", `"text"`)
	if r := do(t, "PUT", base+"/s.json", `{".sv":{"increment":3}}`); r.body != `3` {
		t.Fatalf("increment of a string: %s, want 3", r.body)
	}
}

func TestIncrementConcurrent(t *testing.T) {
	base := startRTDB(t, nil)
	const clients, each = 20, 10
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range each {
				r := do(t, "PATCH", base+"/stats.json", `{"hits":{".sv":{"increment":1}},"other/x":{".sv":{"increment":2}}}`)
				if r.code != 200 {
					t.Errorf("PATCH: %d %s", r.code, r.body)
					return
				}
			}
		})
	}
	wg.Wait()
	want := `{"hits":` + itoa(clients*each) + `,"other":{"x":` + itoa(2*clients*each) + `}}`
	if r := do(t, "GET", base+"/stats.json", ""); r.body != want {
		t.Fatalf("got %s, want %s", r.body, want)
	}
}

func TestBadInput(t *testing.T) {
	base := startRTDB(t, func(c *Config) { c.MaxBodyBytes = 1024 })
	deep := strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33)
	deepPath := "/" + strings.Repeat("a/", 33) + "b.json"
	long := strings.Repeat("k", tree.MaxKeyBytes+1)
	cases := []struct {
		name, method, path, body, wantErr string
	}{
		{"not json", "PUT", "/a.json", `{"a":`, "Invalid data; couldn't parse JSON object, array, or value."},
		{"trailing data", "PUT", "/a.json", `1 2`, "Invalid data; couldn't parse JSON object, array, or value."},
		{"dot in key", "PUT", "/a.json", `{"a.b":1}`, `Invalid key "a.b"`},
		{"dollar in key", "PUT", "/a.json", `{"$a":1}`, `Invalid key "$a"`},
		{"hash in key", "PUT", "/a.json", `{"a#":1}`, `Invalid key "a#"`},
		{"bracket in key", "PUT", "/a.json", `{"[":1}`, `Invalid key "["`},
		{"close bracket in key", "PATCH", "/a.json", `{"x/]":1}`, `Invalid key "]"`},
		{"slash in key", "PUT", "/a.json", `{"a/b":1}`, `Invalid key "a/b"`},
		{"control char in key", "PUT", "/a.json", `{"a\u0001":1}`, `Invalid key "a\x01"`},
		{"empty key", "PUT", "/a.json", `{"":1}`, `Invalid key: empty keys`},
		{"key too long", "PUT", "/a.json", `{"` + long + `":1}`, "longer than 768 bytes"},
		{"bad path key", "GET", "/a$b.json", ``, `Invalid key "a$b"`},
		{"escaped slash in path", "GET", "/a%2Fb.json", ``, `Invalid key "a/b"`},
		{"too deep value", "PUT", "/x.json", deep, "Data is too deep"},
		{"too deep path", "PUT", deepPath, `1`, "Path is too deep"},
		{"body too large", "PUT", "/a.json", `"` + strings.Repeat("x", 2000) + `"`, "Data too large: the body exceeds 1024 bytes"},
		{"bad server value", "PUT", "/a.json", `{".sv":"nope"}`, "unsupported server value"},
		{"patch not an object", "PATCH", "/a.json", `[1]`, "PATCH needs an object"},
		{"patch ancestor", "PATCH", "/a.json", `{"x":1,"x/y":2}`, `path "x" is an ancestor of "x/y"`},
		{"bad namespace", "GET", "/a.json?ns=Bad_NS", ``, "Invalid namespace"},
		{"bad print", "GET", "/a.json?print=loud", ``, "Invalid print argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, base+c.path, c.body)
			var e struct{ Error string }
			if r.code != 400 || json.Unmarshal([]byte(r.body), &e) != nil || !strings.Contains(e.Error, c.wantErr) {
				t.Fatalf("got %d %s, want 400 with an error containing %q", r.code, r.body, c.wantErr)
			}
		})
	}
	// Nothing was written by any of them.
	if r := do(t, "GET", base+"/.json", ""); r.body != "null" {
		t.Fatalf("after bad writes: %s", r.body)
	}
}

func TestWriteTooLarge(t *testing.T) {
	base := startRTDB(t, nil)
	var b strings.Builder
	b.WriteString("{")
	for i := range 200 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + itoa(i) + `":1`)
	}
	b.WriteString("}")
	r := do(t, "PUT", base+"/big.json", b.String())
	if r.code != 400 || !strings.Contains(r.body, "write too large") {
		t.Fatalf("got %d %s", r.code, r.body)
	}
}

// TestValueOverKVRequestLimit: a leaf over kv's request size limit (1.5 MiB by default) is a 400
// naming the store's refusal, not a 500.
func TestValueOverKVRequestLimit(t *testing.T) {
	base := startRTDB(t, nil)
	for _, n := range []int{1800 << 10, 3 << 20} { // over kv's limit; over the client's 2 MiB
		r := do(t, "PUT", base+"/huge.json", `"`+strings.Repeat("x", n)+`"`)
		if r.code != 400 || !strings.Contains(r.body, "write too large") {
			t.Fatalf("%d bytes: got %d %.200s", n, r.code, r.body)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.ListenAddr, c.KVEndpoints, c.MaxBodyBytes, c.Prefix = "nope", nil, 0, "rtdb/"
	err := c.Validate()
	for _, want := range []string{"listen", "endpoints", "max body bytes", "prefix"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// Run against an address where no kv listens says so within DialTimeout and returns an error
// naming the address, instead of serving only errors.
func TestRunWithoutKV(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ListenAddr, cfg.KVEndpoints, cfg.DialTimeout = "127.0.0.1:0", []string{"http://127.0.0.1:1"}, time.Second
	done := make(chan error, 1)
	go func() { done <- Run(t.Context(), cfg) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:1") || !strings.Contains(err.Error(), "not answering") {
			t.Fatalf("Run: %v, want an error naming the kv address", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waiting 30 s after a 1 s dial timeout")
	}
}
