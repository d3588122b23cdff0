package kinds_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/shareddata/pace"
)

func env(t *testing.T) kind.Env {
	_, etcdCfg := kindtest.Decode(t, "etcd", "{}")
	_, kvCfg := kindtest.Decode(t, "kv", "{}")
	_, redisCfg := kindtest.Decode(t, "redis", "{}")
	return kind.Env{Instance: "c1", Node: "n3", Binary: "/bin/continuum", OutDir: "/r/workloads/c1",
		Duration: 30e9, Warmup: 5e9,
		Components: map[string]kind.Component{
			"e1": kindtest.Component(t, "n1", "etcd", etcdCfg), "e2": kindtest.Component(t, "n2", "etcd", etcdCfg),
			"kv1": kindtest.Component(t, "n1", "kv", kvCfg), "r1": kindtest.Component(t, "n1", "redis", redisCfg),
		}}
}

func TestPaceKindCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "shareddata-pace", "{role: consumer, group: g1, class: wave, components: [e1, e2], mode: atomic, consistency: both}")
	if k.Role != kind.RoleWorkload {
		t.Fatalf("role %s", k.Role)
	}
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(env(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Flags at their defaults (duration 30s, timeout 5s, the state, control and inference) are
	// left out.
	want := []string{"/bin/continuum", "pace", "consumer", "--backend", "etcd", "--endpoints", "http://n1:2379,http://n2:2379",
		"--group", "g1", "--id", "c1", "--class", "wave", "--metrics-size", "100000", "--period", "100ms",
		"--mode", "atomic", "--consistency", "both", "--warmup", "5s", "--out", "/r/workloads/c1"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	_, cfg = kindtest.Decode(t, "shareddata-pace", "{role: producer, group: g1, id: p7, components: [r1], metrics_size: 2kB, period: 250ms}")
	if cmd, err = k.Command(env(t), cfg); err != nil {
		t.Fatal(err)
	}
	want = []string{"/bin/continuum", "pace", "producer", "--backend", "redis", "--endpoints", "n1:6379",
		"--group", "g1", "--id", "p7", "--metrics-size", "2000", "--period", "250ms"}
	if !slices.Equal(cmd.Args[:len(want)], want) {
		t.Errorf("args\n%q\nwant prefix\n%q", cmd.Args, want)
	}
	// A metrics size and period equal to their flags' defaults (pulse's) but not to the class's
	// are given all the same: the command takes the class's for a flag left out.
	_, cfg = kindtest.Decode(t, "shareddata-pace", "{role: producer, group: g1, class: wave, components: [r1], metrics_size: 1kB, period: 1s}")
	if cmd, err = k.Command(env(t), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--class wave", "--metrics-size 1000", "--period 1s"} {
		if !strings.Contains(strings.Join(cmd.Args, " "), want) {
			t.Errorf("args %q lack %s", cmd.Args, want)
		}
	}
	// ... and left out where the class's are the defaults' (ping's metrics size is pulse's).
	_, cfg = kindtest.Decode(t, "shareddata-pace", "{role: producer, group: g1, class: ping, components: [r1]}")
	if cmd, err = k.Command(env(t), cfg); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(cmd.Args, " "); strings.Contains(args, "--metrics-size") || !strings.Contains(args, "--class ping --period 100ms") {
		t.Errorf("args %q: want --class ping --period 100ms and no --metrics-size", args)
	}
}

func TestPaceKindRejectsBadConfig(t *testing.T) {
	k, _ := kind.Lookup("shareddata-pace")
	for _, c := range []struct{ src, want string }{
		{"{group: g, components: [e1]}", `role (continuum pace producer|consumer): "": want producer or consumer`},
		{"{role: producer, group: 'a/b', components: [e1]}", `group (--group): group "a/b"`},
		{"{role: producer, group: g}", "components (--endpoints): name the store instances"},
		{"{role: producer, group: g, components: [e1], class: storm}", `traffic class "storm"`},
		{"{role: consumer, group: g, components: [e1], mode: fast}", `mode "fast"`},
		{"{role: consumer, group: g, components: [e1], state_size: 10}", "state size 10"},
		{"{role: producer, group: g, components: [e1], backend: mongo}", `backend "mongo"`},
	} {
		_, cfg := kindtest.Decode(t, "shareddata-pace", c.src)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
	// Components that mix stores, or do not exist, fail when the command is built.
	for _, c := range []struct{ src, want string }{
		{"{role: producer, group: g, components: [e1, r1]}", "components mix etcd and redis"},
		{"{role: producer, group: g, components: [nope]}", "nope"},
	} {
		_, cfg := kindtest.Decode(t, "shareddata-pace", c.src)
		if _, err := k.Command(env(t), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
}

func TestPaceKindMetrics(t *testing.T) {
	k, _ := kind.Lookup("shareddata-pace")
	dir := t.TempDir()
	b, _ := json.Marshal(pace.Report{Role: "consumer", Delivered: 10, Processed: 9, Gaps: 1, Reconnects: 2})
	if err := os.WriteFile(filepath.Join(dir, pace.ReportFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := k.Metrics(kind.RunOutput{Instances: []kind.InstanceOutput{{Name: "c1", OutDir: dir}, {Name: "c2", OutDir: t.TempDir()}}})
	got := m["pace/c1"]
	if len(m) != 1 || got["processed"] != 9 || got["gaps"] != 1 || got["reconnects"] != 2 || got["delivered"] != 10 {
		t.Errorf("metrics %v", m)
	}
}

// TestPaceKindReportsEveryError: three problems, three errors, each with its key and flag.
func TestPaceKindReportsEveryError(t *testing.T) {
	k, cfg := kindtest.Decode(t, "shareddata-pace", "{role: leader, group: 'a/b', class: storm, components: [e1]}")
	err := k.Validate(cfg)
	var fes kind.FieldErrors
	if !errors.As(err, &fes) || len(fes) != 3 {
		t.Fatalf("got %v, want 3 field errors", err)
	}
	for i, key := range []string{"role", "group", "class"} {
		if fes[i].Key != key || fes[i].Flag == "" {
			t.Errorf("error %d: %+v, want key %s with its flag", i, fes[i], key)
		}
	}
}
