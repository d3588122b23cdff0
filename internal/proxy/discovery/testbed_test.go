package discovery

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
)

func testStatus(now time.Time) testbed.Status {
	return testbed.Status{
		Name: "lab",
		Nodes: []testbed.NodeStatus{
			{Name: "worker1", Address: "10.77.0.2", Labels: map[string]string{"tier": "near-edge", "zone": "a"},
				Load: &testbed.NodeLoad{At: now.Add(-time.Second), CPU: 0.4567, Memory: 0.1}},
			{Name: "worker3", Address: "10.77.0.4", Load: &testbed.NodeLoad{At: now.Add(-time.Minute), CPU: 0.99}},
			{Name: "iot", Address: "10.77.0.9"},
		},
		Procs: []testbed.ProcStatus{
			{Name: "s3", Node: "worker3", State: "exited", Service: &testbed.Service{Name: "dps", Port: 8080}},
			{Name: "load", Node: "iot", State: "running"},
			{Name: "s1", Node: "worker1", State: "running",
				Service: &testbed.Service{Name: "dps", Port: 8081, Attributes: map[string]string{"tier": "edge", "accuracy": "0.97"}}},
		},
	}
}

// asRead is a testbed.Status as the source reads it: through its JSON, which is the contract
// between the testbed's control socket and this source.
func asRead(t *testing.T, st testbed.Status) testbedStatus {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out testbedStatus
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTestbedSnapshot(t *testing.T) {
	now := time.Now()
	got := testbedSnapshot(asRead(t, testStatus(now)), now, 5*time.Second)
	want := Snapshot{
		Instances: []Instance{
			{ID: "s1", Service: "dps", URL: "http://10.77.0.2:8081", Node: "worker1", Ready: true,
				Attributes: map[string]string{"tier": "edge", "zone": "a", "accuracy": "0.97"}},
			{ID: "s3", Service: "dps", URL: "http://10.77.0.4:8080", Node: "worker3", Ready: false},
		},
		// worker3's load is a minute old: unknown, not overloaded.
		Nodes: map[string]NodeLoad{"worker1": {CPU: 0.46, Memory: 0.1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot:\n got %+v\nwant %+v", got, want)
	}
	empty := testbedSnapshot(asRead(t, testbed.Status{}), now, time.Second)
	if empty.Instances == nil || len(empty.Instances) != 0 || empty.Nodes != nil {
		t.Errorf("empty status gives %+v, want no instances (non-nil) and no loads", empty)
	}
}

func parseYAML(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// The source does not import package testbed (see TestbedSource); its copies of the testbed's
// rules must agree with the originals.
func TestTestbedRulesMatchPackageTestbed(t *testing.T) {
	for _, name := range []string{"lab", "run123-001", "a", "0x", "Lab", "-a", "a_b", "", strings.Repeat("a", 32), strings.Repeat("a", 33)} {
		if (testbed.ValidName(name) == nil) != testbedNameRE.MatchString(name) {
			t.Errorf("name %q: testbed.ValidName and the source disagree", name)
		}
	}
	t.Setenv("CONTINUUM_STATE_DIR", "")
	if defaultTestbedStateDir() != testbed.DefaultStateDir() {
		t.Errorf("default state dir %q, testbed's %q", defaultTestbedStateDir(), testbed.DefaultStateDir())
	}
	t.Setenv("CONTINUUM_STATE_DIR", "/tmp/x")
	if defaultTestbedStateDir() != testbed.DefaultStateDir() {
		t.Errorf("with CONTINUUM_STATE_DIR: %q, testbed's %q", defaultTestbedStateDir(), testbed.DefaultStateDir())
	}
}

func TestTestbedSourceRegistered(t *testing.T) {
	c, ok := LookupSource(TestbedKey)
	if !ok {
		t.Fatalf("%q is not a registered source key (keys: %v)", TestbedKey, SourceKeys())
	}
	src, err := c(parseYAML(t, "lab"))
	if err != nil || src.Name() != "testbed:lab" {
		t.Errorf("constructor: %v, %v", src, err)
	}
}

func TestParseTestbedSource(t *testing.T) {
	tests := []struct {
		yaml, name, err string
		interval        time.Duration
	}{
		{yaml: `run1-001`, name: "testbed:run1-001", interval: DefaultTestbedInterval},
		{yaml: `{name: lab, state_dir: /tmp/x, interval: 100ms, load_max_age: 2s}`, name: "testbed:lab", interval: 100 * time.Millisecond},
		{yaml: `{name: lab, intervall: 1s}`, err: `unknown field "intervall"`},
		{yaml: `{name: lab, interval: 10}`, err: `invalid duration "10"`},
		{yaml: `Bad_Name`, err: "invalid testbed name"},
		{yaml: `[a, b]`, err: "want a testbed name"},
	}
	for _, tt := range tests {
		src, err := ParseTestbedSource(parseYAML(t, tt.yaml))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.yaml, err)
			continue
		}
		if src.Name() != tt.name || src.(*TestbedSource).cfg.Interval.Duration != tt.interval {
			t.Errorf("%s: name %q interval %v", tt.yaml, src.Name(), src.(*TestbedSource).cfg.Interval)
		}
	}
}

// fakeTestbed serves GET /status on a testbed control socket path.
type fakeTestbed struct {
	mu     sync.Mutex
	status testbed.Status
	srv    *http.Server
	ln     net.Listener
	path   string
}

func startFakeTestbed(t *testing.T, stateDir, name string, st testbed.Status) *fakeTestbed {
	t.Helper()
	f := &fakeTestbed{status: st, path: filepath.Join(stateDir, name, "control.sock")}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		t.Fatal(err)
	}
	f.start(t)
	t.Cleanup(f.stop)
	return f
}

func (f *fakeTestbed) start(t *testing.T) {
	t.Helper()
	_ = os.Remove(f.path)
	ln, err := net.Listen("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b, _ := json.Marshal(f.status)
		f.mu.Unlock()
		w.Write(b)
	})}
	go srv.Serve(ln)
	f.mu.Lock()
	f.srv, f.ln = srv, ln
	f.mu.Unlock()
}

