package kubernetes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// TestFirstSnapshot checks the translation of objects present before Run into instances.
func TestFirstSnapshot(t *testing.T) {
	attrs := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		cfg  Config
		objs []k8sruntime.Object
		want []discovery.Instance
	}{{
		name: "ready, not ready and unknown readiness",
		cfg:  Config{Namespace: "edge"},
		objs: []k8sruntime.Object{endpointSlice("edge", "dps-a", "dps",
			podEndpoint("10.0.0.1", "dps-1", "worker1", ptr(true)),
			podEndpoint("10.0.0.2", "dps-2", "worker2", ptr(false)),
			podEndpoint("10.0.0.3", "dps-3", "worker3", nil))},
		want: []discovery.Instance{
			{ID: "dps-1", Service: "dps", URL: "http://10.0.0.1:8080", Node: "worker1", Attributes: attrs("namespace", "edge"), Ready: true},
			{ID: "dps-2", Service: "dps", URL: "http://10.0.0.2:8080", Node: "worker2", Attributes: attrs("namespace", "edge"), Ready: false},
			{ID: "dps-3", Service: "dps", URL: "http://10.0.0.3:8080", Node: "worker3", Attributes: attrs("namespace", "edge"), Ready: true},
		},
	}, {
		name: "attributes from prefixed labels and annotations, annotations win",
		cfg:  Config{Namespace: "edge"},
		objs: []k8sruntime.Object{
			endpointSlice("edge", "dps-a", "dps", podEndpoint("10.0.0.1", "dps-1", "", ptr(true)), withZone("far-edge")),
			pod("edge", "dps-1", "worker1",
				map[string]string{"app": "dps", "continuum.io/tier": "edge", "continuum.io/accuracy": "0.5"},
				map[string]string{"continuum.io/accuracy": "0.97", "other.io/x": "y", "continuum.io/": "empty name ignored"}),
		},
		want: []discovery.Instance{{ID: "dps-1", Service: "dps", URL: "http://10.0.0.1:8080", Node: "worker1", // node from the Pod
			Attributes: attrs("namespace", "edge", "zone", "far-edge", "tier", "edge", "accuracy", "0.97"), Ready: true}},
	}, {
		name: "port named http wins over the first; UDP ports are skipped",
		cfg:  Config{Namespace: "edge"},
		objs: []k8sruntime.Object{
			endpointSlice("edge", "a", "named", podEndpoint("10.0.0.1", "p1", "", nil), withPorts(
				discoveryv1.EndpointPort{Name: ptr("metrics"), Port: ptr(int32(9090))},
				discoveryv1.EndpointPort{Name: ptr("http"), Port: ptr(int32(80))})),
			endpointSlice("edge", "b", "first", podEndpoint("10.0.0.2", "p2", "", nil), withPorts(
				discoveryv1.EndpointPort{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: ptr(corev1.ProtocolUDP)},
				discoveryv1.EndpointPort{Name: ptr("api"), Port: ptr(int32(7000))},
				discoveryv1.EndpointPort{Name: ptr("grpc"), Port: ptr(int32(7001))})),
			endpointSlice("edge", "c", "tls", podEndpoint("10.0.0.3", "p3", "", nil), withPorts(
				discoveryv1.EndpointPort{Name: ptr("https"), Port: ptr(int32(8443))})),
			endpointSlice("edge", "d", "noport", podEndpoint("10.0.0.4", "p4", "", nil), withPorts(
				discoveryv1.EndpointPort{Name: ptr("all")})),
		},
		want: []discovery.Instance{
			{ID: "p2", Service: "first", URL: "http://10.0.0.2:7000", Attributes: attrs("namespace", "edge"), Ready: true},
			{ID: "p1", Service: "named", URL: "http://10.0.0.1:80", Attributes: attrs("namespace", "edge"), Ready: true},
			{ID: "p3", Service: "tls", URL: "https://10.0.0.3:8443", Attributes: attrs("namespace", "edge"), Ready: true},
		},
	}, {
		name: "endpoints without a Pod use host:port; IPv6 is bracketed",
		cfg:  Config{Namespace: "edge"},
		objs: []k8sruntime.Object{
			endpointSlice("edge", "ext", "legacy", podEndpoint("192.168.1.5", "", "", nil)),
			endpointSlice("edge", "v6", "six", podEndpoint("fd00::5", "", "", nil), withAddressType(discoveryv1.AddressTypeIPv6)),
		},
		want: []discovery.Instance{
			{ID: "192.168.1.5:8080", Service: "legacy", URL: "http://192.168.1.5:8080", Attributes: attrs("namespace", "edge"), Ready: true},
			{ID: "[fd00::5]:8080", Service: "six", URL: "http://[fd00::5]:8080", Attributes: attrs("namespace", "edge"), Ready: true},
		},
	}, {
		name: "dual stack: one instance per Pod, IPv4 preferred, a ready copy preferred",
		cfg:  Config{Namespace: "edge"},
		objs: []k8sruntime.Object{
			endpointSlice("edge", "web-v6", "web", podEndpoint("fd00::1", "web-1", "", nil), podEndpoint("fd00::2", "web-2", "", ptr(true)),
				withAddressType(discoveryv1.AddressTypeIPv6)),
			endpointSlice("edge", "web-v4", "web", podEndpoint("10.0.0.1", "web-1", "", nil), podEndpoint("10.0.0.2", "web-2", "", ptr(false))),
		},
		want: []discovery.Instance{
			{ID: "web-1", Service: "web", URL: "http://10.0.0.1:8080", Attributes: attrs("namespace", "edge"), Ready: true},
			{ID: "web-2", Service: "web", URL: "http://[fd00::2]:8080", Attributes: attrs("namespace", "edge"), Ready: true},
		},
	}, {
		name: "namespace limits what is seen",
		cfg:  Config{Namespace: "edge"},
		objs: []k8sruntime.Object{
			endpointSlice("edge", "a", "web", podEndpoint("10.0.0.1", "web-1", "", nil)),
			endpointSlice("cloud", "a", "web", podEndpoint("10.0.1.1", "web-1", "", nil)),
		},
		want: []discovery.Instance{{ID: "web-1", Service: "web", URL: "http://10.0.0.1:8080", Attributes: attrs("namespace", "edge"), Ready: true}},
	}, {
		name: "all namespaces: same-named Services merge, IDs carry the namespace",
		objs: []k8sruntime.Object{
			endpointSlice("edge", "a", "web", podEndpoint("10.0.0.1", "web-1", "", nil)),
			endpointSlice("cloud", "a", "web", podEndpoint("10.0.1.1", "web-1", "", nil)),
		},
		want: []discovery.Instance{
			{ID: "cloud/web-1", Service: "web", URL: "http://10.0.1.1:8080", Attributes: attrs("namespace", "cloud"), Ready: true},
			{ID: "edge/web-1", Service: "web", URL: "http://10.0.0.1:8080", Attributes: attrs("namespace", "edge"), Ready: true},
		},
	}, {
		name: "label selector and slices without a Service",
		cfg:  Config{Namespace: "edge", LabelSelector: "continuum.io/route=true"},
		objs: []k8sruntime.Object{
			endpointSlice("edge", "a", "routed", podEndpoint("10.0.0.1", "r-1", "", nil), withLabel("continuum.io/route", "true")),
			endpointSlice("edge", "b", "other", podEndpoint("10.0.0.2", "o-1", "", nil)),
			endpointSlice("edge", "c", "", podEndpoint("10.0.0.3", "x-1", "", nil), withLabel("continuum.io/route", "true")),
		},
		want: []discovery.Instance{{ID: "r-1", Service: "routed", URL: "http://10.0.0.1:8080", Attributes: attrs("namespace", "edge"), Ready: true}},
	}, {
		name: "nothing to route: an empty first snapshot",
		cfg:  Config{Namespace: "edge"},
		want: nil,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, _, logs := newTestSource(t, tc.cfg, tc.objs, nil)
			got := runSource(t, src, logs).Next()
			if !reflect.DeepEqual(got.Instances, tc.want) {
				t.Fatalf("instances:%s\nwant:%s", dump(got), dump(discovery.Snapshot{Instances: tc.want}))
			}
			if got.Nodes != nil {
				t.Fatalf("nodes %v without a metrics client", got.Nodes)
			}
		})
	}
}

