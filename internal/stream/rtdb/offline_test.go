package rtdb

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rest"
	"github.com/continuum-project/continuum/internal/testenv"
)

// The tests here run the edge–cloud setting of issue 24 in one process: two continuum kv members
// (edge, cloud) replicating over a link that a test cuts the way a partition does (packets
// dropped, no reset), and one realtime database on each member. What they check is what a
// developer of an edge site sees: the edge keeps answering while the cloud is unreachable, and
// after the heal both sides hold the same tree, with every conflicting edit accounted for.

// site is one member of the pair: its kv member and the realtime database on it.
type site struct {
	name    string
	kv      *server.Server
	url     string // the realtime database
	events  string // the member's --events-file
	metrics string // the member's metrics URL
	logs    *testenv.SyncBuffer
}

// pair is an edge and a cloud member whose link the test cuts and heals.
type pair struct {
	edge, cloud *site
	links       []*testenv.CutLink
}

func (p *pair) cut() {
	for _, l := range p.links {
		l.Cut()
	}
}

func (p *pair) heal() {
	for _, l := range p.links {
		l.Heal()
	}
}

// startPair starts the two kv members, each reaching the other only through a cutLink (the
// cluster's peer URLs are the links'; each member listens behind its own), and a realtime
// database on each member.
func startPair(t *testing.T) *pair {
	t.Helper()
	names := []string{"edge", "cloud"}
	listen := map[string]string{}
	links := map[string]*testenv.CutLink{}
	cluster := map[string][]string{}
	for _, n := range names {
		listen[n] = testenv.FreeAddr(t)
		links[n] = testenv.NewCutLink(t, listen[n])
		cluster[n] = []string{links[n].URL()}
	}
	p := &pair{links: []*testenv.CutLink{links["edge"], links["cloud"]}}
	dir := t.TempDir()
	for _, n := range names {
		s := &site{name: n, events: filepath.Join(dir, n+".events"), metrics: "http://" + testenv.FreeAddr(t), logs: &testenv.SyncBuffer{}}
		cfg := server.DefaultConfig()
		cfg.Name = n
		cfg.DataDir = filepath.Join(dir, n)
		cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
		cfg.ListenMetricsURLs = []string{s.metrics}
		cfg.ListenPeerURLs = []string{"http://" + listen[n]}
		cfg.InitialCluster = cluster
		cfg.InitialClusterToken = "offline-test"
		cfg.EventsFile = s.events
		cfg.Logger = slog.New(slog.NewTextHandler(s.logs, nil))
		kv, err := server.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		s.kv = kv
		rcfg := DefaultConfig()
		rcfg.KVEndpoints = kv.ClientURLs()
		rcfg.Security.AuthSecrets = []string{offlineSecret}
		db, err := New(rcfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(db)
		t.Cleanup(func() { hs.Close(); db.Close() })
		s.url = hs.URL
		if n == "edge" {
			p.edge = s
		} else {
			p.cloud = s
		}
	}
	return p
}

// offlineSecret is the database secret of the pair's servers: /.conflicts.json is for admins.
const offlineSecret = "offline-test-secret"

// ok is do that fails the test on an answer other than 2xx.
func ok(t *testing.T, method, url, body string, hdr ...string) reply {
	t.Helper()
	r := do(t, method, url, body, hdr...)
	if r.code/100 != 2 {
		t.Errorf("%s %s: %d %s", method, url, r.code, r.body)
	}
	return r
}

// tree reads the value at path through s and decodes it.
func (s *site) tree(t *testing.T, path string) (any, error) {
	if path == "" {
		path = "/"
	}
	r := do(t, "GET", s.url+path+".json", "")
	if r.code != 200 {
		return nil, fmt.Errorf("%s: GET %s: %d %s", s.name, path, r.code, r.body)
	}
	var v any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		return nil, fmt.Errorf("%s: GET %s: %v", s.name, path, err)
	}
	return v, nil
}

// waitSame waits until both sites read the same tree at path, and returns it.
func (p *pair) waitSame(t *testing.T, path string, timeout time.Duration) any {
	t.Helper()
	var got any
	testenv.EventuallyNoError(t, timeout, "edge and cloud read the same tree at "+path, func() error {
		e, err := p.edge.tree(t, path)
		if err != nil {
			return err
		}
		c, err := p.cloud.tree(t, path)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(e, c) {
			return fmt.Errorf("edge %v\ncloud %v", e, c)
		}
		got = e
		return nil
	})
	return got
}

