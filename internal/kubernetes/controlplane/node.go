package controlplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RegisterNode creates a Node the way a kubelet registers itself: Ready, with allocatable CPU,
// memory and pods (the scheduler places nothing on a node without "pods" capacity), so that the
// scheduler binds Pods to it. No kubelet runs them: the Pods stay Pending on the node.
//
// The Ready condition's heartbeat is the registration time and nobody renews it, so the
// controller-manager's node lifecycle controller marks the node unknown (and taints it) after
// --node-monitor-grace-period (50 s by default): long enough for a test, not for a cluster.
func RegisterNode(ctx context.Context, c kubernetes.Interface, name string) (*corev1.Node, error) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
	}}
	n, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", name, err)
	}
	now := metav1.NewTime(time.Now())
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status = corev1.NodeStatus{
		Capacity:    res,
		Allocatable: res,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "registered through the API (no kubelet)", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
	}
	n, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("node %s status: %w", name, err)
	}
	return n, nil
}
