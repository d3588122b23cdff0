package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestConflictReported: two members write one key while the link between them is cut (no
// reset); after the heal both hold the later write, and the member that took it reports the
// earlier one: through the Status service (QueryConflicts, with the origin's name), as a line in
// its events file, in continuum_kv_conflicts_total and as a Warn log line. A single member has
// no conflict log (Unimplemented).
func TestConflictReported(t *testing.T) {
	dir := t.TempDir()
	names := []string{"edge", "cloud"}
	cluster := map[string][]string{}
	listen := map[string]string{}
	var links []*testenv.CutLink
	for _, n := range names {
		listen[n] = testenv.FreeAddr(t)
		l := testenv.NewCutLink(t, listen[n])
		links = append(links, l)
		cluster[n] = []string{l.URL()}
	}
	servers := map[string]*Server{}
	clis := map[string]*clientv3.Client{}
	logs := map[string]*testenv.SyncBuffer{}
	for _, n := range names {
		logs[n] = &testenv.SyncBuffer{}
		servers[n], clis[n] = startKV(t, func(c *Config) {
			c.Name = n
			c.InitialCluster = cluster
			c.InitialClusterToken = "conflict-test"
			c.ListenPeerURLs = []string{"http://" + listen[n]}
			c.EventsFile = filepath.Join(dir, n+".events")
			c.Logger = slog.New(slog.NewTextHandler(logs[n], nil))
		})
	}
	ctx := ctxT(t)
	if _, err := clis["cloud"].Put(ctx, "k", "setup"); err != nil {
		t.Fatal(err)
	}
	read := func(n string) string {
		r, err := clis[n].Get(ctx, "k")
		if err != nil || len(r.Kvs) != 1 {
			return fmt.Sprintf("%v %v", r, err)
		}
		return string(r.Kvs[0].Value)
	}
	testenv.Eventually(t, 10*time.Second, "the setup write on both", func() bool { return read("edge") == "setup" })

	for _, l := range links {
		l.Cut()
	}
	for _, n := range names {
		if _, err := clis[n].Put(ctx, "k", "by-"+n); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range links {
		l.Heal()
	}
	var won string
	testenv.EventuallyNoError(t, 30*time.Second, "both members hold one value", func() error {
		if e, c := read("edge"), read("cloud"); e != c {
			return fmt.Errorf("edge %q, cloud %q", e, c)
		}
		won = read("edge")
		return nil
	})
	winner, loser := strings.TrimPrefix(won, "by-"), "edge"
	if winner == "edge" {
		loser = "cloud"
	}

	var resp *kvclient.ConflictsResponse
	testenv.EventuallyNoError(t, 10*time.Second, winner+" lists the lost write", func() error {
		var err error
		resp, err = kvclient.QueryConflicts(ctx, clis[winner].ActiveConnection(), []byte("k"))
		if err == nil && len(resp.Conflicts) == 0 {
			err = fmt.Errorf("no conflict yet")
		}
		return err
	})
	c := resp.Conflicts[0]
	if len(resp.Conflicts) != 1 || resp.Total != 1 || string(c.Key) != "k" || string(c.LostValue) != "by-"+loser ||
		resp.Name(c.Lost.Origin) != loser || resp.Name(c.Kept.Origin) != winner || resp.Name(resp.MemberID) != winner || !c.Lost.Less(c.Kept) {
		t.Fatalf("%s's conflicts: %+v (total %d)", winner, resp.Conflicts, resp.Total)
	}
	if other, err := kvclient.QueryConflicts(ctx, clis[loser].ActiveConnection(), nil); err != nil || len(other.Conflicts) != 0 {
		t.Errorf("%s, whose write lost, lists %+v (%v): the winner arrived after its own write, in order", loser, other, err)
	}

	b, err := os.ReadFile(filepath.Join(dir, winner+".events"))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var ev Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("events line %s: %v", l, err)
		}
		if ev.Event == EventConflict {
			found = ev.Member == winner && ev.Conflict != nil && string(ev.Conflict.Key) == "k" &&
				string(ev.Conflict.LostValue) == "by-"+loser && ev.Conflict.Origin == loser
			if !found {
				t.Errorf("conflict line %s", l)
			}
		}
	}
	if !found {
		t.Errorf("no conflict line in %s's events file:\n%s", winner, b)
	}
	rec := httptest.NewRecorder()
	servers[winner].metrics.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\ncontinuum_kv_conflicts_total 1\n") {
		t.Errorf("%s's metrics: %s", winner, grepLines(rec.Body.String(), "conflicts"))
	}
	if len(logs[winner].Lines("peer write lost to a concurrent write", "origin="+loser, "key=k")) != 1 {
		t.Errorf("%s's log:\n%s", winner, logs[winner].String())
	}

	_, single := startKV(t)
	if _, err := kvclient.QueryConflicts(ctx, single.ActiveConnection(), nil); status.Code(err) != codes.Unimplemented {
		t.Errorf("a single member's conflict log: %v, want Unimplemented", err)
	}
}
