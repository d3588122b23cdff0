package kubeplatform

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

func TestObjectName(t *testing.T) {
	for _, s := range []string{"run123-001", "Run_With.Dots", strings.Repeat("a", 80), "---", "rate=50-001"} {
		n := objectName(s, 63)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("objectName(%q) = %q: %v", s, n, errs)
		}
		if errs := validation.IsValidLabelValue(labelValue(s)); len(errs) > 0 {
			t.Errorf("labelValue(%q) = %q: %v", s, labelValue(s), errs)
		}
	}
	if objectName("run1-001", 63) != "run1-001" {
		t.Error("a valid name was changed")
	}
	// Distinct inputs that clean to the same text stay distinct.
	if a, b := objectName("a_b", 63), objectName("a.b", 63); a == b {
		t.Errorf("a_b and a.b both became %q", a)
	}
	if n := Namespace(strings.Repeat("x", 70)); len(n) > 63 {
		t.Errorf("namespace %q longer than 63", n)
	}
}

func TestNodePod(t *testing.T) {
	s := podSpec{Run: "run1-001", Namespace: "continuum-run1-001", Image: "continuum-project/continuum:test",
		PullPolicy: corev1.PullNever, RunDir: "/results/q/runs/001", NodeSelector: map[string]string{LabelNode: "edge"}}
	pod := s.nodePod(platform.Node{Name: "edge", CPUs: 0.05, Memory: spec.Bytes(512 << 20)})
	c := pod.Spec.Containers[0]
	if got := c.Resources.Limits.Cpu().MilliValue(); got != 50 {
		t.Errorf("cpu limit %dm, want 50m", got)
	}
	if got := c.Resources.Requests.Cpu().MilliValue(); got != 50 {
		t.Errorf("cpu request %dm, want the limit (50m) when it is under 100m", got)
	}
	if got := c.Resources.Limits.Memory().Value(); got != 512<<20 {
		t.Errorf("memory limit %d", got)
	}
	if got := c.Resources.Requests.Memory().Value(); got != 64<<20 {
		t.Errorf("memory request %d, want 64Mi", got)
	}
	if pod.Labels[LabelRun] != "run1-001" || pod.Labels[LabelNode] != "edge" || pod.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("labels %v", pod.Labels)
	}
	if pod.Spec.NodeSelector[LabelNode] != "edge" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("placement %v, restart %s", pod.Spec.NodeSelector, pod.Spec.RestartPolicy)
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounted[m.MountPath] = true
	}
	if !mounted["/results/q/runs/001"] || !mounted[agentDir] {
		t.Errorf("mounts %v: want the run dir at its host path and the agent's dir", mounted)
	}
	if strings.Join(c.Args[:3], " ") != "kubernetes-agent --listen 127.0.0.1:7946" {
		t.Errorf("args %v: the agent must listen on loopback only", c.Args)
	}
	// No cpus, no memory: no limits, the small requests.
	free := s.nodePod(platform.Node{Name: "device"})
	if len(free.Spec.Containers[0].Resources.Limits) != 0 {
		t.Errorf("limits %v for a node without cpus or memory", free.Spec.Containers[0].Resources.Limits)
	}
	svc := s.nodeService("edge")
	if svc.Name != "edge" || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || svc.Spec.Selector[LabelNode] != "edge" {
		t.Errorf("node Service %+v", svc.Spec)
	}
	// A declared service's Service has a cluster IP (kube-proxy balances <service>:<port>, the
	// round-robin baseline) and selects the node pods labelled as its instances.
	ds := s.serviceService(&platform.Service{Name: "dps", Port: 8000})
	if ds.Name != "dps" || ds.Spec.ClusterIP == corev1.ClusterIPNone || len(ds.Spec.Ports) != 1 || ds.Spec.Ports[0].Port != 8000 ||
		ds.Spec.Selector[LabelServicePrefix+"dps"] != "true" || ds.Labels[LabelRole] != RoleService {
		t.Errorf("declared service's Service %+v %v", ds.Spec, ds.Labels)
	}
}

