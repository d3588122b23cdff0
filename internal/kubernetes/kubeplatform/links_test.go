package kubeplatform

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// fakeFabric is a testbed control client that records the faults and keeps link state as the
// testbed would.
type fakeFabric struct {
	st     testbed.Status
	faults []testbed.Fault
}

func (f *fakeFabric) Status() (testbed.Status, error) { return f.st, nil }

func (f *fakeFabric) FabricStats() (fabric.Stats, error)  { return fabric.Stats{}, nil }
func (f *fakeFabric) NodesCPU() (testbed.NodesCPU, error) { return testbed.NodesCPU{}, nil }

func (f *fakeFabric) Inject(ft testbed.Fault) (string, error) {
	f.faults = append(f.faults, ft)
	if ft.Action == testbed.FaultLink {
		for i, l := range f.st.Links {
			if (l.Between[0] == ft.Link[0] && l.Between[1] == ft.Link[1]) || (l.Between[0] == ft.Link[1] && l.Between[1] == ft.Link[0]) {
				f.st.Links[i].Delay, f.st.Links[i].Jitter = ft.Delay.String(), ft.Jitter.String()
				f.st.Links[i].Loss, f.st.Links[i].Bandwidth = float64(*ft.Loss), int64(*ft.Bandwidth)
			}
		}
	}
	return "did " + ft.Action, nil
}

func threeTier() *platform.Topology {
	return &platform.Topology{
		Nodes: []platform.Node{{Name: "device"}, {Name: "edge"}, {Name: "cloud"}},
		Links: []platform.Link{
			{Between: []string{"device", "edge"}, LinkProps: platform.LinkProps{Delay: spec.Duration{Duration: 10 * time.Millisecond}, Bandwidth: 100e6}},
			{Between: []string{"cloud", "edge"}, LinkProps: platform.LinkProps{Delay: spec.Duration{Duration: 50 * time.Millisecond}, Loss: 0.01}},
		},
	}
}

func clusterFabric() *fakeFabric {
	return &fakeFabric{st: testbed.Status{
		Nodes: []testbed.NodeStatus{{Name: "cloud"}, {Name: "edge"}, {Name: "device"}},
		Links: []testbed.LinkStatus{
			{Between: [2]string{"device", "edge"}, Up: true, Delay: "0s", Jitter: "0s", Queue: 1000},
			{Between: [2]string{"edge", "cloud"}, Up: true, Delay: "5ms", Jitter: "1ms", Loss: 0.5, Bandwidth: 1e9, Queue: 1000},
		},
	}}
}

// TestFabricLinks: on a cluster on the testbed's fabric the run sets the scenario's links on
// the fabric's, passes its partition, heal and link faults to the testbed, and at the end heals
// and gives the links back as they were before it.
func TestFabricLinks(t *testing.T) {
	fab := clusterFabric()
	before := slices.Clone(fab.st.Links)
	l, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, fab, threeTier(), fabricNoRunLock)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := l.setUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fab.st.Links[0]; got.Delay != "10ms" || got.Bandwidth != 100e6 || got.Loss != 0 {
		t.Errorf("device-edge after setUp: %+v, want the scenario's 10ms, 100Mbit", got)
	}
	if got := fab.st.Links[1]; got.Delay != "50ms" || got.Jitter != "0s" || got.Loss != 0.01 || got.Bandwidth != 0 {
		t.Errorf("edge-cloud after setUp: %+v, want the scenario's 50ms, no jitter, 1%% loss, no limit", got)
	}
	part := platform.Fault{Action: platform.FaultPartition, Node: "cloud"}
	if what, err := l.apply(ctx, part); err != nil || what != "did partition" {
		t.Errorf("apply partition: %q, %v", what, err)
	}
	if last := fab.faults[len(fab.faults)-1]; last.Action != platform.FaultPartition || last.Node != "cloud" {
		t.Errorf("the testbed got %+v, want the run's partition of cloud", last)
	}
	n := len(fab.faults)
	if err := l.tearDown(ctx); err != nil {
		t.Fatal(err)
	}
	if f := fab.faults[n]; f.Action != platform.FaultHeal || f.Node != "" || f.Link != nil || f.Groups != nil {
		t.Errorf("tearDown began with %+v, want a heal of every partition", f)
	}
	if !slices.Equal(fab.st.Links, before) {
		t.Errorf("links after tearDown %+v, want them as before the run %+v", fab.st.Links, before)
	}
	if !strings.Contains(l.describe(), "k8s-x") || !strings.Contains(l.describe(), "hop by hop") {
		t.Errorf("describe() = %q, want the testbed and hop by hop", l.describe())
	}
}

