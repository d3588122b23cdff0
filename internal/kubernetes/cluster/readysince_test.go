package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// readySince takes a Ready heartbeat in the very second the restart began (heartbeats are whole
// seconds: the kubelet's first report after a restart at 24.95 s says 24 s), and no earlier one.
func TestReadySinceWholeSeconds(t *testing.T) {
	began := time.Date(2026, 12, 7, 11, 27, 24, 0, time.UTC)
	node := func(status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(heartbeat)}}}}
	}
	for _, c := range []struct {
		node *corev1.Node
		want string // "" for ready
	}{
		{node(corev1.ConditionTrue, began), ""},
		{node(corev1.ConditionTrue, began.Add(3*time.Second)), ""},
		{node(corev1.ConditionTrue, began.Add(-time.Second)), "not reported it since"},
		{node(corev1.ConditionFalse, began.Add(time.Second)), "Ready=False"},
		{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge"}}, "no Ready condition"},
	} {
		err := readySince(context.Background(), fake.NewClientset(c.node), "edge", began)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("node %+v: %v, want %q", c.node.Status.Conditions, err, c.want)
		}
	}
}
