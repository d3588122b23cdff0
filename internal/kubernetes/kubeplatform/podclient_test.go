package kubeplatform

import (
	"bytes"
	"context"
	"maps"
	"os"
	"strings"
	"syscall"
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
	"github.com/continuum-project/continuum/internal/testenv"
)

const (
	testNS  = "continuum-run1"
	testRun = "run1"
)

// fakeCluster is a clientset holding run1's node pod for edge (on cluster node host-a, whose
// labels are FL's) whose created pods run at once, each at the next IP.
func fakeCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	s := podSpec{Run: testRun, Namespace: testNS, Image: "continuum-project/python:test", PullPolicy: corev1.PullNever,
		RunDir: "/results/r1", NodeSelector: map[string]string{LabelNode: "edge"}, Account: instancesAccount(testRun)}
	np := s.nodePod(platform.Node{Name: "edge", CPUs: 0.5, Memory: 256 << 20, Labels: map[string]string{"fl/type": "global", "comm/n1": "5"}})
	np.Spec.NodeName = "host-a"
	np.Status.Phase = corev1.PodRunning
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "host-a", Labels: map[string]string{"fl/type": "client", "data/mnist": "1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	cs := fake.NewClientset(np, host)
	ip := 10
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		ip++
		pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.1.0."+string(rune('0'+ip%10))
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: appContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		pod.Spec.NodeName = "host-a"
		return false, nil, nil
	})
	return cs
}

func TestPodClientEndpoint(t *testing.T) {
	if _, err := NewPodClient(testNS+"/"+testRun, fake.NewClientset()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"run1", "/run1", "Upper/run1", testNS + "/"} {
		_, err := NewPodClient(bad, fake.NewClientset())
		if err == nil || !strings.Contains(err.Error(), "<namespace>/<run>") {
			t.Errorf("address %q: %v, want a refusal naming the form", bad, err)
		}
	}
	// The platform's registration: a component of a kubernetes run gets this client.
	c, err := platform.InstancesFor("kubernetes:" + testNS + "/" + testRun)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*PodClient); !ok {
		t.Fatalf("InstancesFor(kubernetes:...) = %T", c)
	}
}

