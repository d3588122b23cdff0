package control

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// contract is python/tests/testdata/fl-control/contract.json, which the Python side's tests
// (tests/test_fl_control_contract.py) read too.
type contract struct {
	Config []json.RawMessage `json:"config"`
	Stop   json.RawMessage   `json:"stop"`
	Status json.RawMessage   `json:"status"`
}

func readContract(t *testing.T) contract {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "python", "tests", "testdata", "fl-control", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c contract
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBodiesMatchTheSharedFixture: the bodies the orchestrator sends are the fixture's, byte
// for byte (so the field names are the ones control.py accepts), and the fixture's status decodes
// into Status with no field left over or missing.
func TestBodiesMatchTheSharedFixture(t *testing.T) {
	c := readContract(t)
	sent := []Settings{
		{MinClients: 3, Epochs: 2},                 // a global aggregator: its children and epochs
		{MinClients: 2, Epochs: 4, LocalRounds: 5}, // a local aggregator: its local rounds too
	}
	if len(c.Config) != len(sent) {
		t.Fatalf("fixture has %d config bodies, the test %d", len(c.Config), len(sent))
	}
	for i, s := range sent {
		got, _ := json.Marshal(s)
		if want := compact(t, c.Config[i]); string(got) != want {
			t.Errorf("config body %d: %s, fixture %s", i, got, want)
		}
	}
	if got, _ := json.Marshal(struct{}{}); string(got) != compact(t, c.Stop) {
		t.Errorf("stop body %s, fixture %s", got, c.Stop)
	}
	dec := json.NewDecoder(bytes.NewReader(c.Status))
	dec.DisallowUnknownFields()
	var st Status
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("fixture status: %v", err)
	}
	if got, _ := json.Marshal(st); string(got) != compact(t, c.Status) {
		t.Errorf("status round trip %s, fixture %s (a field Go does not read?)", got, c.Status)
	}
}

type call struct {
	method, path, auth, ctype, body string
}

// fakeAggregator records the calls and answers status (or code, when not 200).
func fakeAggregator(t *testing.T, code int) (*httptest.Server, *[]call, *sync.Mutex) {
	t.Helper()
	var mu sync.Mutex
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"id":"n2","role":"local","round":7,"clients":2,"min_clients":2,"epochs":4,"local_rounds":5}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, &mu
}

// TestClientCalls: each call is the method, path, token and body control.py expects, and a
// status answer decodes.
func TestClientCalls(t *testing.T) {
	srv, calls, mu := fakeAggregator(t, 200)
	c := Client{ID: "n2", Addr: strings.TrimPrefix(srv.URL, "http://"), Token: "tok"}
	ctx := context.Background()
	if err := c.Configure(ctx, Settings{MinClients: 1, Epochs: 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st != (Status{ID: "n2", Role: "local", Round: 7, Clients: 2, MinClients: 2, Epochs: 4, LocalRounds: 5}) {
		t.Errorf("status %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []call{
		{"POST", "/config", "Bearer tok", "application/json", `{"min_clients":1,"epochs":3}`},
		{"POST", "/stop", "Bearer tok", "application/json", `{}`},
		{"GET", "/status", "Bearer tok", "", ""},
	}
	if len(*calls) != len(want) {
		t.Fatalf("calls %+v", *calls)
	}
	for i := range want {
		if (*calls)[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, (*calls)[i], want[i])
		}
	}
}

// TestClientErrors: a refusal names the aggregator, the path and the status.
func TestClientErrors(t *testing.T) {
	srv, _, _ := fakeAggregator(t, http.StatusUnauthorized)
	c := Client{ID: "n2", Addr: strings.TrimPrefix(srv.URL, "http://"), Token: "wrong"}
	err := c.Configure(context.Background(), Settings{MinClients: 1, Epochs: 1})
	if err == nil || !strings.Contains(err.Error(), "aggregator n2 /config: 401") {
		t.Errorf("configure refused: %v", err)
	}
	if _, err := c.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "aggregator n2 /status: 401") {
		t.Errorf("status refused: %v", err)
	}
}
