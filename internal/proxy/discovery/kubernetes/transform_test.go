package kubernetes

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestTransformsKeepWhatSnapshotsNeed(t *testing.T) {
	full := pod("edge", "dps-1", "worker1",
		map[string]string{"app": "dps", "continuum.io/tier": "edge"},
		map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}", "continuum.io/accuracy": "0.97"})
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	full.Status.Phase = corev1.PodRunning
	n := node("worker1", "2", "4Gi")
	n.Status.Allocatable[corev1.ResourcePods] = n.Status.Allocatable[corev1.ResourceCPU]
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"big"}}}
	sl := endpointSlice("edge", "a", "dps", podEndpoint("10.0.0.1", "dps-1", "worker1", ptr(true)), withZone("z1"))
	sl.Annotations = map[string]string{"x": "y"}
	tomb := cache.DeletedFinalStateUnknown{Key: "edge/dps-1", Obj: full}

	tests := []struct {
		name      string
		transform cache.TransformFunc
		in        any
		want      any
	}{
		{"pod", stripPod, full, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "dps-1",
				Labels:      map[string]string{"continuum.io/tier": "edge"},
				Annotations: map[string]string{"continuum.io/accuracy": "0.97"}},
			Spec: corev1.PodSpec{NodeName: "worker1"}}},
		{"node", stripNode, n, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker1"},
			Status: corev1.NodeStatus{Allocatable: node("worker1", "2", "4Gi").Status.Allocatable}}},
		{"endpointslice", stripEndpointSlice, sl, func() any {
			c := sl.DeepCopy()
			c.Annotations = nil
			return c
		}()},
		{"tombstone passes through", stripPod, tomb, tomb},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.transform(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
			again, err := tc.transform(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("not idempotent: %#v", again)
			}
		})
	}
}