func TestPodClientStartRendersAndStops(t *testing.T) {
	cs := fakeCluster(t)
	c, err := NewPodClient(testNS+"/"+testRun, cs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	spec := platform.InstanceSpec{Name: "gw-1", Node: "edge", Args: []string{"/usr/local/bin/continuum", "faas", "watchdog"},
		Env: []string{"PYTHONPATH=/opt/continuum/python/src", "X=a=b"}, Dir: "/tmp", CPUs: 0.25, DataDirs: []string{"/data"}}
	host, err := c.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(host, "10.1.0.") {
		t.Errorf("Start returned %q, want the pod's IP", host)
	}
	pod, err := cs.CoreV1().Pods(testNS).Get(ctx, instancePodName(testRun, "gw-1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct := pod.Spec.Containers[0]
	if ct.Image != "continuum-project/python:test" || ct.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s (%s), want the node pod's", ct.Image, ct.ImagePullPolicy)
	}
	if strings.Join(ct.Command, " ") != "/usr/local/bin/continuum faas watchdog" || ct.WorkingDir != "/tmp" {
		t.Errorf("command %q in %q", ct.Command, ct.WorkingDir)
	}
	if len(ct.Env) != 2 || ct.Env[1].Name != "X" || ct.Env[1].Value != "a=b" {
		t.Errorf("env %+v", ct.Env)
	}
	if got := ct.Resources.Limits.Cpu().MilliValue(); got != 250 {
		t.Errorf("cpu limit %dm, want the instance's 250m", got)
	}
	if got := ct.Resources.Limits.Memory().Value(); got != 256<<20 {
		t.Errorf("memory limit %d, want the node's (the instance gave none)", got)
	}
	if pod.Spec.NodeSelector[LabelNode] != "edge" {
		t.Errorf("node selector %v, want the node pod's", pod.Spec.NodeSelector)
	}
	if pod.Labels[LabelRole] != RoleInstance || pod.Labels[LabelNode] != "edge" || pod.Labels[LabelRun] != testRun || pod.Annotations[annotationInstance] != "gw-1" {
		t.Errorf("labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("an instance pod mounts no token and is not restarted: %v %s", pod.Spec.AutomountServiceAccountToken, pod.Spec.RestartPolicy)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("security context %+v, want the node pod's (non-root)", sc)
	}
	if len(ct.VolumeMounts) != 1 || ct.VolumeMounts[0].MountPath != "/data" {
		t.Errorf("mounts %+v, want an empty directory at the data dir", ct.VolumeMounts)
	}

	// A start of a name in use takes it over: the old pod is deleted first.
	cs.ClearActions()
	if _, err := c.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() != "get" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if strings.Join(verbs, " ") != "delete create" {
		t.Errorf("a second start did %v, want delete then create", verbs)
	}

	cs.ClearActions()
	if err := c.Stop(ctx, "gw-1", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var grace *int64
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			grace = d.GetDeleteOptions().GracePeriodSeconds
		}
	}
	if grace == nil || *grace != 5 {
		t.Errorf("stop deleted with grace %v, want 5 s", grace)
	}
	if _, err := cs.CoreV1().Pods(testNS).Get(ctx, instancePodName(testRun, "gw-1"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the instance's pod after Stop: %v", err)
	}
	if err := c.Stop(ctx, "gw-1", time.Second); err != nil {
		t.Errorf("Stop of an instance that is gone: %v", err)
	}
}

func TestPodClientRefuses(t *testing.T) {
	cs := fakeCluster(t)
	c, err := NewPodClient(testNS+"/"+testRun, cs)
	if err != nil {
		t.Fatal(err)
	}
	ok := platform.InstanceSpec{Name: "i", Node: "edge", Args: []string{"/bin/true"}}
	cases := []struct {
		change func(*platform.InstanceSpec)
		want   string
	}{
		{func(s *platform.InstanceSpec) { s.Stdout = &bytes.Buffer{} }, "read its log"},
		{func(s *platform.InstanceSpec) { s.Image = &platform.Image{Ref: "x"} }, "container component"},
		{func(s *platform.InstanceSpec) { s.StopSignal = syscall.SIGINT }, "SIGTERM"},
		{func(s *platform.InstanceSpec) { s.Service = &platform.Service{Name: "s", Port: 1} }, "cannot declare service s"},
		{func(s *platform.InstanceSpec) { s.DataDirs = []string{"data"} }, `"data" is not an absolute path`},
		{func(s *platform.InstanceSpec) { s.Args = nil }, "a command line"},
		{func(s *platform.InstanceSpec) { s.Node = "cloud" }, "node cloud's pod"},
	}
	for _, tc := range cases {
		s := ok
		tc.change(&s)
		if _, err := c.Start(context.Background(), s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error containing %q", s, err, tc.want)
		}
	}
	// Another run's pod of the same name is not this run's node.
	other, _ := NewPodClient(testNS+"/run2", cs)
	if _, err := other.Start(context.Background(), ok); err == nil || !strings.Contains(err.Error(), "is not node edge's pod of run run2") {
		t.Errorf("a start beside another run's node pod: %v", err)
	}
}

func TestPodClientState(t *testing.T) {
	cs := fakeCluster(t)
	c, err := NewPodClient(testNS+"/"+testRun, cs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Start(ctx, platform.InstanceSpec{Name: "Agg-0", Node: "edge", Args: []string{"/bin/x"}}); err != nil {
		t.Fatal(err)
	}
	// One that ended killed, and one being deleted (gone for its component).
	for name, st := range map[string]corev1.ContainerState{
		"c-1": {Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}},
		"c-2": {Running: &corev1.ContainerStateRunning{}},
	} {
		p := instancePod(platform.InstanceSpec{Name: name, Node: "edge", Args: []string{"/bin/x"}}, testNS, testRun, mustPod(t, cs, "edge"))
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: appContainer, State: st}}
		if name == "c-2" {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		if err := cs.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 2 {
		t.Fatalf("instances %+v, want Agg-0 and c-1 (c-2 is being deleted)", st.Instances)
	}
	if in, ok := st.Instance("Agg-0"); !ok || !in.Running || in.Node != "edge" {
		t.Errorf("Agg-0: %+v %v (its name as given, not as a label value)", in, ok)
	}
	if in, ok := st.Instance("c-1"); !ok || in.Running || in.Ended != "signal killed" {
		t.Errorf("c-1: %+v, want ended by signal killed", in)
	}
	// The scenario node's labels over its cluster Node's (which several scenario nodes may
	// share), the cluster Node left as it was.
	want := map[string]string{"fl/type": "global", "comm/n1": "5", "data/mnist": "1"}
	if len(st.Nodes) != 1 || st.Nodes[0].Name != "edge" || !maps.Equal(st.Nodes[0].Labels, want) || st.Nodes[0].Isolated {
		t.Fatalf("nodes %+v, want edge with labels %v, not isolated", st.Nodes, want)
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, "host-a", metav1.GetOptions{}); n.Labels["fl/type"] != "client" || len(n.Labels) != 2 {
		t.Errorf("the cluster Node's labels became %v", n.Labels)
	}
	// A malformed labels annotation is left out, not a failure of State.
	np := mustPod(t, cs, "edge")
	np.Annotations[annotationNodeLabels] = "{"
	if _, err := cs.CoreV1().Pods(testNS).Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.State(ctx); err != nil || st.Nodes[0].Labels["fl/type"] != "client" {
		t.Errorf("with a malformed labels annotation: %v, labels %v; want the cluster Node's", err, st.Nodes)
	}
	// The node's kubelet lost: the node is isolated.
	host, _ := cs.CoreV1().Nodes().Get(ctx, "host-a", metav1.GetOptions{})
	host.Status.Conditions[0].Status = corev1.ConditionUnknown
	if _, err := cs.CoreV1().Nodes().Update(ctx, host, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if st, err = c.State(ctx); err != nil || !st.Nodes[0].Isolated {
		t.Errorf("nodes %+v (%v), want edge isolated while its kubelet is lost", st.Nodes, err)
	}
}

func mustPod(t *testing.T, cs *fake.Clientset, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPodClientLog(t *testing.T) {
	cs := fakeCluster(t)
	c, err := NewPodClient(testNS+"/"+testRun, cs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := c.Start(context.Background(), platform.InstanceSpec{Name: "w", Node: "edge", Args: []string{"/bin/x"}, LogDir: dir}); err != nil {
		t.Fatal(err)
	}
	// The fake's log is "fake logs", then its end.
	testenv.Eventually(t, 10*time.Second, "the instance's log copied into its stdout log", func() bool {
		b, _ := os.ReadFile(platform.LogPath(dir, "edge", "w", "stdout"))
		return strings.Contains(string(b), "fake logs")
	})
	c.Close()
}

func TestExitText(t *testing.T) {
	for _, tc := range []struct {
		t    corev1.ContainerStateTerminated
		want string
	}{
		{corev1.ContainerStateTerminated{ExitCode: 0}, "exit 0"},
		{corev1.ContainerStateTerminated{ExitCode: 2}, "exit 2"},
		{corev1.ContainerStateTerminated{ExitCode: 143}, "signal terminated"},
		{corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}, "signal killed"},
		{corev1.ContainerStateTerminated{ExitCode: 1, Reason: "OOMKilled"}, "exit 1 (OOMKilled)"},
		{corev1.ContainerStateTerminated{ExitCode: 255}, "exit 255"},
	} {
		if got := exitText(&tc.t); got != tc.want {
			t.Errorf("exitText(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestAccessObjects(t *testing.T) {
	s := podSpec{Run: testRun, Namespace: testNS}
	a := s.access()
	if a.account.Name != instancesAccount(testRun) || a.binding.Subjects[0].Name != a.account.Name || a.binding.RoleRef.Name != a.role.Name {
		t.Errorf("binding %+v of account %s", a.binding, a.account.Name)
	}
	for _, r := range a.role.Rules {
		for _, res := range r.Resources {
			if res != "pods" && res != "pods/log" && res != "endpointslices" {
				t.Errorf("the Role grants %s: only pods, their logs and EndpointSlices", res)
			}
			if res == "endpointslices" && strings.Join(r.Verbs, ",") != "get,list,watch" {
				t.Errorf("the Role grants %v on EndpointSlices: reading only", r.Verbs)
			}
		}
	}
	if r := a.nodes.Rules; len(r) != 1 || r[0].Resources[0] != "nodes" || strings.Join(r[0].Verbs, ",") != "get,list,watch" {
		t.Errorf("the ClusterRole grants %+v: want reading nodes only", r)
	}
	if s.namespace().Labels["pod-security.kubernetes.io/enforce"] != "baseline" {
		t.Errorf("a run's namespace labels %v: want the baseline Pod Security Standard enforced", s.namespace().Labels)
	}
	// A node pod mounts the token only with an account.
	if p := s.nodePod(platform.Node{Name: "edge"}); *p.Spec.AutomountServiceAccountToken || p.Spec.ServiceAccountName != "" {
		t.Errorf("without an account: %v %q", *p.Spec.AutomountServiceAccountToken, p.Spec.ServiceAccountName)
	}
	s.Account = a.account.Name
	if p := s.nodePod(platform.Node{Name: "edge"}); !*p.Spec.AutomountServiceAccountToken || p.Spec.ServiceAccountName != a.account.Name {
		t.Errorf("with an account: %v %q", *p.Spec.AutomountServiceAccountToken, p.Spec.ServiceAccountName)
	}

	// Created, then deleted by the run's label; a runner that may not grant them goes on without.
	cs := fake.NewClientset()
	ctx := context.Background()
	if granted, err := a.create(ctx, cs, metav1.CreateOptions{}); err != nil || !granted {
		t.Fatalf("create: %v %v", granted, err)
	}
	if l, _ := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); len(l.Items) != 1 {
		t.Errorf("ClusterRoles: %d, want the run's", len(l.Items))
	}
	// Deleted by name: the run's grants in its namespace, not another namespace's run of the
	// same name.
	other := podSpec{Run: testRun, Namespace: "team-b"}.access()
	if _, err := other.create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, err := deleteAccess(ctx, cs, testNS, testRun, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 5 {
		t.Errorf("deleted %v, want the run's five objects", deleted)
	}
	if l, _ := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); len(l.Items) != 1 || l.Items[0].Name != other.nodes.Name {
		t.Errorf("ClusterRoles left: %v, want team-b's run's only", l.Items)
	}
	if deleted, err := deleteAccess(ctx, cs, "team-b", testRun, true); err != nil || len(deleted) != 2 {
		t.Errorf("a run in its own namespace: deleted %v (%v), want its ClusterRole and binding (the rest goes with the namespace)", deleted, err)
	}
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("create", "roles", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "x", nil)
	})
	if granted, err := a.create(ctx, forbidden, metav1.CreateOptions{}); err != nil || granted {
		t.Errorf("a runner that may not create Roles: granted %v, %v; want none and no error", granted, err)
	}
}