// record is the experiments' record shape (helper exp's interface).
func record(id string, user, seq int) string {
	return fmt.Sprintf(`{"id":%q,"user":%d,"seq":%d,"sent_us":%d,"pad":"xxxxxxxx"}`, id, user, seq, 1700000000000000+seq)
}

// TestOfflineEdgeServesAndConverges: while the link is cut, the edge's database keeps answering
// writes (PUT, PATCH, POST, DELETE, conditional writes, increments) with 2xx and reads see them
// there, not at the cloud; the cloud keeps serving its own writes to other paths; after the heal
// both read the same tree, with every write of both sides in it.
func TestOfflineEdgeServesAndConverges(t *testing.T) {
	p := startPair(t)
	e, c := p.edge.url, p.cloud.url
	ok(t, "PUT", c+"/config.json", `{"mode":"normal","rate":1}`)
	ok(t, "PUT", e+"/edge/old.json", `"to delete"`)
	p.waitSame(t, "", 10*time.Second)

	p.cut()
	const n = 20
	for i := 0; i < n; i++ {
		ok(t, "PUT", fmt.Sprintf("%s/records/e%d.json", e, i), record(fmt.Sprintf("e%d", i), 1, i))
		ok(t, "PUT", fmt.Sprintf("%s/records/c%d.json", c, i), record(fmt.Sprintf("c%d", i), 2, i))
	}
	ok(t, "PATCH", e+"/edge/status.json", `{"link":"down","since/ms":{".sv":"timestamp"}}`)
	pushed := ok(t, "POST", e+"/edge/log.json", `{"msg":"cloud unreachable"}`)
	var push struct{ Name string }
	if err := json.Unmarshal([]byte(pushed.body), &push); err != nil || push.Name == "" {
		t.Fatalf("POST answered %q", pushed.body)
	}
	ok(t, "DELETE", e+"/edge/old.json", "")
	// Guarded transactions run against the member they reach: an if-match with the ETag read
	// there commits, a stale one gets 412, increments add up.
	tag := ok(t, "GET", e+"/edge/counter.json", "", "X-Firebase-ETag", "true").hdr.Get("ETag")
	ok(t, "PUT", e+"/edge/counter.json", "10", "if-match", tag)
	if r := do(t, "PUT", e+"/edge/counter.json", "11", "if-match", tag); r.code != http.StatusPreconditionFailed || r.body != "10" {
		t.Errorf("stale if-match at the edge: %d %s, want 412 and the current value 10", r.code, r.body)
	}
	for i := 0; i < 5; i++ {
		ok(t, "PUT", e+"/edge/counter.json", `{".sv":{"increment":1}}`)
		ok(t, "PUT", c+"/cloud/counter.json", `{".sv":{"increment":2}}`)
	}

	// During the cut each side reads its own writes and none of the other's.
	for _, tc := range []struct {
		s          *site
		mine, them string
	}{{p.edge, "e", "c"}, {p.cloud, "c", "e"}} {
		v, err := tc.s.tree(t, "/records")
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := v.(map[string]any)
		for i := 0; i < n; i++ {
			if _, has := recs[fmt.Sprintf("%s%d", tc.mine, i)]; !has {
				t.Errorf("%s does not read its own record %s%d during the cut", tc.s.name, tc.mine, i)
			}
			if _, has := recs[fmt.Sprintf("%s%d", tc.them, i)]; has {
				t.Errorf("%s reads %s%d, written across the cut link", tc.s.name, tc.them, i)
			}
		}
	}
	if v, _ := p.cloud.tree(t, "/edge"); v == nil || v.(map[string]any)["old"] != "to delete" || v.(map[string]any)["counter"] != nil {
		t.Errorf("cloud's /edge during the cut = %v, want only old (the edge's later writes unseen)", v)
	}

	p.heal()
	healed := time.Now()
	got := p.waitSame(t, "", 30*time.Second)
	t.Logf("converged %v after the heal (polled)", time.Since(healed).Round(time.Millisecond))
	root := got.(map[string]any)
	if recs := root["records"].(map[string]any); len(recs) != 2*n {
		t.Errorf("%d records after the heal, want %d", len(recs), 2*n)
	}
	edge := root["edge"].(map[string]any)
	if edge["counter"] != float64(15) || root["cloud"].(map[string]any)["counter"] != float64(10) {
		t.Errorf("counters after the heal: edge %v cloud %v, want 15 and 10", edge["counter"], root["cloud"])
	}
	if _, has := edge["old"]; has {
		t.Errorf("the edge's offline DELETE did not reach the cloud: %v", edge)
	}
	if st, _ := edge["status"].(map[string]any); st["link"] != "down" || st["since"] == nil {
		t.Errorf("edge status %v", edge["status"])
	}
	if l, _ := edge["log"].(map[string]any); l[push.Name] == nil {
		t.Errorf("the edge's pushed entry %s is missing: %v", push.Name, edge["log"])
	}
	if fmt.Sprint(root["config"]) != "map[mode:normal rate:1]" {
		t.Errorf("config %v", root["config"])
	}
	// ETags are content hashes, not kv revisions (which are per member): once converged, an
	// ETag read at the edge guards a write at the cloud.
	tag = ok(t, "GET", e+"/records/e0.json", "", "X-Firebase-ETag", "true").hdr.Get("ETag")
	ok(t, "PUT", c+"/records/e0.json", record("e0", 1, 100), "if-match", tag)
	// Nothing here was written twice, so neither member recorded a conflict.
	for _, s := range []*site{p.edge, p.cloud} {
		var cs rest.Conflicts
		if r := ok(t, "GET", s.url+"/.conflicts.json?auth="+offlineSecret, ""); json.Unmarshal([]byte(r.body), &cs) != nil || len(cs.Conflicts) != 0 || cs.Member != s.name {
			t.Errorf("%s: /.conflicts.json = %s, want no conflict from member %s", s.name, r.body, s.name)
		}
	}
}