func (f *fakeTestbed) stop() {
	f.mu.Lock()
	srv := f.srv
	f.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (f *fakeTestbed) set(fn func(*testbed.Status)) {
	f.mu.Lock()
	fn(&f.status)
	f.mu.Unlock()
}

func TestTestbedSourceRun(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	st := testStatus(now)
	st.Nodes[0].Load.At = now.Add(time.Hour) // stays fresh for the whole test
	fake := startFakeTestbed(t, dir, "lab", st)
	src, err := NewTestbedSource(TestbedConfig{Name: "lab", StateDir: dir, Interval: spec.Duration{Duration: 10 * time.Millisecond},
		LoadMaxAge: spec.Duration{Duration: 2 * time.Hour}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan Snapshot, 100)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, func(s Snapshot) { updates <- s }) }()

	first := waitSnap(t, updates, "first")
	if len(first.Instances) != 2 || !first.Instances[0].Ready || first.Instances[1].Ready {
		t.Fatalf("first snapshot %+v", first)
	}
	// s1 is killed: the next update has it not ready.
	fake.set(func(st *testbed.Status) { st.Procs[2].State = "exited" })
	if s := waitSnap(t, updates, "after kill"); s.Instances[0].Ready {
		t.Errorf("s1 still ready after exit: %+v", s.Instances[0])
	}
	// A load change below 1% is not a change.
	fake.set(func(st *testbed.Status) { st.Nodes[0].Load.CPU += 0.001 })
	// The testbed goes away and comes back with a new instance: the source keeps polling.
	fake.stop()
	fake.set(func(st *testbed.Status) {
		st.Procs = append(st.Procs, testbed.ProcStatus{Name: "s7", Node: "worker1", State: "running",
			Service: &testbed.Service{Name: "dps", Port: 8080}})
	})
	fake.start(t)
	s := waitSnap(t, updates, "after the testbed came back")
	if len(s.Instances) != 3 || s.Instances[2].ID != "s7" {
		t.Errorf("after restart: %+v", s.Instances)
	}
	select {
	case extra := <-updates:
		t.Errorf("update without a change: %+v", extra)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v, want nil on cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
