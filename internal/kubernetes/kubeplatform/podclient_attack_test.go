package kubeplatform

// Cases an attack review of PodClient found (each failed before its fix).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/continuum-project/continuum/internal/platform"
)

// Two distinct instance names map to one pod: ToLower happens before objectName, so its hash
// does not see the case.
func TestPodClientNamesDistinctByCase(t *testing.T) {
	if a, b := instancePodName(testRun, "Fn-1"), instancePodName(testRun, "fn-1"); a == b {
		t.Errorf("instancePodName(Fn-1) = instancePodName(fn-1) = %s", a)
	}
	cs := fakeCluster(t)
	c, _ := NewPodClient(testNS+"/"+testRun, cs)
	defer c.Close()
	ctx := context.Background()
	for _, n := range []string{"Fn-1", "fn-1"} {
		if _, err := c.Start(ctx, platform.InstanceSpec{Name: n, Node: "edge", Args: []string{"/bin/x"}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Instance("Fn-1"); !ok || len(st.Instances) != 2 {
		t.Errorf("after starting Fn-1 and fn-1: %+v; the start of fn-1 deleted Fn-1's pod", st.Instances)
	}
}

// In a shared namespace (Provider.Namespace), instance pod names are not scoped by run: run2's
// Start of an instance name run1 also uses deletes run1's pod.
func TestPodClientLeavesOtherRunsPods(t *testing.T) {
	cs := fakeCluster(t)
	s2 := podSpec{Run: "run2", Namespace: testNS, Image: "continuum-project/python:test", RunDir: "/results/r2"}
	np2 := s2.nodePod(platform.Node{Name: "edge2"})
	np2.Spec.NodeName, np2.Status.Phase = "host-a", corev1.PodRunning
	if err := cs.Tracker().Add(np2); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c1, _ := NewPodClient(testNS+"/"+testRun, cs)
	c2, _ := NewPodClient(testNS+"/run2", cs)
	defer c1.Close()
	defer c2.Close()
	if _, err := c1.Start(ctx, platform.InstanceSpec{Name: "gateway-hello-1", Node: "edge", Args: []string{"/bin/x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Start(ctx, platform.InstanceSpec{Name: "gateway-hello-1", Node: "edge2", Args: []string{"/bin/x"}}); err != nil {
		t.Fatal(err)
	}
	st, err := c1.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Instance("gateway-hello-1"); !ok {
		t.Errorf("run1's instance gateway-hello-1 is gone after run2 started one of the same name: %+v", st.Instances)
	}
	// And run2's Stop deletes whatever pod has the name, whatever its run.
}

// access.go says a component without the ClusterRole "sees its nodes' pods only"; State fails
// altogether instead.
func TestPodClientStateWithoutNodeRead(t *testing.T) {
	cs := fakeCluster(t)
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "host-a", nil)
	})
	c, _ := NewPodClient(testNS+"/"+testRun, cs)
	defer c.Close()
	if st, err := c.State(context.Background()); err != nil || len(st.Nodes) != 1 {
		t.Errorf("State without the Nodes grant: %+v, %v; want the node pods (without labels)", st, err)
	}
}

// An instance name with "../" writes its log outside LogDir (platform.LogPath joins it).
func TestPodClientNameCannotLeaveLogDir(t *testing.T) {
	cs := fakeCluster(t)
	c, _ := NewPodClient(testNS+"/"+testRun, cs)
	root := t.TempDir()
	logDir := filepath.Join(root, "results", "instances")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := c.Start(context.Background(), platform.InstanceSpec{Name: "x/../../../escaped", Node: "edge", Args: []string{"/bin/x"}, LogDir: logDir})
	c.Close()
	if err == nil || !strings.Contains(err.Error(), "names the instance's log file") {
		t.Errorf("instance name x/../../../escaped: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(root, "escaped.stdout.log")); err == nil {
		t.Errorf("instance name x/../../../escaped wrote %s, outside LogDir %s", filepath.Join(root, "escaped.stdout.log"), logDir)
	}
}

// A take-over (Start of a name in use) and Stop with grace 0 delete with gracePeriodSeconds 0,
// which the API server treats as a force delete: the object is gone at once while the old
// container may still run on its node, so "waits until it is gone" does not hold; a negative
// grace becomes a negative gracePeriodSeconds.
func TestPodClientNeverForceDeletes(t *testing.T) {
	cs := fakeCluster(t)
	c, _ := NewPodClient(testNS+"/"+testRun, cs)
	defer c.Close()
	ctx := context.Background()
	spec := platform.InstanceSpec{Name: "w", Node: "edge", Args: []string{"/bin/x"}}
	for i := 0; i < 2; i++ {
		if _, err := c.Start(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetName() == instancePodName(testRun, "w") {
			if g := d.GetDeleteOptions().GracePeriodSeconds; g != nil && *g == 0 {
				t.Errorf("the take-over of w deleted its old pod with gracePeriodSeconds 0 (a force delete)")
			}
		}
	}
	cs.ClearActions()
	_ = c.Stop(ctx, "w", -5*time.Second)
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			if g := d.GetDeleteOptions().GracePeriodSeconds; g != nil && *g < 0 {
				t.Errorf("Stop with grace -5s sent gracePeriodSeconds %d", *g)
			}
		}
	}
}

// The rewrite replaces a host prefix wherever it occurs, also inside a longer path that merely
// ends in the clone's path, and rewrites paths that already are the image's when the clone's
// path is a suffix of image.PythonRoot's.
func TestImagePathsOnlyWholePaths(t *testing.T) {
	m := imagePaths{{"/src/python/", "/opt/continuum/python/"}} // a clone at /src (a container's)
	if in, got := "/home/u/proj/src/python/functions/f", m.rewrite("/home/u/proj/src/python/functions/f"); got != in {
		t.Errorf("rewrite(%q) = %q: a path outside the clone was rewritten", in, got)
	}
	if in, got := "--handler=/data/src/python/h", m.rewrite("--handler=/data/src/python/h"); got != in {
		t.Errorf("rewrite(%q) = %q", in, got)
	}
	m = imagePaths{{"/continuum/python/", "/opt/continuum/python/"}} // a clone at /continuum
	if got := m.rewrite("/opt/continuum/python/src"); got != "/opt/continuum/python/src" {
		t.Errorf("an image path rewritten again: %q", got)
	}
}

// A run whose name another run on the cluster holds (runs are named run<pid>-<n>: two runners
// may share a pid) is refused, and its Down deletes nothing of the other's: not its namespace,
// nor, in a given namespace, its pods.
func TestUpLeavesASameNamedRunAlone(t *testing.T) {
	for _, own := range []bool{true, false} {
		ns := Namespace(testRun)
		if !own {
			ns = "shared"
		}
		other := podSpec{Run: testRun, Namespace: ns, Image: testImage}
		objs := []runtime.Object{other.namespace(), other.nodePod(platform.Node{Name: "edge"})}
		if !own {
			objs[0] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		}
		cs := fake.NewClientset(objs...)
		topo := &platform.Topology{Nodes: []platform.Node{{Name: "edge"}}}
		c := &clients{cs: cs}
		pf := &Platform{c: c, log: testLogger(), cfg: platform.Config{Name: testRun, Topology: topo}, run: testRun, ns: ns, ownNS: own,
			spec: podSpec{Run: testRun, Namespace: ns, Image: testImage}, nodes: map[string]*nodePod{}, insts: map[string]runInstance{},
			links: newChaosLinks(c, ns, testRun, topo)}
		pf.ctx, pf.cancel = context.WithCancel(context.Background())
		err := pf.up(context.Background(), nil, time.Second)
		if err == nil || !strings.Contains(err.Error(), "same name") {
			t.Errorf("own namespace %v: up = %v, want a refusal naming the run of the same name", own, err)
		}
		if err := pf.Down(); err != nil {
			t.Errorf("own namespace %v: Down: %v", own, err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
			t.Errorf("own namespace %v: the other run's namespace: %v", own, err)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(context.Background(), "edge", metav1.GetOptions{}); err != nil {
			t.Errorf("own namespace %v: the other run's node pod: %v", own, err)
		}
	}
}
