package discovery

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testenv"
)

const goodFile = `instances:
  - {id: s1, service: dps, url: "http://127.0.0.1:8081", node: worker1, attributes: {accuracy: 0.97, tier: edge}}
  - {id: s2, service: dps, url: "http://127.0.0.1:8082", node: worker2, ready: false}
nodes:
  worker1: {cpu: 0.5, memory: 0.25}
`

func TestProxyFileParse(t *testing.T) {
	snap, err := ParseInstancesFile("i.yaml", []byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Instances) != 2 {
		t.Fatalf("instances = %d", len(snap.Instances))
	}
	s1, s2 := snap.Instances[0], snap.Instances[1]
	if !s1.Ready || s2.Ready {
		t.Errorf("ready: s1 %v (want default true), s2 %v (want false)", s1.Ready, s2.Ready)
	}
	if s1.Attributes["accuracy"] != "0.97" || s1.Attributes["tier"] != "edge" {
		t.Errorf("attributes = %v", s1.Attributes)
	}
	if snap.Nodes["worker1"] != (NodeLoad{CPU: 0.5, Memory: 0.25}) {
		t.Errorf("nodes = %v", snap.Nodes)
	}
}

func TestProxyFileParseErrors(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string // substrings of the error, all required
	}{
		{"empty", "  \n", []string{"i.yaml: the file is empty"}},
		{"syntax", "instances: [\n", []string{"i.yaml:"}},
		{"unknown field", "instances:\n  - {id: a, service: s, url: 'http://h:1', port: 3}\n", []string{"i.yaml:2:", `unknown field "port"`}},
		{"missing id", "instances:\n  - {service: s, url: 'http://h:1'}\n", []string{"i.yaml:2:", "instances[0].id: required"}},
		{"duplicate id", "instances:\n  - {id: a, service: s, url: 'http://h:1'}\n  - {id: a, service: s, url: 'http://h:2'}\n", []string{"i.yaml:3:", "already used by instances[0]"}},
		{"bad service", "instances:\n  - {id: a, service: 'a b', url: 'http://h:1'}\n", []string{"i.yaml:2:", "instances[0].service"}},
		{"bad url", "instances:\n  - {id: a, service: s, url: 'ftp://h'}\n", []string{"i.yaml:2:", "instances[0].url", "want http://host:port"}},
		{"url with path", "instances:\n  - {id: a, service: s, url: 'http://h:1/x'}\n", []string{"want no path"}},
		{"negative load", "instances: []\nnodes:\n  w: {cpu: -1}\n", []string{"i.yaml:3:", "nodes.w.cpu -1"}},
		{"two problems", "instances:\n  - {id: a, service: s, url: x}\n  - {id: b, service: '', url: 'http://h:1'}\n", []string{"i.yaml:2:", "i.yaml:3:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseInstancesFile("i.yaml", []byte(tt.data))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// writeAtomic replaces path the way editors and ConfigMap mounts do.
func writeAtomic(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitSnap(t *testing.T, ch <-chan Snapshot, what string) Snapshot {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatalf("no snapshot: %s", what)
		return Snapshot{}
	}
}

func TestProxyFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "instances.yaml")
	writeAtomic(t, path, goodFile)
	logs := &testenv.SyncBuffer{}
	f, err := NewFile(FileConfig{Path: path, Interval: spec.Duration{Duration: 5 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan Snapshot, 10)
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, func(s Snapshot) { ch <- s }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	if s := waitSnap(t, ch, "initial"); len(s.Instances) != 2 {
		t.Fatalf("initial: %d instances", len(s.Instances))
	}
	// A valid edit is delivered.
	writeAtomic(t, path, "instances:\n  - {id: s3, service: dps, url: 'http://127.0.0.1:8083'}\n")
	if s := waitSnap(t, ch, "after edit"); len(s.Instances) != 1 || s.Instances[0].ID != "s3" {
		t.Fatalf("after edit: %+v", s.Instances)
	}
	// An invalid edit is logged with file:line and no snapshot replaces the good one.
	writeAtomic(t, path, "instances:\n  - {id: s4, service: dps, url: nope}\n")
	testenv.Eventually(t, 30*time.Second, "an error naming instances.yaml:2", func() bool { return strings.Contains(logs.String(), "instances.yaml:2:") })
	select {
	case s := <-ch:
		t.Fatalf("invalid edit delivered a snapshot: %+v", s)
	default:
	}
	// Rewriting identical content is not a change.
	writeAtomic(t, path, "instances:\n  - {id: s5, service: dps, url: 'http://127.0.0.1:8085'}\n")
	if s := waitSnap(t, ch, "after fix"); s.Instances[0].ID != "s5" {
		t.Fatalf("after fix: %+v", s.Instances)
	}
	writeAtomic(t, path, "instances:\n  - {id: s5, service: dps, url: 'http://127.0.0.1:8085'}\n")
	// The source notices the new inode, reads the file and finds the same hash: wait for a
	// later distinct edit and check it is the next snapshot.
	writeAtomic(t, path, "instances: []\n")
	if s := waitSnap(t, ch, "after empty list"); len(s.Instances) != 0 {
		t.Fatalf("same content delivered again, or wrong snapshot: %+v", s.Instances)
	}
}

func TestProxyFileRejectsBadStart(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewFile(FileConfig{Path: filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("missing file accepted")
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeAtomic(t, bad, "instances: 3\n")
	_, err := NewFile(FileConfig{Path: bad})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:1:") {
		t.Errorf("bad file: err = %v, want file:line", err)
	}
}

func TestProxyFileFromYAML(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "i.yaml")
	writeAtomic(t, path, goodFile)
	c, ok := LookupSource(FileKey)
	if !ok {
		t.Fatal("file source not registered")
	}
	for _, doc := range []string{path, "{path: " + path + ", interval: 2s}"} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatal(err)
		}
		src, err := c(n.Content[0])
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if src.Name() != "file:"+path {
			t.Errorf("name = %q", src.Name())
		}
	}
	var n yaml.Node
	_ = yaml.Unmarshal([]byte("{path: x, every: 2s}"), &n)
	if _, err := c(n.Content[0]); err == nil || !strings.Contains(err.Error(), `unknown field "every"`) {
		t.Errorf("unknown key: err = %v", err)
	}
}

func TestProxySourceRegistry(t *testing.T) {
	keys := SourceKeys()
	found := false
	for _, k := range keys {
		found = found || k == FileKey
	}
	if !found {
		t.Errorf("SourceKeys() = %v, want %q among them", keys, FileKey)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a key twice did not panic")
		}
	}()
	RegisterSource(FileKey, newFileFromYAML)
}

