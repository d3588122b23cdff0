package shareddata

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestBackends runs the same application-level checks against every backend, each a real
// server started by the test.
func TestBackends(t *testing.T) {
	for _, backend := range Backends {
		t.Run(backend, func(t *testing.T) {
			cfg := startBackend(t, backend)
			s := openT(t, cfg)
			if s.Backend() != backend {
				t.Errorf("Backend() = %q", s.Backend())
			}
			t.Run("SetGetRemoveList", func(t *testing.T) { testSetGet(t, s) })
			t.Run("Conditional", func(t *testing.T) { testConditional(t, s) })
			t.Run("Groups", func(t *testing.T) { testGroups(t, s) })
			t.Run("SetAndPublish", func(t *testing.T) { testSetAndPublish(t, s) })
			t.Run("MetricsAndControl", func(t *testing.T) { testMetricsAndControl(t, s) })
			t.Run("ResumeFromCursor", func(t *testing.T) { testResume(t, s) })
			t.Run("StateQueue", func(t *testing.T) { testStateQueue(t, s, openT(t, cfg)) })
			t.Run("StateSteps", func(t *testing.T) { testStateSteps(t, s) })
			t.Run("BadInput", func(t *testing.T) { testBadInput(t, s) })
		})
	}
}

func testSetGet(t *testing.T, s Store) {
	ctx := ctxT(t)
	if err := s.Set(ctx, "app", Pair{"a/1", []byte("x")}, Pair{"a/2", []byte("y")}, Pair{"b", []byte{0, 255}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Consistency{Linearizable, Serializable} {
		got, err := s.Get(ctx, "app", []string{"a/1", "b", "missing"}, WithConsistency(c))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"a/1": []byte("x"), "b": {0, 255}}
		// A serializable read may come from a replica that has not caught up yet.
		if c == Linearizable && !reflect.DeepEqual(got, want) {
			t.Errorf("%v Get = %q, want %q", c, got, want)
		}
	}
	// Another namespace does not see these keys.
	if got, err := s.Get(ctx, "other", []string{"a/1"}); err != nil || len(got) != 0 {
		t.Errorf("other namespace: %q, %v", got, err)
	}
	keys, err := s.ListKeys(ctx, "app", "a/")
	if err != nil || !reflect.DeepEqual(keys, []string{"a/1", "a/2"}) {
		t.Errorf("ListKeys a/ = %q, %v", keys, err)
	}
	if err := s.Remove(ctx, "app", "a/1", "missing"); err != nil {
		t.Fatal(err)
	}
	keys, err = s.ListKeys(ctx, "app", "")
	if err != nil || !reflect.DeepEqual(keys, []string{"a/2", "b"}) {
		t.Errorf("ListKeys after Remove = %q, %v", keys, err)
	}
}

func testConditional(t *testing.T, s Store) {
	ctx := ctxT(t)
	steps := []struct {
		name string
		do   func() (bool, error)
		want bool
	}{
		{"SetIf on an absent key", func() (bool, error) { return s.SetIf(ctx, "cond", "k", []byte(""), []byte("v1")) }, false},
		{"SetIfNotExists", func() (bool, error) { return s.SetIfNotExists(ctx, "cond", "k", []byte("v1")) }, true},
		{"SetIfNotExists again", func() (bool, error) { return s.SetIfNotExists(ctx, "cond", "k", []byte("v2")) }, false},
		{"SetIf with a wrong old value", func() (bool, error) { return s.SetIf(ctx, "cond", "k", []byte("v0"), []byte("v2")) }, false},
		{"SetIf", func() (bool, error) { return s.SetIf(ctx, "cond", "k", []byte("v1"), []byte("v2")) }, true},
		{"RemoveIf with a wrong value", func() (bool, error) { return s.RemoveIf(ctx, "cond", "k", []byte("v1")) }, false},
		{"RemoveIf", func() (bool, error) { return s.RemoveIf(ctx, "cond", "k", []byte("v2")) }, true},
		{"SetIfNotExists after RemoveIf", func() (bool, error) { return s.SetIfNotExists(ctx, "cond", "k", []byte("v3")) }, true},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s = %v, %v; want %v", st.name, got, err, st.want)
		}
	}
	got, err := s.Get(ctx, "cond", []string{"k"})
	if err != nil || string(got["k"]) != "v3" {
		t.Errorf("final value %q, %v", got["k"], err)
	}
}

