package kubeplatform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/continuum-project/continuum/internal/kubernetes/image"
	"github.com/continuum-project/continuum/internal/platform"
)

// Labels every object of a run carries, and the label pods and nodes are matched by.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "continuum"
	LabelRun       = "continuum.io/run"
	// LabelNode on a node pod names its scenario node; on a cluster Node it says which scenario
	// node (or nodes: the label's value is one name) that Node hosts.
	LabelNode = "continuum.io/node"
	// LabelServicePrefix + <service> = "true" marks a node pod running an instance of a declared
	// service (platform.Service), which a Service of that name selects.
	LabelServicePrefix = "service.continuum.io/"
	// LabelRole says what a pod is to its scenario node: RoleNode (the node pod, which its
	// node's Service selects) or RoleContainer (a container component's pod, which carries its
	// node's labels so that link emulation treats it as part of the node).
	LabelRole     = "continuum.io/role"
	RoleNode      = "node"
	RoleContainer = "container"
	// RoleService on a Service says it is a declared service's (serviceService), which the
	// proxy's kubernetes discovery source watches, and not a node's.
	RoleService = "service"
	// AttributePrefix + <key> annotates a node pod with an attribute of a service it serves
	// (platform.Service.Attributes), as discovery sources read instance attributes.
	AttributePrefix = "continuum.io/"
	// LabelInstance on a container pod names its instance.
	LabelInstance = "continuum.io/instance"

	// AgentPort is where the agent listens, on the pod's loopback only.
	AgentPort = 7946
	// agentDir is the agent's own emptyDir: its state (instances' stdout and stderr) and the
	// programs the runner pushes (binaries of the runner's host that are not in the image).
	agentDir = "/continuum"
	binDir   = agentDir + "/bin"
	stateDir = agentDir + "/state"
)

// objectName makes s a DNS label (lowercase alphanumerics and '-', at most max characters), with
// a hash of s appended when it had to be changed or shortened, so that distinct inputs stay
// distinct.
func objectName(s string, max int) string {
	clean := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if clean == s && len(s) <= max && len(validation.IsDNS1123Label(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:8]
	if len(clean) > max-9 {
		clean = strings.TrimRight(clean[:max-9], "-")
	}
	if clean == "" {
		return "x" + h
	}
	return clean + "-" + h
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// labelValue makes s a valid label value the same way.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	return objectName(s, 63)
}

// runLabels are the labels of every object of run.
func runLabels(run string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRun: labelValue(run)}
}

// nodeLabels select the pod of one scenario node of run (and not its container pods).
func nodeLabels(run, node string) map[string]string {
	l := runLabels(run)
	l[LabelNode] = node
	l[LabelRole] = RoleNode
	return l
}

// Namespace is the namespace a run gets when the provider has none: continuum-<run>.
func Namespace(run string) string { return objectName("continuum-"+run, 63) }

// checkNodeName refuses scenario node names that cannot name a Service (and so cannot resolve
// inside the pods): they must be DNS labels.
func checkNodeName(name string) error {
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return fmt.Errorf("node name %q cannot name a Kubernetes Service (%s): rename the node (lowercase letters, digits and '-', starting with a letter)",
			name, strings.Join(errs, "; "))
	}
	return nil
}

// podSpec is what renders the objects of one run.
type podSpec struct {
	Run, Namespace string
	Image          string
	PullPolicy     corev1.PullPolicy
	// RunDir is the run's results directory on the runner's host: instances write under it, so
	// each node pod mounts a writable volume at that very path.
	RunDir string
	// NodeSelector pins the pod (see placement).
	NodeSelector map[string]string
	// Account is the node pods' ServiceAccount (access.go), whose token they mount; "" none.
	Account string
}

// namespace is a run's own namespace. It enforces the baseline Pod Security Standard: the node
// pods' ServiceAccount may create pods there (access.go), and none of them may be privileged,
// share the host's namespaces or mount its files.
func (s podSpec) namespace() *corev1.Namespace {
	l := runLabels(s.Run)
	l["pod-security.kubernetes.io/enforce"] = "baseline"
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace, Labels: l}}
}

// nodeService is the headless Service that makes a scenario node's name resolve to its pod's IP
// in the namespace (the pods' DNS search path), ready or not: instances start before every pod
// of the run is ready.
func (s podSpec) nodeService(node string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: s.Namespace, Labels: runLabels(s.Run)},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: nodeLabels(s.Run, node),
			PublishNotReadyAddresses: true},
	}
}

