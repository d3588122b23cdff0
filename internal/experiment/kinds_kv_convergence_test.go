package experiment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestKVMetricsConvergenceAfterHeal(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return t0.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	line := func(peer string, reconnect, caught float64) string {
		return `time=` + at(caught) + ` level=INFO msg="caught up with peer" member=x peer=` + peer +
			` url=http://10.0.0.2:2380 reconnect_at=` + at(reconnect) + ` caught_up_at=` + at(caught) +
			` took=10ms changes=42 disconnected_for=5.1s`
	}
	logs := map[string][]string{
		// m1 was cut off: it reconnects to both peers after each heal.
		"m1": {line("m2", 0.5, 0.6), line("m3", 0.5, 0.7), // start-up, before any heal
			`time=` + at(6) + ` level=INFO msg="peer stream lost" peer=m2 err="no batch from m2 for 3s"`,
			line("m2", 10.2, 10.4), line("m3", 10.3, 10.9), line("m2", 12, 12.1), // a later reconnect is not the heal's
			line("m2", 30.1, 30.3)},
		// m2 only lost its stream to m1.
		"m2": {line("m1", 10.25, 10.6)},
		// m3 logged nothing after the heals.
		"m3": {line("m1", 0.4, 0.5)},
	}
	var out RunOutput
	out.T0 = t0
	out.Events = []FiredEvent{{At: 5 * time.Second, Action: "partition"}, {At: 10 * time.Second, Action: "heal"},
		{At: 20 * time.Second, Action: "partition"}, {At: 30 * time.Second, Action: "heal"}}
	for name, ls := range logs {
		p := filepath.Join(dir, name+".log")
		if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out.Instances = append(out.Instances, InstanceOutput{Name: name, Log: p})
	}
	out.Instances = append(out.Instances, InstanceOutput{Name: "gone", Log: filepath.Join(dir, "missing.log")})

	m := kvMetrics(out)
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
		t.Errorf("m3 reported a catch-up it never logged: %v", m)
	}
	if kvMetrics(RunOutput{T0: t0, Instances: out.Instances}) != nil {
		t.Error("a run without a heal has no convergence figures")
	}
}

func TestLogfmt(t *testing.T) {
	got := logfmt(`time=2026-11-22T06:00:00Z level=INFO msg="caught up with peer" err="a \"b\" c" n=3 empty=`)
	want := map[string]string{"time": "2026-11-22T06:00:00Z", "level": "INFO", "msg": "caught up with peer",
		"err": `a "b" c`, "n": "3", "empty": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func TestFiredEventsKeepsOnlyOK(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events.csv")
	csv := "t_s,action,target,detail,status\n5.001,partition,n1|n2,split,ok\n6.000,kill,n3,,error: no such node\n10.002,heal,,,ok\n"
	if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := firedEvents(p)
	if len(ev) != 2 || ev[0].Action != "partition" || ev[1].Action != "heal" || ev[1].At != 10002*time.Millisecond {
		t.Fatalf("%+v", ev)
	}
	if firedEvents(filepath.Join(t.TempDir(), "none.csv")) != nil {
		t.Fatal("missing file")
	}
}
