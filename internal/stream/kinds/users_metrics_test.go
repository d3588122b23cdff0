package kinds

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/report/reporttest"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/stream/streamload"
)

// TestUsersMetrics reads a run's outputs: the accounting under stream/<instance>/<architecture>,
// the drain from a heal until the last record sent before it arrived, resources mean and max per
// component, and the fabric's packets/s mean and busiest interval.
func TestUsersMetrics(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(1000, 0)
	out := filepath.Join(dir, "users")
	reporttest.WriteJSON(t, filepath.Join(out, streamload.ReportFile), streamload.Report{Users: 100, Payload: 1024,
		Sent: 300, Acked: 300, Received: 299, Lost: 1, Duplicated: 2, T0UnixUS: t0.Add(time.Second).UnixMicro(),
		Verify: &streamload.Verify{Records: 299, Missing: 1}})
	// Timeline seconds count from the workload's t0, one second after the run's: the heal at
	// run time 4 s is at 3 s on it. Records of seconds 0-2 were sent before it; second 2's
	// last arrived at 9.5 s, 6.5 s after the heal; seconds 3 and 4 do not count.
	reporttest.WriteCSV(t, filepath.Join(out, streamload.TimelineFile), streamload.TimelineHeader, [][]string{
		{"0", "100", "100", "100", "0", "1.2"}, {"1", "100", "100", "100", "0", "8.0"}, {"2", "100", "100", "99", "1", "9.5"},
		{"3", "100", "100", "100", "0", "20"}, {"4", "0", "0", "0", "0", "0"}})
	samples := filepath.Join(dir, "samples.csv")
	row := func(ts, node, comp, cpu, rss, rx, tx, txp string) []string {
		return []string{ts, node, comp, "0", cpu, rss, "0", rx, tx, "0", "0", "0", "0", txp}
	}
	reporttest.WriteCSV(t, samples, results.SamplesHeader, [][]string{
		row("1", "edge", "", "", "", "0", "0", "0"), row("1", "edge", "kafka", "0.2", "104857600", "", "", ""),
		row("1", "cloud", "", "", "", "0", "0", "0"),
		row("2", "edge", "", "", "", "125000", "125000", "1000"), row("2", "edge", "kafka", "0.6", "209715200", "", "", ""),
		row("2", "cloud", "", "", "", "0", "0", "500"),
		row("3", "edge", "", "", "", "250000", "250000", "1100"), row("3", "cloud", "", "", "", "0", "0", "600"),
	})
	m := usersMetrics(kind.RunOutput{T0: t0, Samples: samples,
		Events:    []kind.FiredEvent{{At: 2 * time.Second, Action: "partition"}, {At: 4 * time.Second, Action: "heal"}},
		Instances: []kind.InstanceOutput{{Name: "users", OutDir: out, Config: &UsersConfig{Architecture: ArchEdgeCloud}}}})
	s := m["stream/users/edge-cloud"]
	if s == nil || s["lost"] != 1 || s["duplicated"] != 2 || s["users"] != 100 || s["db_missing"] != 1 || s["db_records"] != 299 {
		t.Fatalf("stream metrics %v", s)
	}
	if d := s["drain_after_heal_s"]; d < 6.49 || d > 6.51 {
		t.Errorf("drain after heal %v, want 6.5", d)
	}
	if _, ok := s["drain_after_partition_s"]; ok {
		t.Error("a drain after a partition")
	}
	k := m["stream-resources/kafka"]
	if k["cpu_pct_mean"] != 40 || k["cpu_pct_max"] != 60 || k["rss_mib_max"] != 200 || k["rss_mib_mean"] != 150 || k["node_net_mbit_s_max"] != 2 {
		t.Errorf("kafka resources %v", k)
	}
	// Interval 1-2 s: 1000 + 500 packets; 2-3 s: 100 + 100.
	if f := m["stream-fabric"]; f["packets_per_s_max"] != 1500 || f["packets_per_s_mean"] != 850 {
		t.Errorf("fabric %v", f)
	}
}
