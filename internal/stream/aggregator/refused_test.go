package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

// startDB starts a continuum kv and a realtime database on it, in this process, and returns
// the database's base URL.
func startDB(t *testing.T) string {
	t.Helper()
	kcfg := server.DefaultConfig()
	kcfg.Name = "agg"
	kcfg.DataDir = t.TempDir()
	kcfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	kvs, err := server.Start(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kvs.Close() })
	rcfg := rtdb.DefaultConfig()
	rcfg.KVEndpoints = kvs.ClientURLs()
	db, err := rtdb.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(db)
	t.Cleanup(func() { s.Close(); db.Close() })
	return s.URL
}

// newWriter is an aggregator whose Kafka client is never used (writeAll only talks to the
// database), writing /records and /dead of base.
func newWriter(t *testing.T, base string) *Aggregator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Topics, cfg.RTDB = []string{"127.0.0.1:1"}, []string{"t"}, base
	cfg.Path, cfg.DeadLetterPath, cfg.Logger = "/records", "/dead", discard()
	cfg.RetryMin, cfg.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func dbGet(t *testing.T, base, path string) any {
	t.Helper()
	resp, err := http.Get(base + path + ".json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

func dbPut(t *testing.T, base, path string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+path+".json", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %d", path, resp.StatusCode)
	}
}

// leavesObject is {"id":id, "<prefix>0":0, ...} with n leaves besides the id.
func leavesObject(id, prefix string, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q`, id)
	for i := range n {
		fmt.Fprintf(&b, `,"%s%d":%d`, prefix, i, i)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// TestRefusedRecordKeepsSuperseded (issue 41, defect 20): one poll holds two records of id x, a
// small valid one and then one the database refuses (200 leaves are over one kv transaction's
// 128 operations, whatever the path held before). The refused one becomes a dead letter, and the
// earlier record, which Kafka acknowledged and which the later one can no longer replace, must
// be written: before the fix the batch kept only the last record, and the earlier one was
// written nowhere while both offsets were committed.
func TestRefusedRecordKeepsSuperseded(t *testing.T) {
	base := startDB(t)
	a := newWriter(t, base)
	dbPut(t, base, "/records/x", leavesObject("x", "a", 9)) // an earlier value
	recs := []*kgo.Record{
		{Topic: "t", Partition: 0, Offset: 7, Value: []byte(`{"id":"x","v":1}`)},
		{Topic: "t", Partition: 0, Offset: 8, Value: leavesObject("x", "b", 199)},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.writeAll(ctx, recs); err != nil {
		t.Fatal(err)
	}
	dead, _ := dbGet(t, base, "/dead").(map[string]any)
	if _, ok := dead["t-0-8"]; !ok || len(dead) != 1 {
		t.Errorf("dead letters %v, want exactly t-0-8 (the refused record)", keys(dead))
	}
	got, _ := json.Marshal(dbGet(t, base, "/records/x"))
	if string(got) != `{"id":"x","v":1}` {
		t.Errorf("/records/x is %.80s, want the acknowledged record at offset 7, {\"id\":\"x\",\"v\":1}", got)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDuplicateKeyFieldIsDeadLetter (issue 41, defect 21): a record naming its key field twice
// (produced by something other than the bridge, which refuses it) is keyed in Kafka by one value
// and would be written at the other, out of that id's order; it becomes a dead letter saying
// why, and the records of either id are untouched.
func TestDuplicateKeyFieldIsDeadLetter(t *testing.T) {
	base := startDB(t)
	a := newWriter(t, base)
	recs := []*kgo.Record{
		{Topic: "t", Partition: 0, Offset: 1, Key: []byte("b"), Value: []byte(`{"id":"b","v":1}`)},
		{Topic: "t", Partition: 1, Offset: 2, Key: []byte("a"), Value: []byte(`{"id":"a","v":2,"id":"b"}`)},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.writeAll(ctx, recs); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(dbGet(t, base, "/records"))
	if string(got) != `{"b":{"id":"b","v":1}}` {
		t.Errorf("/records is %s, want only b's own record", got)
	}
	dl, _ := dbGet(t, base, "/dead/t-1-2").(map[string]any)
	if e, _ := dl["error"].(string); !strings.Contains(e, `"id" appears 2 times`) {
		t.Errorf("dead letter t-1-2 is %v, want one whose error says the key field appears twice", dl)
	}
}
