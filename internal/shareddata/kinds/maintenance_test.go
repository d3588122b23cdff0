package kinds_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/shareddata/maintain"
)

func TestMaintenanceKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "shareddata-maintenance", "{component: m1, period: 5s}")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, etcd := kindtest.Decode(t, "etcd", "{}")
	env := kind.Env{Instance: "maint1", Node: "n1", Binary: "/bin/continuum", OutDir: "/r/w/maint1", Duration: 70e9, Warmup: 5e9,
		Components: map[string]kind.Component{"m1": kindtest.Component(t, "n1", "etcd", etcd)}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// --probe-interval is at its default (10ms), so left out.
	want := []string{"/bin/continuum", "shareddata", "maintain", "--endpoint", "http://n1:2379", "--period", "5s",
		"--duration", "1m10s", "--warmup", "5s", "--out", "/r/w/maint1"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	for _, c := range []struct{ src, want string }{
		{"{period: 5s}", "component (--endpoint): required: name the etcd or kv member"},
		{"{component: m1, period: 10ms}", "at least 100ms"},
	} {
		_, bad := kindtest.Decode(t, "shareddata-maintenance", c.src)
		if err := k.Validate(bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
	dir := t.TempDir()
	b, _ := json.Marshal(maintain.Summary{Rounds: 3, DowntimeMSMax: 120, DBBeforeMax: 2 << 20})
	if err := os.WriteFile(filepath.Join(dir, maintain.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := k.Metrics(kind.RunOutput{Instances: []kind.InstanceOutput{{Name: "maint1", OutDir: dir}}})
	if got := m["maintenance/maint1"]; got["rounds"] != 3 || got["downtime_ms_max"] != 120 || got["db_before_mib_max"] != 2 {
		t.Errorf("metrics %v", m)
	}
}

func TestFreshnessKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "shareddata-freshness", "{write: m2, read: [m1, m3], leader: m1}")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, etcd := kindtest.Decode(t, "etcd", "{cluster: c}")
	_, member := kindtest.Decode(t, "redis", "{cluster: r}")
	env := kind.Env{Instance: "fresh", Node: "n2", Binary: "/bin/continuum", OutDir: "/r/w/fresh", Duration: 45e9, Warmup: 5e9,
		Components: map[string]kind.Component{
			"m1": kindtest.Component(t, "n1", "etcd", etcd), "m2": kindtest.Component(t, "n2", "etcd", etcd),
			"m3": kindtest.Component(t, "n3", "etcd", etcd), "r1": kindtest.Component(t, "n1", "redis", member),
		}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "shareddata", "freshness", "--backend", "etcd", "--write", "http://n2:2379",
		"--read", "http://n1:2379,http://n3:2379", "--leader", "http://n1:2379", // --interval 100ms, --poll 2ms: defaults
		"--duration", "45s", "--warmup", "5s", "--out", "/r/w/fresh"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	_, mixed := kindtest.Decode(t, "shareddata-freshness", "{write: m2, read: [r1]}")
	if _, err := k.Command(env, mixed); err == nil || !strings.Contains(err.Error(), "read component r1 is redis-cluster") {
		t.Errorf("mixed stores: %v", err)
	}
	_, rc := kindtest.Decode(t, "shareddata-freshness", "{write: r1, leader: r1}")
	if cmd, err = k.Command(env, rc); err != nil || !slices.Contains(cmd.Args, "redis-cluster") || !slices.Contains(cmd.Args, "n1:6379") {
		t.Errorf("redis cluster: %q, %v", cmd.Args, err)
	}
	_, bad := kindtest.Decode(t, "shareddata-freshness", "{read: [m1]}")
	if err := k.Validate(bad); err == nil || !strings.Contains(err.Error(), "write (--write): required: name the component") {
		t.Errorf("no write: %v", err)
	}
}

// TestMaintenanceAndFreshnessReportEveryError: every bad key at once, each with the flag of the
// shareddata command it becomes; good configs pass.
func TestMaintenanceAndFreshnessReportEveryError(t *testing.T) {
	for _, c := range []struct {
		kind, bad, good string
		want            [][2]string
	}{
		{"shareddata-maintenance", "{port: -1, period: 10ms, probe_interval: -1ms}", "{component: m1, period: 0s}",
			[][2]string{{"component", "--endpoint"}, {"port", "--endpoint"}, {"period", "--period"}, {"probe_interval", "--probe-interval"}}},
		{"shareddata-freshness", "{read: [m1], interval: 0s, poll: -1ms}", "{write: m1}",
			[][2]string{{"write", "--write"}, {"interval", "--interval"}, {"poll", "--poll"}}},
	} {
		kindtest.CheckFieldErrors(t, c.kind, c.bad, c.good, c.want)
	}
}