// TestOfflineConflictLoserObservable: both sides write one node while cut off. After the heal
// both read the same value: last writer wins, per leaf, by the writes' HLC stamps. The write that
// lost is not silently gone: the member that took the winning write lists every losing leaf,
// with its value and the member it came from, at /.conflicts.json, in its --events-file and in
// continuum_kv_conflicts_total.
func TestOfflineConflictLoserObservable(t *testing.T) {
	p := startPair(t)
	ok(t, "PUT", p.cloud.url+"/sensors/s1.json", `{"temp":18,"by":"setup"}`)
	p.waitSame(t, "", 10*time.Second)

	p.cut()
	// Which write wins depends on the stamps the two members' clocks gave them, so the test
	// finds the winner from the converged value rather than assuming one.
	ok(t, "PUT", p.edge.url+"/sensors/s1.json", `{"temp":20,"by":"edge","edge_only":true}`)
	ok(t, "PUT", p.cloud.url+"/sensors/s1.json", `{"temp":25,"by":"cloud"}`)
	// A leaf on one side, children under it on the other: two different keys, no conflict.
	ok(t, "PUT", p.edge.url+"/shape.json", `5`)
	ok(t, "PUT", p.cloud.url+"/shape/x.json", `1`)
	p.heal()
	got := p.waitSame(t, "/sensors/s1", 30*time.Second).(map[string]any)
	// Both keys stay; reads show the children on both sides (the leaf is hidden until the next
	// write at or above it removes it), as docs/stream.md says.
	if shape := p.waitSame(t, "/shape", 10*time.Second); fmt.Sprint(shape) != "map[x:1]" {
		t.Errorf("/shape after the heal = %v, want the children {x:1}", shape)
	}
	for _, s := range []*site{p.edge, p.cloud} {
		var cs rest.Conflicts
		r := ok(t, "GET", s.url+"/.conflicts.json?auth="+offlineSecret, "")
		if err := json.Unmarshal([]byte(r.body), &cs); err != nil || len(cs.Hidden) != 1 || cs.Hidden[0].Path != "/shape" || string(cs.Hidden[0].Value) != "5" {
			t.Errorf("%s: /.conflicts.json hidden = %+v (%v), want /shape's 5", s.name, cs.Hidden, err)
		}
	}
	ok(t, "PUT", p.edge.url+"/shape.json", `7`)
	if shape := p.waitSame(t, "/shape", 10*time.Second); shape != float64(7) {
		t.Errorf("/shape after a new write = %v, want 7", shape)
	}
	if r := ok(t, "GET", p.cloud.url+"/.conflicts.json?auth="+offlineSecret, ""); !strings.Contains(r.body, `"hidden":[]`) {
		t.Errorf("a hidden leaf is still listed after the write that removed it: %s", r.body)
	}

	winner, loser := p.cloud, p.edge
	lostTemp, lostBy := float64(20), "edge"
	if got["by"] == "edge" {
		winner, loser, lostTemp, lostBy = p.edge, p.cloud, 25, "cloud"
	}
	// Per leaf: temp and by come from the winning write; the leaf only the losing side wrote
	// (edge_only) had no concurrent write and stays, whichever side won.
	if got["temp"] != 45-lostTemp || got["by"] != winner.name || got["edge_only"] != true {
		t.Fatalf("converged to %v; want temp and by from %s's write, and edge_only kept", got, winner.name)
	}
	t.Logf("%s's write won", winner.name)

	var cs rest.Conflicts
	testenv.EventuallyNoError(t, 10*time.Second, "the losing leaves in the winner's conflict log", func() error {
		r := do(t, "GET", winner.url+"/.conflicts.json?print=pretty&auth="+offlineSecret, "")
		if r.code != 200 {
			return fmt.Errorf("%d %s", r.code, r.body)
		}
		cs = rest.Conflicts{}
		if err := json.Unmarshal([]byte(r.body), &cs); err != nil {
			return err
		}
		if len(cs.Conflicts) < 2 {
			return fmt.Errorf("%s", r.body)
		}
		return nil
	})
	lost := map[string]rest.Conflict{}
	for _, c := range cs.Conflicts {
		lost[c.Path] = c
	}
	if l := lost["/sensors/s1/temp"]; string(l.Lost) != fmt.Sprint(lostTemp) || l.Origin != loser.name || l.LostDeleted || l.KeptDeleted ||
		l.LostStamp == "" || l.KeptStamp == "" || l.LostStamp == l.KeptStamp {
		t.Errorf("temp's conflict = %+v, want the lost %v from %s", l, lostTemp, loser.name)
	}
	if l := lost["/sensors/s1/by"]; string(l.Lost) != fmt.Sprintf("%q", lostBy) || l.Origin != loser.name {
		t.Errorf("by's conflict = %+v, want the lost %q from %s", l, lostBy, loser.name)
	}
	if len(cs.Conflicts) != 2 || cs.Total != 2 || cs.Member != winner.name {
		t.Errorf("%s lists %+v (total %d), want exactly the two leaves both sides wrote", winner.name, cs.Conflicts, cs.Total)
	}
	// Another namespace holds none of them.
	if r := ok(t, "GET", winner.url+"/.conflicts.json?ns=other&auth="+offlineSecret, ""); !strings.Contains(r.body, `"conflicts":[]`) {
		t.Errorf("ns=other: %s", r.body)
	}

	// The member's events file and metrics say the same.
	b, err := os.ReadFile(winner.events)
	if err != nil {
		t.Fatal(err)
	}
	var lines []server.Event
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev server.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("events line %q: %v", l, err)
		}
		if ev.Event == server.EventConflict {
			lines = append(lines, ev)
		}
	}
	if len(lines) != 2 || lines[0].Member != winner.name || lines[0].Conflict.Origin != loser.name ||
		!strings.HasPrefix(string(lines[0].Conflict.Key), "/rtdb/default/sensors/s1/") || len(lines[0].Conflict.LostValue) == 0 {
		t.Errorf("conflict lines in %s's events file: %+v", winner.name, lines)
	}
	if m := metric(t, winner.metrics, "continuum_kv_conflicts_total"); m != "2" {
		t.Errorf("%s: continuum_kv_conflicts_total %q, want 2", winner.name, m)
	}
	if len(winner.logs.Lines("peer write lost to a concurrent write", "origin="+loser.name)) != 2 {
		t.Errorf("%s logged no Warn line per lost leaf:\n%s", winner.name, winner.logs.String())
	}
}

