package experiment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/results"
)

func init() {
	kind.Register(kind.Def[struct{}]{Name: "test-joiner", Role: kind.RoleComponent, Helper: true,
		Defaults: func() *struct{} { return &struct{}{} }, Command: trueCommand[struct{}]})
}

// TestResourceMetricsLeaveHelpersOut: a store member, a helper component (a cluster joiner)
// and a workload were sampled; only the member is a resource of the system under test.
func TestResourceMetricsLeaveHelpersOut(t *testing.T) {
	dir := t.TempDir()
	rows := "t_s,node,component,cpu_seconds,cpu_util,rss_bytes,disk_bytes,rx_bytes,tx_bytes,power_w,energy_j,idle_energy_j,rx_packets,tx_packets\n" +
		"0,n1,,0,0,0,0,0,0,0,0,0,0,0\n0,n1,db,0,0.5,1048576,0,0,0,0,0,0,0,0\n0,n1,join,0,0,1048576,0,0,0,0,0,0,0,0\n0,n2,load,0,1,1048576,0,0,0,0,0,0,0,0\n" +
		"0,n2,,0,0,0,0,0,0,0,0,0,0,0\n" +
		"10,n1,,0,0,0,0,1000,1000,0,0,0,10,10\n10,n1,db,5,0.5,1048576,0,0,0,0,10,0,0,0\n10,n1,join,0,0,1048576,0,0,0,0,0,0,0,0\n" +
		"10,n2,load,10,1,1048576,0,0,0,0,0,0,0,0\n10,n2,,0,0,0,0,1000,1000,0,0,0,10,10\n"
	if err := os.WriteFile(filepath.Join(dir, results.SamplesFile), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := runRecord{dir: dir, workloads: []string{"load"},
		instances: []Instance{{Name: "db", Kind: "http-echo"}, {Name: "join", Kind: "test-joiner"}, {Name: "load", Kind: "http-load"}}}
	m := resourceMetrics(rec)
	if _, ok := m["resources/join"]; ok {
		t.Error("the helper's resources were counted")
	}
	if _, ok := m["resources/load"]; ok {
		t.Error("the workload's resources were counted")
	}
	if db := m["resources/db"]; db["cpu_pct"] != 50 || db["cpu_seconds"] != 5 {
		t.Errorf("resources/db %v", db)
	}
	if tot := m["resources"]; tot["instances"] != 1 || tot["rss_mib"] != 1 {
		t.Errorf("resources %v: want db's alone", tot)
	}
	if f := m["fabric"]; f["packets_per_s"] != 2 {
		t.Errorf("fabric %v: want 20 packets in 10 s", f)
	}
}
