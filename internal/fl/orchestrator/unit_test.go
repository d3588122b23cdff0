package orchestrator

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

func clients(n int) []Member {
	ms := []Member{{Node: plan.Node{ID: "g", Role: plan.RoleGlobal}}}
	for i := 0; i < n; i++ {
		ms = append(ms, Member{Node: plan.Node{ID: fmt.Sprintf("c%02d", i), Role: plan.RoleClient}})
	}
	return ms
}

// TestPartition: every client gets its labels in equal shares, every class is held by as many
// clients as the others, and a split gives each client one part of the training data.
func TestPartition(t *testing.T) {
	for _, tc := range []struct{ k, splits, clients, share int }{
		{1, 0, 20, 71}, {2, 0, 20, 35}, {10, 0, 20, 7}, {2, 60, 10, 11},
	} {
		ms := clients(tc.clients)
		if err := (Partition{LabelsPerClient: tc.k, Splits: tc.splits}).apply(ms, "digits", none); err != nil {
			t.Fatal(err)
		}
		holders := map[int]int{}
		for _, m := range ms {
			if m.Role != plan.RoleClient {
				if len(m.Data) != 0 {
					t.Fatalf("%s is not a client but got data %v", m.ID, m.Data)
				}
				continue
			}
			if len(m.Data) != tc.k {
				t.Fatalf("k=%d: %s holds %d classes: %v", tc.k, m.ID, len(m.Data), m.Data)
			}
			for c, n := range m.Data {
				holders[c]++
				if n != tc.share {
					t.Fatalf("k=%d splits=%d: %s has %d of class %d, want %d", tc.k, tc.splits, m.ID, n, c, tc.share)
				}
			}
		}
		if len(holders) != 10 {
			t.Fatalf("k=%d: classes held: %v, want all 10", tc.k, holders)
		}
		for c, n := range holders {
			if n != tc.clients*tc.k/10 {
				t.Fatalf("k=%d: class %d held by %d clients, want %d", tc.k, c, n, tc.clients*tc.k/10)
			}
		}
	}
	if err := (Partition{LabelsPerClient: 2, Splits: 5}).apply(clients(10), "digits", none); err == nil || !strings.Contains(err.Error(), "at least one per client") {
		t.Fatalf("5 splits for 10 clients: %v", err)
	}
}