// metric returns the value of an unlabelled metric at the metrics URL.
func metric(t *testing.T, base, name string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(l, name+" "); found {
			return v
		}
	}
	return ""
}

// TestConflictsEndpointWithoutCluster: /.conflicts.json is for admins (401 otherwise, even
// without rules); a database on a single kv member (no cluster, so no conflicts can arise) says
// so with 501; other methods get 405, a bad print 400.
func TestConflictsEndpointWithoutCluster(t *testing.T) {
	u := startRTDB(t, func(c *Config) { c.Security.AuthSecrets = []string{offlineSecret} })
	if r := do(t, "GET", u+"/.conflicts.json", ""); r.code != http.StatusUnauthorized {
		t.Errorf("GET without credential: %d %s", r.code, r.body)
	}
	a := "auth=" + offlineSecret
	if r := do(t, "GET", u+"/.conflicts.json?"+a, ""); r.code != http.StatusNotImplemented || !strings.Contains(r.body, "not a member of a continuum kv cluster") {
		t.Errorf("GET: %d %s", r.code, r.body)
	}
	if r := do(t, "PUT", u+"/.conflicts.json?"+a, "1"); r.code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d %s", r.code, r.body)
	}
	if r := do(t, "GET", u+"/.conflicts.json?print=loud&"+a, ""); r.code != http.StatusBadRequest {
		t.Errorf("print=loud: %d %s", r.code, r.body)
	}
}