func testGroups(t *testing.T, s Store) {
	ctx := ctxT(t)
	if err := s.AddMember(ctx, "grp", "cells", "c3", "c1", "c2", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveMember(ctx, "grp", "cells", "c2", "c9"); err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMembers(ctx, "grp", "cells")
	if err != nil || !reflect.DeepEqual(m, []string{"c1", "c3"}) {
		t.Errorf("members %q, %v", m, err)
	}
	if m, err := s.GetMembers(ctx, "grp", "empty"); err != nil || len(m) != 0 {
		t.Errorf("empty group %q, %v", m, err)
	}
}

func testSetAndPublish(t *testing.T, s Store) {
	ctx := ctxT(t)
	sub, err := s.Subscribe(ctx, "ev", "", "alarms", "config")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.SetAndPublish(ctx, "ev", []Event{{"alarms", []byte("a1")}}, Pair{"cell7", []byte("down")}); err != nil {
		t.Fatal(err)
	}
	m := recv(t, sub)
	if m.Channel != "alarms" || string(m.Value) != "a1" {
		t.Fatalf("got %+v", m)
	}
	// The data written with the event is there when the event arrives.
	if got, err := s.Get(ctx, "ev", []string{"cell7"}); err != nil || string(got["cell7"]) != "down" {
		t.Errorf("data after the event: %q, %v", got, err)
	}
	// Unsubscribed channels and plain writes publish nothing: the next message is "c1".
	if err := s.SetAndPublish(ctx, "ev", []Event{{"other", []byte("o1")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "ev", Pair{"cell8", []byte("up")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAndPublish(ctx, "ev", []Event{{"config", []byte("c1")}, {"alarms", []byte("a2")}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for range 2 {
		m := recv(t, sub)
		got[m.Channel] = string(m.Value)
	}
	if !reflect.DeepEqual(got, map[string]string{"config": "c1", "alarms": "a2"}) {
		t.Errorf("second publication delivered %v", got)
	}
}

func testMetricsAndControl(t *testing.T, s Store) {
	ctx := ctxT(t)
	metrics, err := s.SubscribeMetrics(ctx, "g1", "")
	if err != nil {
		t.Fatal(err)
	}
	defer metrics.Close()
	ctrl, err := s.SubscribeControl(ctx, "g1", "p1", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	big := bytes.Repeat([]byte("m"), 100_000) // the Burst/Wave classes' 100 kB metrics
	pubs := []struct {
		producer string
		value    []byte
	}{{"p1", []byte("1")}, {"p2", []byte("2")}, {"p1", big}}
	for _, p := range pubs {
		if err := s.PublishMetrics(ctx, "g1", p.producer, p.value); err != nil {
			t.Fatal(err)
		}
	}
	// Another group's metrics are not delivered.
	if err := s.PublishMetrics(ctx, "g2", "p1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pubs {
		nextIs(t, metrics, p.producer, string(p.value))
	}
	if err := s.PublishControl(ctx, "g1", "p2", "c1", []byte("not for p1")); err != nil {
		t.Fatal(err)
	}
	if err := s.PublishControl(ctx, "g1", "p1", "c1", []byte("slow down")); err != nil {
		t.Fatal(err)
	}
	nextIs(t, ctrl, "c1", "slow down")
}

func testResume(t *testing.T, s Store) {
	ctx := ctxT(t)
	sub, err := s.SubscribeMetrics(ctx, "resume", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PublishMetrics(ctx, "resume", "p", []byte("v0")); err != nil {
		t.Fatal(err)
	}
	last := nextIs(t, sub, "p", "v0")
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-sub.C:
		if ok {
			t.Error("message after Close")
		}
	default:
		t.Error("C not closed after Close")
	}
	// Published while nobody listened: a subscription from the last cursor gets exactly these.
	for i := 1; i <= 3; i++ {
		if err := s.PublishMetrics(ctx, "resume", "p", fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	sub, err = s.SubscribeMetrics(ctx, "resume", last.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := 1; i <= 3; i++ {
		nextIs(t, sub, "p", fmt.Sprintf("v%d", i))
	}
	if err := s.PublishMetrics(ctx, "resume", "p", []byte("v4")); err != nil {
		t.Fatal(err)
	}
	nextIs(t, sub, "p", "v4")
}

func testStateQueue(t *testing.T, a, b Store) {
	ctx := ctxT(t)
	for i := 0; i < 5; i++ {
		st, err := a.StatePush(ctx, "c1", 3, fmt.Appendf(nil, "m%d", i))
		if err != nil {
			t.Fatal(err)
		}
		lo := max(0, i-2)
		var want [][]byte
		for j := lo; j <= i; j++ {
			want = append(want, fmt.Appendf(nil, "m%d", j))
		}
		if !reflect.DeepEqual(st, want) {
			t.Fatalf("push %d returned %q, want %q", i, st, want)
		}
	}
	head, tail, err := a.StateIndices(ctx, "c1")
	if err != nil || head != 5 || tail != 2 {
		t.Errorf("indices %d, %d, %v; want 5, 2", head, tail, err)
	}
	// A second client pushes in between: each client's next push still lands exactly once,
	// in order (the first client's cached indices are stale and must be refreshed).
	if _, err := b.StatePush(ctx, "c1", 3, []byte("m5")); err != nil {
		t.Fatal(err)
	}
	st, err := a.StatePush(ctx, "c1", 3, []byte("m6"))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]byte{[]byte("m4"), []byte("m5"), []byte("m6")}; !reflect.DeepEqual(st, want) {
		t.Errorf("after interleaved pushes %q, want %q", st, want)
	}
	read, err := b.StateRead(ctx, "c1")
	if err != nil || !reflect.DeepEqual(read, st) {
		t.Errorf("StateRead %q, %v; want %q", read, err, st)
	}
	// Growing the capacity keeps what is there; shrinking drops the oldest.
	if st, err = a.StatePush(ctx, "c1", 1, []byte("m7")); err != nil || len(st) != 1 || string(st[0]) != "m7" {
		t.Errorf("push with capacity 1: %q, %v", st, err)
	}
	if err := a.StateClear(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if read, err := b.StateRead(ctx, "c1"); err != nil || len(read) != 0 {
		t.Errorf("after clear %q, %v", read, err)
	}
	if st, err := b.StatePush(ctx, "c1", 3, []byte("n0")); err != nil || len(st) != 1 {
		t.Errorf("push after clear %q, %v", st, err)
	}
	if st, err := a.StatePush(ctx, "c1", 3, []byte("n1")); err != nil || len(st) != 2 {
		t.Errorf("push after another client's clear %q, %v", st, err)
	}
}

func testBadInput(t *testing.T, s Store) {
	ctx := ctxT(t)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"namespace with a slash", s.Set(ctx, "a/b", Pair{"k", nil}), `namespace "a/b": character '/' not allowed`},
		{"empty key", s.Set(ctx, "ns", Pair{"", nil}), "key: must not be empty"},
		{"group with a brace", s.PublishMetrics(ctx, "g{1}", "p", nil), `group "g{1}": character '{' not allowed`},
		{"empty producer", s.PublishMetrics(ctx, "g", "", nil), `producer "": must be 1 to 200 characters`},
		{"capacity 0", func() error { _, err := s.StatePush(ctx, "c", 0, nil); return err }(), "state capacity 0: want 1 to 100000"},
		{"no channels", func() error { _, err := s.Subscribe(ctx, "ns", ""); return err }(), "no channels"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, c.err, c.want)
		}
	}
	if _, err := s.SubscribeMetrics(ctx, "g", "not-a-cursor"); err == nil || !strings.Contains(err.Error(), `cursor "not-a-cursor"`) {
		t.Errorf("bad cursor: %v", err)
	}
}

// testStateSteps: the seed's separate steps build the same queue that StatePush reads and
// continues (they share one layout).
func testStateSteps(t *testing.T, s Store) {
	ctx := ctxT(t)
	const capacity = 2
	for i := 0; i < 4; i++ {
		head, tail, err := s.StateIndices(ctx, "steps")
		if err != nil {
			t.Fatal(err)
		}
		if head-tail >= capacity {
			if err := s.StateDelete(ctx, "steps", tail); err != nil {
				t.Fatal(err)
			}
			tail++
		}
		if err := s.StatePut(ctx, "steps", head, fmt.Appendf(nil, "s%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.StateSetIndices(ctx, "steps", head+1, tail); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.StateRead(ctx, "steps")
	if want := [][]byte{[]byte("s2"), []byte("s3")}; err != nil || !reflect.DeepEqual(st, want) {
		t.Errorf("after the steps %q, %v; want %q", st, err, want)
	}
	st, err = s.StatePush(ctx, "steps", capacity, []byte("s4"))
	if want := [][]byte{[]byte("s3"), []byte("s4")}; err != nil || !reflect.DeepEqual(st, want) {
		t.Errorf("push after the steps %q, %v; want %q", st, err, want)
	}
	if err := s.StateSetIndices(ctx, "steps", 1, 2); err == nil {
		t.Error("head below tail accepted")
	}
}