func TestPlacement(t *testing.T) {
	node := func(name string, labels map[string]string, unschedulable bool) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
		for k, v := range labels {
			n.Labels[k] = v
		}
		n.Spec.Unschedulable = unschedulable
		return n
	}
	one := []corev1.Node{node("solo", nil, false), node("cordoned", nil, true)}
	got, err := placement(one, []string{"edge", "cloud"}, nil)
	if err != nil || got["edge"][corev1.LabelHostname] != "solo" || got["cloud"][corev1.LabelHostname] != "solo" {
		t.Fatalf("one schedulable node: %v, %v", got, err)
	}
	many := []corev1.Node{node("w1", map[string]string{LabelNode: "edge"}, false), node("w2", nil, false), node("w3", nil, false)}
	got, err = placement(many, []string{"edge", "cloud"}, map[string]string{"cloud": "w3"})
	if err != nil || got["edge"][LabelNode] != "edge" || got["cloud"][corev1.LabelHostname] != "w3" {
		t.Fatalf("label and map: %v, %v", got, err)
	}
	_, err = placement(many, []string{"edge", "device"}, nil)
	if err == nil || !strings.Contains(err.Error(), "device") || !strings.Contains(err.Error(), "kubectl label node NODE continuum.io/node=device") ||
		!strings.Contains(err.Error(), "w1, w2, w3") {
		t.Fatalf("unplaced node: %v", err)
	}
	_, err = placement(many, []string{"edge"}, map[string]string{"edge": "w9"})
	if err == nil || !strings.Contains(err.Error(), `"w9", which does not exist`) {
		t.Fatalf("map to a missing node: %v", err)
	}
}

func TestCheckRefusesWhatAClusterCannotDo(t *testing.T) {
	p := Provider{Kubeconfig: "/nonexistent/kubeconfig"} // no cluster: only the static checks
	topo := &platform.Topology{Nodes: []platform.Node{{Name: "edge"}, {Name: "cloud"}}}
	cpus := 1.0
	for _, c := range []struct {
		topo   *platform.Topology
		faults []platform.Fault
		nodes  map[string]string
		want   string
	}{
		{topo, []platform.Fault{{Action: platform.FaultCPU, Node: "edge", CPUs: &cpus}}, nil, "cannot apply fault cpu (node edge)"},
		{&platform.Topology{Nodes: []platform.Node{{Name: "Edge_1"}}}, nil, nil, `node name "Edge_1" cannot name a Kubernetes Service`},
		{topo, nil, map[string]string{"fog": "w1"}, `node map names "fog", which is not a node`},
		{topo, []platform.Fault{{Action: platform.FaultKill, Node: "edge"}, {Action: platform.FaultPause, Node: "cloud"}}, nil, ""},
	} {
		p.NodeMap = c.nodes
		err := p.Check(c.topo, c.faults)
		if c.want == "" {
			if err != nil {
				t.Errorf("Check: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "platform kubernetes") {
			t.Errorf("Check = %v, want an error naming the platform and %q", err, c.want)
		}
	}
	if got := (Provider{}).Endpoint("run1-001"); got != "kubernetes:continuum-run1-001/run1-001" {
		t.Errorf("Endpoint = %q", got)
	}
}

// `run --check --render` without a cluster: every object of a run, as YAML documents that decode
// to the kinds a run creates.
func TestCheckRendersObjects(t *testing.T) {
	var out strings.Builder
	p := Provider{Kubeconfig: "/nonexistent/kubeconfig", Render: &out}
	topo := &platform.Topology{Nodes: []platform.Node{{Name: "edge", CPUs: 1}, {Name: "cloud"}},
		Links: []platform.Link{{Between: []string{"edge", "cloud"}, LinkProps: platform.LinkProps{Delay: spec.Duration{Duration: 10 * time.Millisecond}}}}}
	if err := p.Check(topo, nil); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, doc := range strings.Split(out.String(), "\n---\n")[1:] {
		var o struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		kinds[o.Kind]++
	}
	if kinds["Namespace"] != 1 || kinds["Service"] != 2 || kinds["Pod"] != 2 || kinds["NetworkChaos"] != 1 {
		t.Errorf("rendered %v, want a Namespace, 2 Services, 2 Pods and the link's NetworkChaos:\n%s", kinds, out.String())
	}
}