// offlineListener is a Firebase REST streaming client (SSE), as the Admin SDKs' listen() is:
// it keeps the tree at its path up to date from put and patch events and notes, per child of
// that path, how many events named it.
type offlineListener struct {
	mu    sync.Mutex
	tree  any            // guarded by mu
	named map[string]int // guarded by mu: events per first path segment (a child of the path)
	first bool           // guarded by mu: the initial put arrived
	err   error          // guarded by mu: why the stream ended
}

// listenSSE opens a stream on url (a /path.json URL) until the test ends.
func listenSSE(t *testing.T, url string) *offlineListener {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("GET with Accept: text/event-stream answered %d %s", resp.StatusCode, ct)
	}
	l := &offlineListener{named: map[string]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		var event string
		rd := bufio.NewReaderSize(resp.Body, 64<<10)
		for {
			line, err := rd.ReadString('\n')
			line = strings.TrimRight(line, "\r\n")
			if err != nil {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
				return
			}
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(line[len("event:"):])
			case strings.HasPrefix(line, "data:"):
				l.apply(event, strings.TrimSpace(line[len("data:"):]))
			}
		}
	}()
	return l
}

func (l *offlineListener) apply(event, data string) {
	if event != "put" && event != "patch" {
		return
	}
	var ev struct {
		Path string
		Data any
	}
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		l.mu.Lock()
		l.err = fmt.Errorf("%s event data %q: %v", event, data, err)
		l.mu.Unlock()
		return
	}
	var segs []string
	if p := strings.Trim(ev.Path, "/"); p != "" {
		segs = strings.Split(p, "/")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if event == "put" {
		l.first = true
		offlineSetAt(&l.tree, segs, ev.Data)
		if len(segs) > 0 {
			l.named[segs[0]]++
		} else if m, ok := ev.Data.(map[string]any); ok {
			for k := range m {
				l.named[k]++
			}
		}
		return
	}
	m, _ := ev.Data.(map[string]any)
	for k, v := range m {
		rel := append(append([]string(nil), segs...), strings.Split(k, "/")...)
		offlineSetAt(&l.tree, rel, v)
		l.named[rel[0]]++
	}
}

// offlineSetAt sets the value at rel in *root (nil deletes), as a listener's local copy does.
func offlineSetAt(root *any, rel []string, v any) {
	if len(rel) == 0 {
		*root = v
		return
	}
	m, ok := (*root).(map[string]any)
	if !ok {
		if v == nil {
			return
		}
		m = map[string]any{}
		*root = m
	}
	child := m[rel[0]]
	offlineSetAt(&child, rel[1:], v)
	if child == nil {
		delete(m, rel[0])
	} else {
		m[rel[0]] = child
	}
	if len(m) == 0 {
		*root = nil
	}
}

// state returns a copy of what the listener holds (through JSON) and how often each child was
// named.
func (l *offlineListener) state() (tree any, named map[string]int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, _ := json.Marshal(l.tree)
	_ = json.Unmarshal(b, &tree)
	named = map[string]int{}
	for k, n := range l.named {
		named[k] = n
	}
	return tree, named, l.err
}