func TestJobValidate(t *testing.T) {
	ok := DefaultJob()
	if err := ok.Validate(); err != nil {
		t.Fatalf("default job: %v", err)
	}
	for _, tc := range []struct {
		edit func(*JobSpec)
		want string
	}{
		{func(j *JobSpec) { j.Strategy = "fastest" }, `"fastest"`},
		{func(j *JobSpec) { j.Rounds = 0 }, "rounds 0: want >= 1"},
		{func(j *JobSpec) { j.TargetAccuracy = 90 }, "target_accuracy 90: want a fraction in [0, 1]"},
		{func(j *JobSpec) { j.Dataset = "cifar100" }, `dataset "cifar100": want one of digits, mnist1d, cifar10`},
		{func(j *JobSpec) { j.Dataset = "cifar10" }, "data_dir unset: dataset cifar10 needs"},
		{func(j *JobSpec) { j.LabelsPerClient = 11 }, "labels_per_client 11: want 1-10"},
		{func(j *JobSpec) { j.Splits = 4 }, "splits 4 needs labels_per_client"},
	} {
		j := DefaultJob()
		tc.edit(&j)
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestModelRepo: the latest snapshot is the highest round stored, an older upload does not
// replace it, only Keep snapshots stay, and a reopened repository finds them.
func TestModelRepo(t *testing.T) {
	dir := t.TempDir()
	r, err := NewModelRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.Latest(); ok {
		t.Fatal("an empty repository has a latest snapshot")
	}
	for _, round := range []int{1, 2, 5, 3, 6} {
		if err := r.Put(round, bytes.NewReader([]byte(fmt.Sprintf("model %d", round))), 100); err != nil {
			t.Fatal(err)
		}
	}
	round, path, ok := r.Latest()
	if !ok || round != 6 {
		t.Fatalf("latest = %d %v, want 6", round, ok)
	}
	if b, _ := os.ReadFile(path); string(b) != "model 6" {
		t.Fatalf("latest holds %q", b)
	}
	rounds, _ := r.rounds()
	if len(rounds) != 3 || rounds[len(rounds)-1] != 6 {
		t.Fatalf("kept %v, want the 3 newest ending with 6", rounds)
	}
	if err := r.Put(7, bytes.NewReader(make([]byte, 101)), 100); err == nil {
		t.Fatal("an oversized snapshot was stored")
	}
	if round, _, _ := r.Latest(); round != 6 {
		t.Fatalf("a refused upload moved latest to %d", round)
	}
	r2, err := NewModelRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if round, _, ok := r2.Latest(); !ok || round != 6 {
		t.Fatalf("reopened: latest %d %v", round, ok)
	}
}

// TestLabelSortedVsMinKLD: on 20 clients of 2 labels each under two local aggregators, the
// seed's non-IID clusters (label-sorted) see about half the classes each and have a far higher
// KLD than min-kld's, whose clusters see every class (the seed's Fig. 9 and Table 3 setting).
func TestLabelSortedVsMinKLD(t *testing.T) {
	ms := clients(20)
	ms[0].Role = plan.RoleGlobal
	ms = append(ms, Member{Node: plan.Node{ID: "la1", Role: plan.RoleAggregator, Cost: map[string]float64{"g": 100}}},
		Member{Node: plan.Node{ID: "la2", Role: plan.RoleAggregator, Cost: map[string]float64{"g": 100}}})
	if err := (Partition{LabelsPerClient: 2}).apply(ms, "digits", none); err != nil {
		t.Fatal(err)
	}
	var nodes []plan.Node
	for _, m := range ms {
		if m.Role == plan.RoleClient {
			m.Cost = map[string]float64{"g": 200, "la1": 50, "la2": 50}
		}
		nodes = append(nodes, m.Node)
	}
	b := plan.Budget{ModelMB: 10, PerEpoch: 6000}
	iid, err := plan.Plan(nodes, plan.MinKLD, b, plan.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	non, err := plan.Plan(nodes, plan.LabelSorted, b, plan.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	classesOf := func(c plan.Cluster) int {
		seen := map[int]bool{}
		for _, id := range c.Clients {
			for _, n := range nodes {
				if n.ID == id {
					for k := range n.Data {
						seen[k] = true
					}
				}
			}
		}
		return len(seen)
	}
	for _, c := range non.Clusters {
		if len(c.Clients) != 10 || classesOf(c) > 6 {
			t.Fatalf("label-sorted cluster %s: %d clients, %d classes; want 10 clients seeing about half the classes", c.Aggregator, len(c.Clients), classesOf(c))
		}
	}
	for _, c := range iid.Clusters {
		if classesOf(c) != 10 {
			t.Fatalf("min-kld cluster %s sees %d classes, want all 10", c.Aggregator, classesOf(c))
		}
	}
	if !(iid.KLD < 0.01 && non.KLD > 0.5) {
		t.Fatalf("KLD min-kld %.4f, label-sorted %.4f: want near 0 and far above", iid.KLD, non.KLD)
	}
}

func none(string) bool { return false }

// TestPartitionExcluded: splits count the clients taking part; excluded ones get a left-over
// split if there is one, else no data.
func TestPartitionExcluded(t *testing.T) {
	ms := clients(20)
	out := func(id string) bool { return id >= "c10" }
	if err := (Partition{LabelsPerClient: 2, Splits: 12}).apply(ms, "digits", out); err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, m := range ms {
		if len(m.Data) > 0 {
			with++
			if out(m.ID) && m.ID > "c11" {
				t.Fatalf("excluded %s got data beyond the 12 splits: %v", m.ID, m.Data)
			}
		}
	}
	if with != 12 {
		t.Fatalf("%d clients got data, want 12 (10 taking part + 2 left-over splits)", with)
	}
}
