package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane/cptest"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testenv"
	"github.com/continuum-project/continuum/internal/testenv/etcdtest"
)

func startControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cptest.RequireBinaries(t)
	return cptest.Start(t, []string{etcdtest.StartKV(t)})
}

// TestAgainstAPIServer checks the objects and their life cycle on a real kube-apiserver on
// continuum kv with the minimal CRDs: Installed flips once they are registered, dry runs persist
// nothing, a partition and its heal create, change and delete the expected objects, and another
// run's objects are never touched.
func TestAgainstAPIServer(t *testing.T) {
	cp := startControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc := cp.RESTConfig()
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	installed := func() bool {
		dc, err := discovery.NewDiscoveryClientForConfig(rc) // fresh: no cached answer
		if err != nil {
			t.Fatal(err)
		}
		ok, err := Installed(ctx, dc)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if installed() {
		t.Fatal("Installed before the CRDs are registered")
	}
	for _, crd := range CRDs() {
		if _, err := dyn.Resource(CRDResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
	}
	testenv.Eventually(t, 60*time.Second, "NetworkChaos served", installed)

	const ns = "chaos-test"
	if _, err := cp.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := func(run string) []string {
		t.Helper()
		got, err := list(ctx, dyn, ns, run)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	sync := func(n *Network, run string, dry bool) {
		t.Helper()
		objs := n.Objects(ns, run, map[string]string{"app.kubernetes.io/managed-by": "continuum"})
		// The CRD may be served a moment before its storage is ready everywhere.
		testenv.EventuallyNoError(t, 30*time.Second, "sync "+run, func() error { return Sync(ctx, dyn, ns, run, objs, dry) })
	}
	expect := func(run string, want ...string) {
		t.Helper()
		slices.Sort(want)
		if got := names(run); !slices.Equal(got, want) {
			t.Fatalf("run %s objects %v, want %v", run, got, want)
		}
	}

	// Another run in the same namespace, whose objects must survive r1's syncs and DeleteAll.
	other := NewNetwork(threeTier(t))
	apply(t, other, platform.Fault{Action: platform.FaultPartition, Node: "edge"})
	sync(other, "other", false)
	otherNames := names("other")
	if len(otherNames) != 3 {
		t.Fatalf("other run: %v, want its 3 partition objects", otherNames)
	}

	n := NewNetwork(threeTier(t))
	sync(n, "r1", true)
	expect("r1") // dry run: nothing persisted

	sync(n, "r1", false)
	all := []string{"r1-device-edge-netem", "r1-device-edge-bw", "r1-device-cloud-netem", "r1-device-cloud-bw", "r1-edge-cloud-netem", "r1-edge-cloud-bw"}
	expect("r1", all...)
	res := dyn.Resource(NetworkChaosResource).Namespace(ns)
	got, err := res.Get(ctx, "r1-device-cloud-netem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lat := str(t, got, "spec", "delay", "latency"); lat != "60ms" {
		t.Fatalf("stored latency %q", lat)
	}
	rv := got.GetResourceVersion()

	// Partition cloud, and slow device-edge: the cloud pairs become partition objects, device-edge
	// is updated in place.
	apply(t, n, platform.Fault{Action: platform.FaultPartition, Node: "cloud"})
	apply(t, n, platform.Fault{Action: platform.FaultLink, Link: []string{"device", "edge"}, Delay: ms(20)})
	sync(n, "r1", true)
	expect("r1", all...) // dry run: unchanged
	sync(n, "r1", false)
	expect("r1", "r1-device-edge-netem", "r1-device-edge-bw", "r1-device-cloud-part", "r1-edge-cloud-part")
	de, err := res.Get(ctx, "r1-device-edge-netem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lat := str(t, de, "spec", "delay", "latency"); lat != "20ms" {
		t.Fatalf("device-edge latency %q after the link fault, want 20ms", lat)
	}
	if managers := de.GetManagedFields(); len(managers) == 0 || managers[0].Manager != FieldManager {
		t.Fatalf("managed fields %+v, want manager %q", managers, FieldManager)
	}

	apply(t, n, platform.Fault{Action: platform.FaultHeal})
	sync(n, "r1", false)
	expect("r1", all...)
	got, err = res.Get(ctx, "r1-device-cloud-netem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lat := str(t, got, "spec", "delay", "latency"); lat != "70ms" || got.GetResourceVersion() == rv {
		t.Fatalf("device-cloud after heal: latency %q (want 70ms), a new object: %v", lat, got.GetResourceVersion() != rv)
	}
	// Syncing the same state again changes nothing.
	before, _ := res.Get(ctx, "r1-edge-cloud-bw", metav1.GetOptions{})
	sync(n, "r1", false)
	after, _ := res.Get(ctx, "r1-edge-cloud-bw", metav1.GetOptions{})
	if before.GetResourceVersion() != after.GetResourceVersion() {
		t.Fatal("an unchanged object was rewritten")
	}

	if err := Sync(ctx, dyn, ns, "r1", other.Objects(ns, "other", nil), false); err == nil {
		t.Fatal("Sync accepted another run's objects")
	}

	if err := DeleteAll(ctx, dyn, ns, "r1"); err != nil {
		t.Fatal(err)
	}
	expect("r1")
	expect("other", otherNames...)
}
