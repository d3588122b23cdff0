package kinds_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

func TestKVKindCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "kv", "client_port: 12379\nfsync: always\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(kind.Env{Binary: "/bin/continuum", Instance: "kv1", Node: "edge", Nodes: map[string]string{"edge": "10.0.0.2"}, OutDir: "/o"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "kv", "--name", "kv1", "--data-dir", "/o/data",
		"--listen-client-urls", "http://0.0.0.0:12379", "--advertise-client-urls", "http://10.0.0.2:12379",
		"--events-file", "/o/events.jsonl", "--fsync", "always"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:12379" {
		t.Errorf("args %q ready %q", cmd.Args, cmd.ReadyAddr)
	}
}

func TestKVLagKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "kv-lag", "writer: m1\nreader: m2\nrate: 50\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, m := kindtest.Decode(t, "kv", "client_port: 2379\n")
	env := kind.Env{Binary: "/bin/continuum", OutDir: "/o", Duration: 20 * time.Second,
		Components: map[string]kind.Component{"m1": kindtest.Component(t, "n1", "kv", m), "m2": kindtest.Component(t, "n2", "kv", m)}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(cmd.Args, " ")
	for _, want := range []string{"/bin/continuum load kv-lag --writer http://n1:2379 --reader http://n2:2379 ", "--rate 50 ", "--timeout 30s "} {
		if !strings.Contains(line, want) {
			t.Errorf("command %q lacks %q", line, want)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"writer: a\nreader: a\n", "both"},
		{"writer: a\n", "required"},
		{"writer: a\nreader: b\nrate: 0\n", "rate"},
	} {
		k, cfg := kindtest.Decode(t, "kv-lag", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error about %s", c.yaml, err, c.want)
		}
	}
	// Every bad key at once, each with its flag.
	k, cfg = kindtest.Decode(t, "kv-lag", "{rate: 0, timeout: 0s}")
	var fes kind.FieldErrors
	if err := k.Validate(cfg); !errors.As(err, &fes) || len(fes) != 4 {
		t.Fatalf("got %v, want 4 field errors", err)
	}
	for i, want := range [][2]string{{"writer", "--writer"}, {"reader", "--reader"}, {"rate", "--rate"}, {"timeout", "--timeout"}} {
		if fes[i].Key != want[0] || fes[i].Flag != want[1] {
			t.Errorf("error %d: %+v, want key %q flag %q", i, *fes[i], want[0], want[1])
		}
	}
}

func TestKVKindPeerCompression(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"peer_compression: zstd\ncluster: c\n", `peer_compression (--peer-compression): "zstd": want s2, gzip or none`},
		{"peer_compression: gzip\n", "needs cluster"},
	} {
		k, cfg := kindtest.Decode(t, "kv", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %q", c.yaml, err, c.want)
		}
	}
	k, cfg := kindtest.Decode(t, "kv", "peer_compression: none\ncluster: c\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	env := kind.Env{Binary: "/bin/continuum", Instance: "m1", Node: "n1", Nodes: map[string]string{"n1": "10.0.0.2"}, OutDir: "/o",
		Components: map[string]kind.Component{"m1": kindtest.Component(t, "n1", "kv", cfg)}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if line := strings.Join(cmd.Args, " "); !strings.Contains(line, "--peer-compression none") {
		t.Errorf("command %q lacks --peer-compression none", line)
	}
}

func TestKVClusterCommand(t *testing.T) {
	kindtest.CheckEtcdClusterCommand(t, "kv")
	k, cfg := kindtest.Decode(t, "kv", "cluster: c1\npeer_batch_linger: 0s\n")
	env := kind.Env{Binary: "/bin/continuum", Instance: "m1", Components: map[string]kind.Component{"m1": kindtest.Component(t, "n1", "kv", cfg)}}
	if cmd, err := k.Command(env, cfg); err != nil || !strings.Contains(strings.Join(cmd.Args, " "), "--peer-batch-linger 0s") {
		t.Errorf("peer_batch_linger 0s: %v %v", cmd.Args, err)
	}
	k, cfg = kindtest.Decode(t, "kv", "cluster: c1\npeers: [m9]\n")
	env = kind.Env{Instance: "m1", Components: map[string]kind.Component{"m1": kindtest.Component(t, "n1", "kv", cfg)}}
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), `peers names "m9"`) {
		t.Errorf("unknown peer: %v", err)
	}
}

func TestKVKindConfigValidation(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"fsync: sometimes", "fsync"},
		{"peers: [a]", "peers needs cluster"},
		{"peer_port: 2379", "peer_port are both"},
		{"peer_batch_linger: 3ms", "peer_batch_linger needs cluster"},
		{"cluster: c\npeer_batch_linger: 1s", "below 1s"},
		{"cluster: c\npeer_batch_linger: -1ms", "below 1s"},
	} {
		k, cfg := kindtest.Decode(t, "kv", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kv %q: %v, want an error about %s", c.yaml, err, c.want)
		}
	}
}

// TestKVKindReportsEveryError: a config with three problems gets all three, each naming its
// key and the flag it becomes, as a kind.FieldErrors list the scenario loader places per key.
func TestKVKindReportsEveryError(t *testing.T) {
	k, cfg := kindtest.Decode(t, "kv", "client_port: 0\nfsync: sometimes\ndata_dir: rel\n")
	err := k.Validate(cfg)
	var fes kind.FieldErrors
	if !errors.As(err, &fes) || len(fes) != 3 {
		t.Fatalf("got %v, want 3 field errors", err)
	}
	for i, want := range []string{
		"client_port (--listen-client-urls): 0: must be between 1 and 65535",
		`fsync (--fsync): "sometimes": want batch, always or never`,
		`data_dir (--data-dir): "rel": must be an absolute path`,
	} {
		if !strings.HasPrefix(fes[i].Error(), want) {
			t.Errorf("error %d: %q, want %q", i, fes[i].Error(), want)
		}
	}
}
