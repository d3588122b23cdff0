package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
)

// TestSharedDataTools drives the platform's data by hand, through the built binary, against a
// real etcd and a real Redis: what one command writes another reads, a subscriber sees a
// publication and resumes from its cursor, a state queue keeps its newest entries, and bad
// input names what was wrong.
func TestSharedDataTools(t *testing.T) {
	for _, backend := range []string{"etcd", "redis"} {
		t.Run(backend, func(t *testing.T) {
			srv := baselinetest.Start(t, backend)
			c := newCLI(t)
			store := []string{"--backend", backend, "--endpoints", strings.Join(srv.Target.Endpoints, ",")}
			sd := func(args ...string) string {
				return c.must(append(append([]string{"shareddata"}, args...), store...)...)
			}

			sd("set", "app1", "mode=fast", "limit=a=b", "other=1")
			if got, want := sd("get", "app1", "limit", "absent", "mode"), "limit\ta=b\nmode\tfast\n"; got != want {
				t.Errorf("get: %q, want %q", got, want)
			}
			sd("rm", "app1", "other", "absent")
			if got, want := sd("keys", "app1"), "limit\nmode\n"; got != want {
				t.Errorf("keys: %q, want %q", got, want)
			}
			if got, want := sd("keys", "app1", "mo"), "mode\n"; got != want {
				t.Errorf("keys with a prefix: %q, want %q", got, want)
			}

			// A subscriber that started before a publication sees it; publish until it has (it
			// subscribes from "now", which begins once it is connected).
			sub := c.command(append([]string{"shareddata", "subscribe", "app1", "config", "--count", "1"}, store...)...)
			var out strings.Builder
			sub.Stdout = &out
			if err := sub.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- sub.Wait() }()
			var first messageLine
		publishing:
			for deadline := time.Now().Add(30 * time.Second); ; {
				sd("publish", "app1", "config", "changed", "mode=slow")
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("subscribe: %v", err)
					}
					break publishing
				case <-time.After(200 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					_ = sub.Process.Kill()
					t.Fatal("subscribe printed no message in 30 s of publications")
				}
			}
			if err := json.Unmarshal([]byte(out.String()), &first); err != nil || first.Channel != "config" || first.Value != "changed" || first.Cursor == "" {
				t.Fatalf("subscribe printed %q (%v); want a config message with value changed and a cursor", out.String(), err)
			}
			if got := sd("get", "app1", "mode"); got != "mode\tslow\n" {
				t.Errorf("publish did not write its pair: get mode = %q", got)
			}

			// Resuming from the first message's cursor delivers what came after it.
			sd("publish", "app1", "config", "second")
			var last messageLine
			for _, line := range strings.Split(strings.TrimSpace(sd("subscribe", "app1", "config", "--from", first.Cursor, "--timeout", "3s")), "\n") {
				if err := json.Unmarshal([]byte(line), &last); err != nil {
					t.Fatalf("subscribe --from: line %q: %v", line, err)
				}
			}
			if last.Value != "second" {
				t.Errorf("subscribe --from %s: last message %+v, want value second", first.Cursor, last)
			}

			// Metrics and control have their own publish and subscribe forms.
			sd("publish", "--metrics", "g1", "--producer", "p1", "m1")
			sd("publish", "--control", "g1", "--producer", "p1", "--consumer", "c1", "slow down")

			sd("state", "--push", "a", "--capacity", "2", "c1")
			sd("state", "--push", "b", "--capacity", "2", "c1")
			if got, want := sd("state", "--push", "c", "--capacity", "2", "c1"), "head 3 tail 1\nb\nc\n"; got != want {
				t.Errorf("state --push: %q, want %q", got, want)
			}
			if got, want := sd("state", "--serializable", "c1"), "head 3 tail 1\nb\nc\n"; got != want {
				t.Errorf("state: %q, want %q", got, want)
			}

			for _, bad := range []struct {
				args []string
				want string
			}{
				{[]string{"get", "app1", "nothing"}, "none of nothing is set"},
				{[]string{"set", "app1", "novalue"}, `"novalue": want KEY=VALUE`},
				{[]string{"set", "app/1", "k=v"}, `namespace "app/1"`},
				{[]string{"subscribe", "app1"}, "at least one CHANNEL"},
				{[]string{"publish", "--control", "g1", "--producer", "p1", "x"}, "--consumer"},
				{[]string{"state", "--push", "x", "--capacity", "0", "c1"}, "capacity"},
			} {
				_, errOut, err := c.run(append(append([]string{"shareddata"}, bad.args...), store...)...)
				if exitStatus(err) == 0 || !strings.Contains(errOut, bad.want) {
					t.Errorf("shareddata %s: exit %d, stderr %q; want a failure naming %q", strings.Join(bad.args, " "), exitStatus(err), errOut, bad.want)
				}
			}
		})
	}
	c := newCLI(t)
	_, errOut, err := c.run("shareddata", "get", "--backend", "mongo", "--endpoints", "x", "ns", "k")
	if exitStatus(err) == 0 || !strings.Contains(errOut, `backend "mongo": want one of kv, etcd, redis, redis-cluster`) {
		t.Errorf("unknown backend: exit %d, stderr %q", exitStatus(err), errOut)
	}
}

// messageLine is the JSON object `continuum shareddata subscribe` prints per message: the
// output's contract with its users, as they decode it.
type messageLine struct {
	Channel string `json:"channel"`
	Value   string `json:"value"`
	Cursor  string `json:"cursor"`
}
