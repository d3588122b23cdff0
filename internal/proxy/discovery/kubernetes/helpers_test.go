package kubernetes

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/discovery/discoverytest"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestMain fails the package when a test leaves informers, reflectors or pollers running:
// Run must stop everything it started before it returns.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.ExitUnlessLeaked(code, "proxy/discovery/kubernetes.", "k8s.io/client-go/tools/cache.")
}

// waitLog waits until the logs contain want.
func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	discoverytest.WaitLog(t, logs, want, waitTimeout)
}

const waitTimeout = 10 * time.Second

// --- object builders ---

func ptr[T any](v T) *T { return &v }

type sliceOpt func(*discoveryv1.EndpointSlice)

func endpointSlice(ns, name, service string, opts ...sliceOpt) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if service != "" {
		s.Labels[discoveryv1.LabelServiceName] = service
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// podEndpoint is an endpoint backed by a Pod; ready nil leaves the condition unset.
func podEndpoint(addr, pod, node string, ready *bool) sliceOpt {
	return func(s *discoveryv1.EndpointSlice) {
		e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		if pod != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: s.Namespace, Name: pod}
		}
		if node != "" {
			e.NodeName = ptr(node)
		}
		s.Endpoints = append(s.Endpoints, e)
	}
}

func withPorts(ports ...discoveryv1.EndpointPort) sliceOpt {
	return func(s *discoveryv1.EndpointSlice) { s.Ports = ports }
}

func withLabel(k, v string) sliceOpt {
	return func(s *discoveryv1.EndpointSlice) { s.Labels[k] = v }
}

func withAddressType(t discoveryv1.AddressType) sliceOpt {
	return func(s *discoveryv1.EndpointSlice) { s.AddressType = t }
}

func withZone(zone string) sliceOpt {
	return func(s *discoveryv1.EndpointSlice) {
		for i := range s.Endpoints {
			s.Endpoints[i].Zone = ptr(zone)
		}
	}
}

func pod(ns, name, node string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

func node(name, cpu, memory string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(memory),
		}},
	}
}

// fakeMetrics serves metrics.k8s.io NodeMetrics from a list the test changes, or an error.
// A reactor is needed because the fake's object tracker files NodeMetrics under a guessed
// resource name ("nodemetricses") that the typed client's List ("nodes") never reads.
type fakeMetrics struct {
	*metricsfake.Clientset
	mu    sync.Mutex
	items []metricsv1beta1.NodeMetrics
	err   error
	polls int
}

func newFakeMetrics() *fakeMetrics {
	f := &fakeMetrics{Clientset: metricsfake.NewSimpleClientset()}
	f.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.polls++
		if f.err != nil {
			return true, nil, f.err
		}
		return true, &metricsv1beta1.NodeMetricsList{Items: append([]metricsv1beta1.NodeMetrics(nil), f.items...)}, nil
	})
	return f
}

func (f *fakeMetrics) set(err error, usage map[string][2]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	f.items = nil
	for name, u := range usage {
		f.items = append(f.items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Usage: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(u[0]),
				corev1.ResourceMemory: resource.MustParse(u[1]),
			},
		})
	}
}

var errMetricsAbsent = apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "nodes"}, "")

func newTestSource(t *testing.T, cfg Config, objs []k8sruntime.Object, metrics *fakeMetrics) (*Source, *fake.Clientset, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = newLogger(logs)
	client := fake.NewClientset(objs...)
	var src *Source
	var err error
	if metrics != nil {
		src, err = New(cfg, client, metrics)
	} else {
		src, err = New(cfg, client, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return src, client, logs
}

// The shared harness (package discoverytest), under the names these tests use.
type (
	running    = discoverytest.Running
	syncBuffer = discoverytest.SyncBuffer
)

var (
	newLogger = discoverytest.Logger
	dump      = discoverytest.Dump
	find      = discoverytest.Find
)

// runSource runs src until the test ends, then checks that Run returned nil promptly.
func runSource(t *testing.T, src discovery.Source, logs *syncBuffer) *running {
	t.Helper()
	return discoverytest.Run(t, src, logs, waitTimeout)
}