// TestOfflineListenersSeeEveryUpdate: a listener on the edge sees the edge's writes during the
// cut; a listener on the cloud sees none of them then, and after the heal it holds the same
// tree as the edge, having been told of every record the edge wrote (each was written once, so
// none can be coalesced away). A node written several times during the cut may reach the cloud
// listener only with its last value: Firebase promises listeners the latest state, not every
// intermediate one, and so does this server.
func TestOfflineListenersSeeEveryUpdate(t *testing.T) {
	p := startPair(t)
	ok(t, "PUT", p.cloud.url+"/records/before.json", record("before", 0, 0))
	p.waitSame(t, "/records", 10*time.Second)
	atEdge := listenSSE(t, p.edge.url+"/records.json")
	atCloud := listenSSE(t, p.cloud.url+"/records.json")
	for _, l := range []*offlineListener{atEdge, atCloud} {
		testenv.EventuallyNoError(t, 10*time.Second, "the initial put", func() error {
			tree, _, err := l.state()
			if err != nil || tree == nil {
				return fmt.Errorf("tree %v, err %v", tree, err)
			}
			return nil
		})
	}

	p.cut()
	const n = 30
	for i := 0; i < n; i++ {
		ok(t, "PUT", fmt.Sprintf("%s/records/e%d.json", p.edge.url, i), record(fmt.Sprintf("e%d", i), 1, i))
	}
	for i := 0; i < 3; i++ {
		ok(t, "PUT", p.edge.url+"/records/hot.json", record("hot", 1, i))
	}
	testenv.EventuallyNoError(t, 10*time.Second, "the edge listener told of every record during the cut", func() error {
		_, named, err := atEdge.state()
		for i := 0; i < n; i++ {
			if named[fmt.Sprintf("e%d", i)] == 0 {
				return fmt.Errorf("e%d not seen (err %v)", i, err)
			}
		}
		return nil
	})
	if _, named, _ := atCloud.state(); len(named) != 1 {
		t.Errorf("the cloud listener was told of %v during the cut, want only the record from before", named)
	}

	p.heal()
	want := p.waitSame(t, "/records", 30*time.Second)
	testenv.EventuallyNoError(t, 30*time.Second, "the cloud listener holds the converged tree", func() error {
		tree, named, err := atCloud.state()
		if !reflect.DeepEqual(tree, want) {
			return fmt.Errorf("listener %v (err %v)\nwant %v", tree, err, want)
		}
		for i := 0; i < n; i++ {
			if named[fmt.Sprintf("e%d", i)] == 0 {
				return fmt.Errorf("no event named e%d", i)
			}
		}
		return nil
	})
	_, named, _ := atCloud.state()
	t.Logf("the cloud listener got %d event(s) naming hot, written 3 times at the edge during the cut (any number >= 1 is right)", named["hot"])
}

// TestOfflineTransactionsPerMember: conditional writes are checked against the member a server
// uses. During a cut, a transaction on each side (read the ETag, write with if-match) commits on
// both, each consistent with its own side; after the heal one value remains on both, and the
// other side's is listed as lost on the winner's member. A transaction is therefore no lock
// across a cut: it is what docs/stream.md says, last writer wins, with the loser on record.
func TestOfflineTransactionsPerMember(t *testing.T) {
	p := startPair(t)
	ok(t, "PUT", p.edge.url+"/stock.json", "10")
	p.waitSame(t, "/stock", 10*time.Second)
	p.cut()
	for _, s := range []*site{p.edge, p.cloud} {
		r := ok(t, "GET", s.url+"/stock.json", "", "X-Firebase-ETag", "true")
		if r.body != "10" {
			t.Fatalf("%s reads %s", s.name, r.body)
		}
		take := map[string]string{"edge": "9", "cloud": "7"}[s.name]
		ok(t, "PUT", s.url+"/stock.json", take, "if-match", r.hdr.Get("ETag"))
		if r := do(t, "PUT", s.url+"/stock.json", "0", "if-match", r.hdr.Get("ETag")); r.code != http.StatusPreconditionFailed || r.body != take {
			t.Errorf("%s: a second write with the first ETag: %d %s, want 412 and %s", s.name, r.code, r.body, take)
		}
	}
	p.heal()
	kept := p.waitSame(t, "/stock", 30*time.Second)
	lost, winner := "9", p.cloud
	if kept == float64(9) {
		lost, winner = "7", p.edge
	}
	testenv.EventuallyNoError(t, 10*time.Second, "the other transaction's value listed as lost", func() error {
		var cs rest.Conflicts
		r := do(t, "GET", winner.url+"/.conflicts.json?auth="+offlineSecret, "")
		if err := json.Unmarshal([]byte(r.body), &cs); err != nil {
			return fmt.Errorf("%d %s", r.code, r.body)
		}
		if len(cs.Conflicts) != 1 || cs.Conflicts[0].Path != "/stock" || string(cs.Conflicts[0].Lost) != lost {
			return fmt.Errorf("%s", r.body)
		}
		return nil
	})
}
