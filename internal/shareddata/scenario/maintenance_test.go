package scenario_test

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
	_ "github.com/continuum-project/continuum/internal/systems/install"
)

func TestMaintenanceKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "maintenance", "{component: m1, period: 5s}")
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
	want := []string{"/bin/continuum", "shareddata", "maintain", "--endpoint", "http://n1:2379", "--period", "5s",
		"--probe-interval", "10ms", "--duration", "1m10s", "--warmup", "5s", "--out", "/r/w/maint1"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	for _, c := range []struct{ src, want string }{
		{"{period: 5s}", "component: name the etcd or kv member"},
		{"{component: m1, period: 10ms}", "at least 100ms"},
	} {
		_, bad := kindtest.Decode(t, "maintenance", c.src)
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
