package orchestrator

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// TestEventsRoundTrip: every kind of event, as the job loop writes it, reads back equal; a line
// cut by a kill is skipped; and the table covers every kind there is.
func TestEventsRoundTrip(t *testing.T) {
	conf := plan.Config{Strategy: "min-kld", Global: "n1", Clusters: []plan.Cluster{{Aggregator: "n2", Clients: []string{"n4", "n5"}}},
		KLD: 0.2244, Epochs: 8, LocalRounds: 7, CostPerEpoch: 598.2}
	acc := 0.81
	rc := Reconfiguration{Cause: "n9 left (unreachable)", DetectedAt: 1800000020, AppliedAt: 1800000020.25, ApplyS: 0.25,
		Configured: []string{"fl-la-n2"}, Decision: "kept the clusters"}
	events := []Event{
		{Kind: EventConfigure, Config: &conf, Available: []string{"n1", "n2", "n4", "n5"}},
		{Kind: EventNodeChange, Change: "n9 left (unreachable)"},
		{Kind: EventReconfigure, Config: &conf, Replan: &plan.Change{Moved: map[string][2]string{"n9": {"n2", ""}}, Reason: "kept the clusters"},
			Reconfiguration: &rc},
		{Kind: EventReconfigureFailed, Error: "no client left", Cause: []string{"n4 left (unreachable)", "n5 left (unreachable)"}},
		{Kind: EventResumed, Round: 3, ResumeS: 1.5, DetectedAt: 1800000020},
		{Kind: EventServiceExited, Service: "fl-ga-n1", Node: "n1", How: "signal killed"},
		{Kind: EventServiceRestarted, Service: "fl-ga-n1", Resume: true, RestartS: 0.5},
		{Kind: EventStop, Reason: "4 global rounds done", Round: 4, Accuracy: &acc, CostSpent: 4785.6},
		{Kind: EventFailed, Error: "deploy: aggregator n2 exited (exit 1) before it was ready"},
	}
	var kinds []EventKind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	if !reflect.DeepEqual(kinds, EventKinds) {
		t.Fatalf("the test writes %v, the kinds are %v", kinds, EventKinds)
	}

	dir := t.TempDir()
	rec, err := newRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	for i, e := range events {
		rec.event(t0.Add(time.Duration(i)*time.Second), e)
	}
	if err := rec.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"t":1800000099,"event":"sto`) // a kill mid-line
	f.Close()

	got, err := ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(events) {
		t.Fatalf("read %d events, wrote %d", len(got), len(events))
	}
	for i, want := range events {
		want.T = unix(t0.Add(time.Duration(i) * time.Second))
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("event %d (%s): read %+v, wrote %+v", i, want.Kind, got[i], want)
		}
	}
}

// TestEventsReadsOlderReconfigure: a reconfigure line of an older orchestrator, with the plan's
// decision under "change", still gives its configuration and timings.
func TestEventsReadsOlderReconfigure(t *testing.T) {
	dir := t.TempDir()
	line := `{"t":5,"event":"reconfigure","config":{"strategy":"min-kld","global":"n1","epochs":7,"local_rounds":10},` +
		`"change":{"reoptimized":false,"global_changed":false,"reason":"kept"},"reconfiguration":{"cause":"n9 left","detected_at":5,"applied_at":5.2,"apply_s":0.2,"decision":"kept"}}
{"t":6,"event":"node-change","change":{"not":"text"}}
`
	if err := os.WriteFile(filepath.Join(dir, EventsFile), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != EventReconfigure || got[0].Config == nil || got[0].Config.Epochs != 7 ||
		got[0].Reconfiguration == nil || got[0].Reconfiguration.ApplyS != 0.2 {
		t.Fatalf("read %+v (want the reconfigure line, not the malformed node-change)", got)
	}
}