// TestFabricLinksRefused: a scenario whose nodes, links or queues are not the cluster's, or a
// cluster with a partition in force, is refused, saying what differs and what to do.
func TestFabricLinksRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*fakeFabric, *platform.Topology)
		want   []string
	}{
		{"other nodes", func(f *fakeFabric, _ *platform.Topology) { f.st.Nodes[0].Name = "core" },
			[]string{"nodes (device, edge, cloud)", "(core, edge, device)", "--topology"}},
		{"other links", func(f *fakeFabric, _ *platform.Topology) { f.st.Links[0].Between = [2]string{"device", "cloud"} },
			[]string{"links (cloud-edge, device-edge)", "(cloud-device, cloud-edge)"}},
		{"a link fewer", func(_ *fakeFabric, topo *platform.Topology) { topo.Links = topo.Links[:1] },
			[]string{"links (device-edge)"}},
		{"other queue", func(_ *fakeFabric, topo *platform.Topology) { topo.Links[1].Queue = 50 },
			[]string{"link cloud-edge has a queue of 50 packets", "one of 1000"}},
		{"partition in force", func(f *fakeFabric, _ *platform.Topology) { f.st.Partitions = []string{"isolated edge"} },
			[]string{"partitions in force (isolated edge)", "heal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fab, topo := clusterFabric(), threeTier()
			tc.change(fab, topo)
			_, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, fab, topo, fabricNoRunLock)
			if err == nil {
				t.Fatalf("no error, want one with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if len(fab.faults) != 0 {
				t.Errorf("a refused run changed the testbed: %v", fab.faults)
			}
		})
	}
}

// TestFabricRunLock: one run at a time sets a testbed's links.
func TestFabricRunLock(t *testing.T) {
	dir := t.TempDir()
	l, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, clusterFabric(), threeTier(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, clusterFabric(), threeTier(), dir); err == nil || !strings.Contains(err.Error(), "another run uses the links") {
		t.Errorf("second run: %v, want refused", err)
	}
	if err := l.tearDown(context.Background()); err != nil {
		t.Fatal(err)
	}
	l2, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, clusterFabric(), threeTier(), dir)
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	_ = l2.tearDown(context.Background())
}

// TestFabricLinksLeftover: a run killed before it gave the links back leaves them in the run
// lock's file; the next run gives them back before it reads the links as they are, so that it
// does not take the killed run's for the cluster's.
func TestFabricLinksLeftover(t *testing.T) {
	dir := t.TempDir()
	fab := clusterFabric()
	before := slices.Clone(fab.st.Links)
	l, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, fab, threeTier(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.setUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.apply(context.Background(), platform.Fault{Action: platform.FaultPartition, Node: "cloud"}); err != nil {
		t.Fatal(err)
	}
	l.release() // killed: the lock goes with the process, the record stays
	if slices.Equal(fab.st.Links, before) {
		t.Fatal("setUp changed nothing")
	}
	n := len(fab.faults)
	l2, err := openFabricLinks(Fabric{Testbed: "k8s-x"}, fab, threeTier(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if f := fab.faults[n]; f.Action != platform.FaultHeal {
		t.Errorf("the next run began with %+v, want a heal of the killed run's partition", f)
	}
	if !slices.Equal(fab.st.Links, before) || !slices.Equal(l2.saved, before) {
		t.Errorf("links %+v, saved %+v; want both as before the killed run %+v", fab.st.Links, l2.saved, before)
	}
	if err := l2.tearDown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, fabricRunLock)); err != nil || len(b) != 0 {
		t.Errorf("the lock's record after a clean run: %q, %v; want it empty", b, err)
	}
}