func FuzzProxyParseInstancesFile(f *testing.F) {
	f.Add([]byte(goodFile))
	f.Add([]byte("instances: [{id: a, service: b, url: 'http://h:1'}]"))
	f.Add([]byte("nodes: {a: {cpu: .nan}}"))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := ParseInstancesFile("f.yaml", data)
		if err != nil {
			return
		}
		for _, in := range snap.Instances {
			if in.ID == "" || !ValidServiceName(in.Service) || CheckInstanceURL(in.URL) != nil {
				t.Fatalf("invalid instance accepted: %+v", in)
			}
		}
	})
}

// TestCheckInstanceID: an ID is written into every answer's X-Continuum-Instance field, so
// control characters (a CRLF would split the answer), non-ASCII bytes, edge spaces and
// overlong IDs are refused, with the offending byte named.
func TestCheckInstanceID(t *testing.T) {
	for _, ok := range []string{"s3", "ns/pod-1@10.0.0.3:8080", "a b", strings.Repeat("x", MaxInstanceIDLen)} {
		if err := CheckInstanceID(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a\r\nX: 1", "a\x00", "a\tb", " a", "a ", "é", strings.Repeat("x", MaxInstanceIDLen+1)} {
		if err := CheckInstanceID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_, err := ParseInstancesFile("i.yaml", []byte("instances:\n  - {id: \"a\\r\\nb\", service: dps, url: \"http://h:1\"}\n"))
	if err == nil || !strings.Contains(err.Error(), "i.yaml:2") || !strings.Contains(err.Error(), "0x0d") {
		t.Errorf("file with a CR in an id: %v", err)
	}
}
