package kubernetes

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane/cptest"
	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/discovery/discoverytest"
)

// startAPIServer starts a continuum kv member in this process and a real kube-apiserver on it
// (no controller-manager: the test writes the EndpointSlices a controller would), both stopped
// at cleanup. Without the Kubernetes binaries the test is skipped, or fails under
// CONTINUUM_REQUIRE_ROOT=1 (`make test`).
func startAPIServer(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cptest.RequireBinaries(t)
	kcfg := server.DefaultConfig()
	kcfg.Name = "apiserver-store"
	kcfg.DataDir = t.TempDir()
	kcfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	kv, err := server.Start(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close() })

	return cptest.Start(t, kv.ClientURLs())
}

// TestAgainstAPIServer runs the source against a real kube-apiserver on continuum kv, through
// the admin kubeconfig file as a proxy outside the cluster would: a Service's EndpointSlice
// appears as instances (with attributes from its Pod), an added endpoint joins, and deleting
// the slice removes them.
func TestAgainstAPIServer(t *testing.T) {
	cp := startAPIServer(t)
	c := cp.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "edge"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Without a controller-manager nobody creates the namespace's default service account,
	// which the ServiceAccount admission plugin requires of every Pod.
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "dps"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "dps"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pod(ns, "dps-1", "worker1", map[string]string{"app": "dps", "continuum.io/tier": "edge"}, nil)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := endpointSlice(ns, "dps-abc", "dps", podEndpoint("10.0.0.1", "dps-1", "worker1", ptr(true)))
	if slice, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create slice %v: %v", slice, err)
	}

	logs := &syncBuffer{}
	cfg := DefaultConfig()
	cfg.Namespace = ns
	cfg.Kubeconfig = cp.Kubeconfig()
	cfg.Logger = newLogger(logs)
	src, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := discoverytest.Run(t, src, logs, 30*time.Second)

	first := r.WaitFor("dps-1 from the slice", func(s discovery.Snapshot) bool {
		in, ok := find(s, "dps", "dps-1")
		return ok && len(s.Instances) == 1 && in.URL == "http://10.0.0.1:8080" && in.Node == "worker1" &&
			in.Ready && in.Attributes["tier"] == "edge" && in.Attributes["namespace"] == ns
	})
	t.Logf("first snapshot: %s", dump(first))

	// A second endpoint (no Pod behind it) joins the pool.
	cur, err := c.DiscoveryV1().EndpointSlices(ns).Get(ctx, "dps-abc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Endpoints = append(cur.Endpoints, discoveryv1.Endpoint{
		Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}, NodeName: ptr("worker2"),
	})
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.WaitFor("two instances", func(s discovery.Snapshot) bool {
		n := 0
		for _, in := range s.Instances {
			if in.Service == "dps" && in.Ready {
				n++
			}
		}
		return n == 2
	})

	if err := c.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "dps-abc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.WaitFor("no instances once the slice is deleted", func(s discovery.Snapshot) bool { return len(s.Instances) == 0 })
}