// serviceService is the Service of a declared service (platform.Service): the node pods that run
// one of its instances, on its port. It has a cluster IP, so that `<service>:<port>` is
// kube-proxy's balancing over the instances (the round-robin baseline of seeds/004's proxy
// experiments, as a workload's url target); its EndpointSlices list the instances, as the
// proxy's kubernetes discovery reads them.
func (s podSpec) serviceService(svc *platform.Service) *corev1.Service {
	sel := runLabels(s.Run)
	sel[LabelServicePrefix+svc.Name] = "true"
	labels := runLabels(s.Run)
	labels[LabelRole] = RoleService
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: s.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{Selector: sel, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "main", Port: int32(svc.Port)}}},
	}
}

// podResources are the limits of a pod with cpus and mem (0: no limit) and its requests: at
// most 100m and 64Mi, because a scenario's cpus, like the testbed's, is a quota and not a
// reservation (a scenario whose nodes add up to more cores than a cluster node has still runs
// there, as it does on one host).
func podResources(cpus float64, mem int64) corev1.ResourceRequirements {
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	if cpus > 0 {
		q := resource.NewMilliQuantity(int64(cpus*1000+0.5), resource.DecimalSI)
		limits[corev1.ResourceCPU] = *q
		if q.Cmp(requests[corev1.ResourceCPU]) < 0 {
			requests[corev1.ResourceCPU] = *q
		}
	}
	if mem > 0 {
		q := resource.NewQuantity(mem, resource.BinarySI)
		limits[corev1.ResourceMemory] = *q
		if q.Cmp(requests[corev1.ResourceMemory]) < 0 {
			requests[corev1.ResourceMemory] = *q
		}
	}
	return corev1.ResourceRequirements{Limits: limits, Requests: requests}
}

// annotationNodeLabels holds a node pod's scenario node's labels as JSON (an annotation: a
// scenario's label need not be a valid Kubernetes label); PodClient.State gives them as the
// node's, over its cluster Node's.
const annotationNodeLabels = "continuum.io/node-labels"

// podName is the node pod's name: the node's own (a DNS label, checkNodeName).
func podName(node string) string { return node }

// nodePod is the pod of scenario node n. Its CPU and memory limits are the node's, its requests
// small (podResources).
func (s podSpec) nodePod(n platform.Node) *corev1.Pod {
	res := podResources(n.CPUs, int64(n.Memory))
	uid, gid := int64(image.UID), int64(image.GID)
	nonRoot, no, yes := true, false, true
	grace := int64(10)
	token := s.Account != ""
	var ann map[string]string
	if len(n.Labels) > 0 {
		b, _ := json.Marshal(n.Labels)
		ann = map[string]string{annotationNodeLabels: string(b)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(n.Name), Namespace: s.Namespace, Labels: nodeLabels(s.Run, n.Name), Annotations: ann},
		Spec: corev1.PodSpec{
			NodeSelector: s.NodeSelector,
			// A node pod that stops is a node that failed: the run sees its instances exit, as
			// on the testbed; it is not restarted behind the runner's back.
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &no,
			ServiceAccountName:            s.Account,
			AutomountServiceAccountToken:  &token,
			Hostname:                      n.Name,
			// The sandbox process is PID 1 and reaps instances' orphans (the agent waits only
			// for its own children).
			ShareProcessNamespace: &yes,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &gid, RunAsNonRoot: &nonRoot,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "node", Image: s.Image, ImagePullPolicy: s.PullPolicy,
				Args: []string{"kubernetes-agent", "--listen", fmt.Sprintf("127.0.0.1:%d", AgentPort), "--node", n.Name,
					"--state-dir", stateDir},
				Resources: res,
				// Ready once the agent listens (it listens on loopback, out of an HTTP probe's
				// reach); the probe stops once it has passed.
				StartupProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{image.ContinuumPath, "kubernetes-agent",
						"--probe", "--listen", fmt.Sprintf("127.0.0.1:%d", AgentPort)}}},
					PeriodSeconds: 1, FailureThreshold: 120, TimeoutSeconds: 5,
				},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: s.RunDir}, {Name: "agent", MountPath: agentDir}},
			}},
			Volumes: []corev1.Volume{
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "agent", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}
