package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The informers keep every watched object in memory, and the proxy runs on every node with a
// small memory budget; a cluster-wide Pod cache of full objects would dwarf the proxy. These
// transforms, run before objects enter the caches, keep only what a snapshot needs. They must
// be idempotent (client-go may pass an already stripped object again) and leave objects of
// other types (cache tombstones) alone.

func stripPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: strippedMeta(&p.ObjectMeta, prefixed(p.Labels), prefixed(p.Annotations)),
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
	}, nil
}

func stripNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	alloc := corev1.ResourceList{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := n.Status.Allocatable[r]; ok {
			alloc[r] = q
		}
	}
	return &corev1.Node{
		ObjectMeta: strippedMeta(&n.ObjectMeta, nil, nil),
		Status:     corev1.NodeStatus{Allocatable: alloc},
	}, nil
}

func stripEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	// Labels stay whole: the service name and the label selector both read them.
	out := &discoveryv1.EndpointSlice{
		ObjectMeta:  strippedMeta(&s.ObjectMeta, s.Labels, nil),
		AddressType: s.AddressType,
		Ports:       s.Ports,
		Endpoints:   make([]discoveryv1.Endpoint, len(s.Endpoints)),
	}
	for i, e := range s.Endpoints {
		out.Endpoints[i] = discoveryv1.Endpoint{
			Addresses:  e.Addresses,
			Conditions: e.Conditions,
			TargetRef:  e.TargetRef,
			NodeName:   e.NodeName,
			Zone:       e.Zone,
		}
	}
	return out, nil
}

func strippedMeta(m *metav1.ObjectMeta, labels, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            m.Name,
		Namespace:       m.Namespace,
		UID:             m.UID,
		ResourceVersion: m.ResourceVersion,
		Labels:          labels,
		Annotations:     annotations,
	}
}

// prefixed keeps the entries whose key starts with AttributePrefix (nil when none do).
func prefixed(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if strings.HasPrefix(k, AttributePrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
