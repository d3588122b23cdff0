package kinds

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/kv/server"
)

func TestConvergenceAfterHeal(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(peer string, reconnect, caught float64) server.Event {
		return server.Event{Event: server.EventCaughtUp, Member: "x", Peer: peer, ReconnectAt: at(reconnect), CaughtUpAt: at(caught)}
	}
	events := map[string][]server.Event{
		// m1 was cut off: it reconnects to both peers after each heal.
		"m1": {ev("m2", 0.5, 0.6), ev("m3", 0.5, 0.7), // start-up, before any heal
			ev("m2", 10.2, 10.4), ev("m3", 10.3, 10.9), ev("m2", 12, 12.1), // a later reconnect is not the heal's
			ev("m2", 30.1, 30.3)},
		// m2 only lost its stream to m1.
		"m2": {ev("m1", 10.25, 10.6)},
		// m3 reported nothing after the heals.
		"m3": {ev("m1", 0.4, 0.5)},
	}
	var out kind.RunOutput
	out.T0 = t0
	out.Events = []kind.FiredEvent{{At: 5 * time.Second, Action: "partition"}, {At: 10 * time.Second, Action: "heal"},
		{At: 20 * time.Second, Action: "partition"}, {At: 30 * time.Second, Action: "heal"}}
	for name, es := range events {
		torn := ""
		if name == "m2" {
			torn = `{"event":"caught_up","peer":"m3","reconn` // killed mid-write
		}
		out.Instances = append(out.Instances, kind.InstanceOutput{Name: name, OutDir: writeEvents(t, dir, name, es, torn)})
	}
	out.Instances = append(out.Instances, kind.InstanceOutput{Name: "gone", OutDir: filepath.Join(dir, "missing")})

	m := convergence(out)
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
	for metric, want := range map[string]map[string]float64{
		"kv/m1/caught_up_after_heal_s":  {"heal1": 0.9, "heal2": 0.3},
		"kv/m2/caught_up_after_heal_s":  {"heal1": 0.6},
		"kv/all/converged_after_heal_s": {"heal1": 0.9, "heal2": 0.3},
	} {
		got := m[metric]
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v", metric, got, want)
			continue
		}
		for f, v := range want {
			if !near(got[f], v) {
				t.Errorf("%s[%s] = %v, want %v", metric, f, got[f], v)
			}
		}
	}
	if _, ok := m["kv/m3/caught_up_after_heal_s"]; ok {
		t.Errorf("m3 reported a catch-up it never wrote: %v", m)
	}
	if convergence(kind.RunOutput{T0: t0, Instances: out.Instances}) != nil {
		t.Error("a run without a heal has no convergence figures")
	}
}

// Each member's storage line becomes kv/<member>/storage beside the convergence figures; a
// member that wrote none (killed) is left out.
func TestStorageMetrics(t *testing.T) {
	dir := t.TempDir()
	var out kind.RunOutput
	for name, lines := range map[string][]server.Event{
		"m1": {{Event: server.EventCaughtUp, Member: "m1", Peer: "m2"},
			{Event: server.EventStorage, Member: "m1", Storage: &server.StorageCounters{WALBytes: 4 << 20, FlushedBytes: 2 << 20, CompactedBytes: 6 << 20, Compactions: 3, WriteAmp: 3}}},
		"m2": {{Event: server.EventCaughtUp, Member: "m2", Peer: "m1"}},
	} {
		out.Instances = append(out.Instances, kind.InstanceOutput{Name: name, OutDir: writeEvents(t, dir, name, lines, "")})
	}
	m := metrics(out)
	want := map[string]float64{"wal_mib": 4, "flushed_mib": 2, "compacted_mib": 6, "compactions": 3, "write_amp": 3}
	if got := m["kv/m1/storage"]; len(got) != len(want) {
		t.Fatalf("kv/m1/storage = %v, want %v", got, want)
	}
	for k, v := range want {
		if m["kv/m1/storage"][k] != v {
			t.Errorf("%s = %v, want %v", k, m["kv/m1/storage"][k], v)
		}
	}
	if _, ok := m["kv/m2/storage"]; ok || len(m) != 1 {
		t.Errorf("metrics %v: only m1 wrote storage figures, and no heal happened", m)
	}
}

// writeEvents writes a member's events file under dir/name, one JSON line per event, then tail
// (e.g. a torn line), and returns the member's output dir.
func writeEvents(t *testing.T, dir, name string, events []server.Event, tail string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, e := range events {
		line, _ := json.Marshal(e)
		b = append(append(b, line...), '\n')
	}
	b = append(b, tail...)
	if err := os.WriteFile(filepath.Join(d, eventsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}