// TestChanges drives one running source through the life of a Service.
func TestChanges(t *testing.T) {
	src, client, logs := newTestSource(t, Config{Namespace: "edge", LabelSelector: "tier!=test"}, nil, nil)
	r := runSource(t, src, logs)
	if s := r.Next(); len(s.Instances) != 0 {
		t.Fatalf("first snapshot:%s", dump(s))
	}
	ctx := context.Background()
	slices := client.DiscoveryV1().EndpointSlices("edge")

	sl := endpointSlice("edge", "dps-x1", "dps", podEndpoint("10.0.0.1", "dps-1", "worker1", ptr(true)))
	if _, err := slices.Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.WaitFor("dps-1 ready", func(s discovery.Snapshot) bool {
		in, ok := find(s, "dps", "dps-1")
		return ok && in.Ready && in.URL == "http://10.0.0.1:8080" && in.Node == "worker1"
	})

	steps := []struct {
		name   string
		change func() error
		want   func(discovery.Snapshot) bool
	}{{
		name: "a second endpoint appears",
		change: func() error {
			podEndpoint("10.0.0.2", "dps-2", "worker2", nil)(sl)
			_, err := slices.Update(ctx, sl, metav1.UpdateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool { _, ok := find(s, "dps", "dps-2"); return ok && len(s.Instances) == 2 },
	}, {
		name: "readiness drops",
		change: func() error {
			sl.Endpoints[0].Conditions.Ready = ptr(false)
			_, err := slices.Update(ctx, sl, metav1.UpdateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool { in, ok := find(s, "dps", "dps-1"); return ok && !in.Ready },
	}, {
		name: "readiness returns",
		change: func() error {
			sl.Endpoints[0].Conditions.Ready = ptr(true)
			_, err := slices.Update(ctx, sl, metav1.UpdateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool { in, ok := find(s, "dps", "dps-1"); return ok && in.Ready },
	}, {
		name: "the Pod appears with attributes",
		change: func() error {
			_, err := client.CoreV1().Pods("edge").Create(ctx, pod("edge", "dps-2", "worker2", nil,
				map[string]string{"continuum.io/accuracy": "0.97"}), metav1.CreateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool {
			in, ok := find(s, "dps", "dps-2")
			return ok && in.Attributes["accuracy"] == "0.97" && in.Node == "worker2"
		},
	}, {
		name: "the Pod's annotation changes",
		change: func() error {
			_, err := client.CoreV1().Pods("edge").Update(ctx, pod("edge", "dps-2", "worker2", nil,
				map[string]string{"continuum.io/accuracy": "0.90"}), metav1.UpdateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool {
			in, ok := find(s, "dps", "dps-2")
			return ok && in.Attributes["accuracy"] == "0.90"
		},
	}, {
		name: "another Service in the namespace",
		change: func() error {
			_, err := slices.Create(ctx, endpointSlice("edge", "web-x1", "web", podEndpoint("10.0.0.9", "web-1", "", nil)), metav1.CreateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool { _, ok := find(s, "web", "web-1"); return ok && len(s.Instances) == 3 },
	}, {
		name: "a slice that does not match the selector stays out",
		change: func() error {
			if _, err := slices.Create(ctx, endpointSlice("edge", "t-x1", "testsvc", podEndpoint("10.0.0.7", "t-1", "", nil), withLabel("tier", "test")), metav1.CreateOptions{}); err != nil {
				return err
			}
			// A later matching change proves the non-matching one has been processed.
			_, err := slices.Create(ctx, endpointSlice("edge", "late-x1", "late", podEndpoint("10.0.0.8", "late-1", "", nil)), metav1.CreateOptions{})
			return err
		},
		want: func(s discovery.Snapshot) bool {
			_, late := find(s, "late", "late-1")
			_, test := find(s, "testsvc", "t-1")
			return late && !test
		},
	}, {
		name: "a slice in another namespace stays out",
		change: func() error {
			if _, err := client.DiscoveryV1().EndpointSlices("cloud").Create(ctx, endpointSlice("cloud", "c-x1", "cloudsvc", podEndpoint("10.0.1.1", "c-1", "", nil)), metav1.CreateOptions{}); err != nil {
				return err
			}
			return slices.Delete(ctx, "late-x1", metav1.DeleteOptions{})
		},
		want: func(s discovery.Snapshot) bool {
			_, late := find(s, "late", "late-1")
			_, cloud := find(s, "cloudsvc", "c-1")
			return !late && !cloud
		},
	}, {
		name:   "the Service's slice is deleted",
		change: func() error { return slices.Delete(ctx, "dps-x1", metav1.DeleteOptions{}) },
		want: func(s discovery.Snapshot) bool {
			_, one := find(s, "dps", "dps-1")
			_, two := find(s, "dps", "dps-2")
			return !one && !two && len(s.Instances) == 1
		},
	}}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		r.WaitFor(st.name, st.want)
	}
}

// TestNoOpChangesAreQuiet: an update that does not alter the snapshot (a Pod's status, a
// label outside the prefix) must not reach the proxy.
func TestNoOpChangesAreQuiet(t *testing.T) {
	p := pod("edge", "dps-1", "worker1", nil, nil)
	src, client, logs := newTestSource(t, Config{Namespace: "edge"},
		[]k8sruntime.Object{endpointSlice("edge", "a", "dps", podEndpoint("10.0.0.1", "dps-1", "", nil)), p}, nil)
	r := runSource(t, src, logs)
	r.Next()
	ctx := context.Background()
	p.Labels = map[string]string{"app": "dps"}
	p.Status.Phase = corev1.PodRunning
	if _, err := client.CoreV1().Pods("edge").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A real change afterwards: the next snapshot must be that one, not a copy of the first.
	if _, err := client.CoreV1().Pods("edge").Update(ctx, pod("edge", "dps-1", "worker1", nil, map[string]string{"continuum.io/tier": "edge"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := r.Next(); s.Instances[0].Attributes["tier"] != "edge" {
		t.Fatalf("snapshot after a no-op change:%s", dump(s))
	}
}

func TestNodeLoads(t *testing.T) {
	metrics := newFakeMetrics()
	metrics.set(nil, map[string][2]string{"worker1": {"500m", "1Gi"}, "worker2": {"2", "3Gi"}, "gone": {"1", "1Gi"}})
	cfg := Config{Namespace: "edge"}
	cfg.MetricsInterval.Duration = 20 * time.Millisecond // 20 ms: the test waits for polls, not for time
	src, client, logs := newTestSource(t, cfg, []k8sruntime.Object{
		node("worker1", "2", "4Gi"), node("worker2", "4", "4Gi"),
		endpointSlice("edge", "a", "dps", podEndpoint("10.0.0.1", "dps-1", "worker1", nil)),
	}, metrics)
	r := runSource(t, src, logs)

	want := map[string]discovery.NodeLoad{"worker1": {CPU: 0.25, Memory: 0.25}, "worker2": {CPU: 0.5, Memory: 0.75}}
	r.WaitFor("node loads", func(s discovery.Snapshot) bool { return reflect.DeepEqual(s.Nodes, want) })

	steps := []struct {
		name  string
		apply func()
		want  map[string]discovery.NodeLoad
	}{{
		name:  "usage changes",
		apply: func() { metrics.set(nil, map[string][2]string{"worker1": {"2", "4Gi"}}) },
		want:  map[string]discovery.NodeLoad{"worker1": {CPU: 1, Memory: 1}},
	}, {
		name: "a node's allocatable changes",
		apply: func() {
			if _, err := client.CoreV1().Nodes().Update(context.Background(), node("worker1", "4", "8Gi"), metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		},
		want: map[string]discovery.NodeLoad{"worker1": {CPU: 0.5, Memory: 0.5}},
	}, {
		name:  "metrics API absent: loads unknown",
		apply: func() { metrics.set(errMetricsAbsent, nil) },
		want:  nil,
	}, {
		name:  "metrics API back",
		apply: func() { metrics.set(nil, map[string][2]string{"worker2": {"1", "1Gi"}}) },
		want:  map[string]discovery.NodeLoad{"worker2": {CPU: 0.25, Memory: 0.25}},
	}, {
		name: "metrics failing for longer than the staleness bound: loads dropped",
		apply: func() {
			metrics.set(apierrors.NewServiceUnavailable("metrics-server restarting"), nil)
		},
		want: nil,
	}}
	for _, st := range steps {
		st.apply()
		r.WaitFor(st.name, func(s discovery.Snapshot) bool { return reflect.DeepEqual(s.Nodes, st.want) })
	}
	if !strings.Contains(logs.String(), "metrics.k8s.io not served") {
		t.Errorf("absent metrics API not logged; logs:\n%s", logs)
	}
}

// TestMetricsAbsentFromStart: a cluster without metrics-server still gets instances, and
// the first snapshot is not held back by the metrics poll.
func TestMetricsAbsentFromStart(t *testing.T) {
	metrics := newFakeMetrics()
	metrics.set(errMetricsAbsent, nil)
	src, _, logs := newTestSource(t, Config{Namespace: "edge"}, []k8sruntime.Object{
		node("worker1", "2", "4Gi"),
		endpointSlice("edge", "a", "dps", podEndpoint("10.0.0.1", "dps-1", "worker1", nil)),
	}, metrics)
	s := runSource(t, src, logs).Next()
	if len(s.Instances) != 1 || s.Nodes != nil {
		t.Fatalf("snapshot:%s", dump(s))
	}
}

// TestForbiddenIsLoggedAndRetried: without RBAC the informers cannot list; Run logs a hint,
// delivers nothing, keeps retrying and still stops promptly.
func TestForbiddenIsLoggedAndRetried(t *testing.T) {
	src, client, logs := newTestSource(t, Config{Namespace: "edge"}, nil, nil)
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))
	})
	r := runSource(t, src, logs)
	waitLog(t, logs, "forbidden; grant get, list and watch")
	if s, ok := r.Pending(); ok {
		t.Fatalf("snapshot without a complete view:%s", dump(s))
	}
}

// TestUnreachableAPIServer runs against a real (closed) loopback port through Open's client
// construction, so the kubeconfig path is exercised as well.
func TestUnreachableAPIServer(t *testing.T) {
	kc := writeKubeconfig(t, "https://127.0.0.1:1")
	logs := &syncBuffer{}
	src, err := Open(Config{Kubeconfig: kc, Logger: newLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	runSource(t, src, logs)
	waitLog(t, logs, "list/watch failed; retrying")
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNodesForbiddenStillRoutes: a proxy granted only namespace-scoped access (no Nodes)
// still delivers instances; node loads stay unknown and the refusal is logged.
func TestNodesForbiddenStillRoutes(t *testing.T) {
	metrics := newFakeMetrics()
	metrics.set(nil, map[string][2]string{"worker1": {"1", "1Gi"}})
	src, client, logs := newTestSource(t, Config{Namespace: "edge"}, []k8sruntime.Object{
		node("worker1", "2", "4Gi"),
		endpointSlice("edge", "a", "dps", podEndpoint("10.0.0.1", "dps-1", "worker1", nil)),
	}, metrics)
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("namespace-scoped RBAC only"))
	})
	s := runSource(t, src, logs).Next()
	if len(s.Instances) != 1 || s.Nodes != nil {
		t.Fatalf("snapshot:%s", dump(s))
	}
	waitLog(t, logs, "resource=nodes")
}
