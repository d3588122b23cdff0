package kubeplatform

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/platform"
)

func init() {
	platform.RegisterInstances(PlatformName, func(address string) (platform.Instances, error) {
		return NewPodClient(address, nil)
	})
}

// RoleInstance is the LabelRole of an instance pod: an instance a component started through the
// platform's client (PodClient), not the runner.
const RoleInstance = "instance"

// annotationInstance holds an instance pod's instance name as the component gave it (its
// LabelInstance value is that name made a label value).
const annotationInstance = "continuum.io/instance-name"

// PodClient is the Kubernetes platform's component-side client (platform.Instances): a
// component that runs in a node pod of a run (the faas gateway) starts its
// instances as pods of the run's namespace, each placed where the node pod it names runs (the
// node pod's node selector) and running the node pod's image, with the instance's cpus and
// memory as its limits (else the node pod's: on the testbed an instance lives inside its node's
// limits). It talks to the API server with the node pod's ServiceAccount (the run's: access.go),
// or with a kubeconfig when the
// component runs outside the cluster.
//
// An instance pod is not its node pod: it has an address of its own (Start returns it). It
// carries its node's labels, so link emulation shapes it as part of the node (Chaos Mesh's
// objects select the run's pods by node; on the fabric cluster it runs on the node's cluster
// node, behind its links), as a container component's pod. It mounts an empty directory at each of the
// instance's DataDirs, and its output (stdout and stderr as one stream, as the API server's log
// endpoint gives them) is copied into its stdout log under LogDir while it runs.
type PodClient struct {
	ns, run string
	// connect returns the API server's client; set by NewPodClient (tests give a fake).
	connect func() (kubernetes.Interface, error)

	once sync.Once
	cs   kubernetes.Interface
	err  error

	// ctx outlives requests: the instances' log copies end with it (Close).
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	logs   map[string]*logCopy // instance name -> its log copy
	closed bool
}

// logCopy is an instance's log being copied into its log file.
type logCopy struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Stop's bounds: a name taken over is stopped with takeoverGrace; a pod not gone grace plus
// deleteMargin after its delete (a node whose kubelet is lost keeps it Terminating) is deleted
// at once (the API server's force delete), and waited for forceWait more.
const (
	takeoverGrace = 5 * time.Second
	deleteMargin  = 30 * time.Second
	forceWait     = 10 * time.Second
)

// NewPodClient is the client of the endpoint address "<namespace>/<run>" (Provider.Endpoint's).
// With cs nil it connects on first use, from $KUBECONFIG or ~/.kube/config if there is one and
// in-cluster otherwise.
func NewPodClient(address string, cs kubernetes.Interface) (*PodClient, error) {
	ns, run, ok := strings.Cut(address, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || run == "" || len(validation.IsValidLabelValue(labelValue(run))) > 0 {
		return nil, fmt.Errorf("platform kubernetes: endpoint address %q is not <namespace>/<run> (a namespace name, a run name)", address)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &PodClient{ns: ns, run: labelValue(run), ctx: ctx, cancel: cancel, logs: map[string]*logCopy{}}
	if cs != nil {
		c.connect = func() (kubernetes.Interface, error) { return cs, nil }
	} else {
		c.connect = func() (kubernetes.Interface, error) {
			cl, err := Provider{}.connect()
			if err != nil {
				return nil, err
			}
			return cl.cs, nil
		}
	}
	return c, nil
}

func (c *PodClient) client() (kubernetes.Interface, error) {
	c.once.Do(func() { c.cs, c.err = c.connect() })
	return c.cs, c.err
}

// instancePodName is the pod of instance name of run: one per name and run (a start of a name
// in use deletes the old pod first). objectName keeps distinct names distinct (a name it had to
// change, by case included, gets a hash of the original).
func instancePodName(run, name string) string { return objectName("inst-"+run+"-"+name, 63) }

// checkPodInstance refuses what an instance pod cannot be: a spec the client does not honour.
func checkPodInstance(s platform.InstanceSpec) error {
	switch {
	case s.Name == "" || s.Node == "" || len(s.Args) == 0:
		return fmt.Errorf("platform kubernetes: instance %q: a name, a node and a command line are needed", s.Name)
	case strings.ContainsAny(s.Name, "/\\") || s.Name == "." || s.Name == "..":
		// The name names its log file in LogDir.
		return fmt.Errorf("platform kubernetes: instance name %q: no '/' or '\\', and not '.' or '..' (it names the instance's log file)", s.Name)
	case s.Stdout != nil:
		return fmt.Errorf("platform kubernetes: instance %s: a component's instance cannot stream its stdout to the component; read its log", s.Name)
	case s.Image != nil || s.ExecIn != nil:
		return fmt.Errorf("platform kubernetes: instance %s: a component starts its instances from the node's image; an image of its own is a container component of the scenario", s.Name)
	case s.StopSignal != 0 && s.StopSignal != syscall.SIGTERM:
		return fmt.Errorf("platform kubernetes: instance %s: stop signal %v: a pod is stopped with SIGTERM (the node image has no shell for a preStop hook)", s.Name, s.StopSignal)
	case s.Service != nil:
		return fmt.Errorf("platform kubernetes: instance %s: a component's instance cannot declare service %s; it is reached at the address Start returns", s.Name, s.Service.Name)
	}
	for _, d := range s.DataDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("platform kubernetes: instance %s: data directory %q is not an absolute path", s.Name, d)
		}
	}
	return nil
}

// Start creates the instance's pod beside its node's pod and waits until it runs; it returns the
// pod's IP. A pod of the same name is deleted first.
func (c *PodClient) Start(ctx context.Context, s platform.InstanceSpec) (string, error) {
	if err := checkPodInstance(s); err != nil {
		return "", err
	}
	cs, err := c.client()
	if err != nil {
		return "", err
	}
	node, err := cs.CoreV1().Pods(c.ns).Get(ctx, podName(s.Node), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("platform kubernetes: instance %s: node %s's pod: %w", s.Name, s.Node, err)
	}
	if node.Labels[LabelRole] != RoleNode || node.Labels[LabelRun] != c.run || len(node.Spec.Containers) == 0 {
		return "", fmt.Errorf("platform kubernetes: instance %s: pod %s/%s is not node %s's pod of run %s", s.Name, c.ns, node.Name, s.Node, c.run)
	}
	if err := c.Stop(ctx, s.Name, takeoverGrace); err != nil {
		return "", err
	}
	pod := instancePod(s, c.ns, c.run, node)
	created, err := cs.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "continuum"})
	if err != nil {
		return "", fmt.Errorf("platform kubernetes: instance %s: %w", s.Name, err)
	}
	ip, _, err := waitPodStarted(ctx, cs, c.ns, pod.Name)
	if err != nil {
		_ = c.deletePod(context.WithoutCancel(ctx), cs, created, time.Second)
		return "", fmt.Errorf("platform kubernetes: instance %s: %w", s.Name, err)
	}
	if s.LogDir != "" {
		if err := c.copyLog(cs, s, pod.Name); err != nil {
			_ = c.deletePod(context.WithoutCancel(ctx), cs, created, time.Second)
			return "", err
		}
	}
	return ip, nil
}

// instancePod renders instance s's pod beside node pod np.
func instancePod(s platform.InstanceSpec, ns, run string, np *corev1.Pod) *corev1.Pod {
	nc := np.Spec.Containers[0]
	cpus, mem := nodeResources(nc.Resources.Limits)
	if s.CPUs > 0 {
		cpus = s.CPUs
	}
	if s.Memory > 0 {
		mem = s.Memory
	}
	res := podResources(cpus, mem)
	labels := runLabels(run)
	labels[LabelNode] = s.Node
	labels[LabelRole] = RoleInstance
	labels[LabelInstance] = labelValue(s.Name)
	c := corev1.Container{Name: appContainer, Image: nc.Image, ImagePullPolicy: nc.ImagePullPolicy,
		Command: append([]string{}, s.Args...), WorkingDir: s.Dir, Resources: res,
		SecurityContext: nc.SecurityContext}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: v})
	}
	var vols []corev1.Volume
	for i, d := range s.DataDirs {
		name := fmt.Sprintf("data-%d", i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: d})
	}
	no := false
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: instancePodName(run, s.Name), Namespace: ns, Labels: labels,
			Annotations: map[string]string{annotationInstance: s.Name}},
		Spec: corev1.PodSpec{
			NodeSelector: np.Spec.NodeSelector,
			// An instance that exits is reported (State), not restarted behind its component.
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
			SecurityContext:               np.Spec.SecurityContext,
			Containers:                    []corev1.Container{c},
			Volumes:                       vols,
		},
	}
}

// nodeResources reads a node pod's cpus and memory back from its limits (0: none).
func nodeResources(limits corev1.ResourceList) (cpus float64, mem int64) {
	if q, ok := limits[corev1.ResourceCPU]; ok {
		cpus = float64(q.MilliValue()) / 1000
	}
	if q, ok := limits[corev1.ResourceMemory]; ok {
		mem = q.Value()
	}
	return cpus, mem
}

// Stop deletes the instance's pod with grace (SIGTERM, SIGKILL after it; at least a second: the
// API server's 0 is a force delete, which forgets the pod while its container may still run)
// and waits until it is gone. A pod that is not there is not an error; a pod of that name that
// is not this run's instance of that name is not touched.
func (c *PodClient) Stop(ctx context.Context, name string, grace time.Duration) error {
	cs, err := c.client()
	if err != nil {
		return err
	}
	c.mu.Lock()
	lc := c.logs[name]
	delete(c.logs, name)
	c.mu.Unlock()
	if lc != nil {
		// After the pod has ended: its last lines are copied by then.
		defer func() { lc.cancel(); <-lc.done }()
	}
	pod, err := cs.CoreV1().Pods(c.ns).Get(ctx, instancePodName(c.run, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("platform kubernetes: instance %s: %w", name, err)
	}
	if pod.Labels[LabelRun] != c.run || pod.Labels[LabelRole] != RoleInstance || pod.Annotations[annotationInstance] != name {
		return fmt.Errorf("platform kubernetes: pod %s/%s is not instance %s of run %s: not touched", c.ns, pod.Name, name, c.run)
	}
	return c.deletePod(ctx, cs, pod, grace)
}

// deletePod deletes pod (that very one: its UID) with grace and waits until it is gone; past
// grace + deleteMargin it is force-deleted.
func (c *PodClient) deletePod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, grace time.Duration) error {
	uid := pod.UID
	del := func(secs int64) error {
		err := cs.CoreV1().Pods(c.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &secs,
			Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // Conflict: another pod by now
			return fmt.Errorf("platform kubernetes: deleting pod %s/%s: %w", c.ns, pod.Name, err)
		}
		return nil
	}
	secs := graceSeconds(grace)
	if err := del(secs); err != nil {
		return err
	}
	gone := func() (bool, error) {
		p, err := cs.CoreV1().Pods(c.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("platform kubernetes: pod %s/%s: %w", c.ns, pod.Name, err)
		}
		return p.UID != uid, nil
	}
	forceAt := time.Now().Add(time.Duration(secs)*time.Second + deleteMargin)
	var giveUp time.Time
	for {
		ok, err := gone()
		if ok || err != nil {
			return err
		}
		now := time.Now()
		switch {
		case giveUp.IsZero() && now.After(forceAt):
			if err := del(0); err != nil {
				return err
			}
			giveUp = now.Add(forceWait)
		case !giveUp.IsZero() && now.After(giveUp):
			return fmt.Errorf("platform kubernetes: pod %s/%s still there after its delete and a force delete", c.ns, pod.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("platform kubernetes: pod %s/%s still there: %w", c.ns, pod.Name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// graceSeconds is a pod delete's gracePeriodSeconds for grace: whole seconds rounded up, and at
// least one (the API server's 0 is a force delete, which forgets the pod while its container
// may still run).
func graceSeconds(grace time.Duration) int64 {
	return max(int64((grace+time.Second-1)/time.Second), 1)
}

// copyLog copies the instance pod's log into its stdout log under s.LogDir until the pod ends
// or Stop or Close ends the copy.
func (c *PodClient) copyLog(cs kubernetes.Interface, s platform.InstanceSpec, pod string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("platform kubernetes: instance %s: the client is closed", s.Name)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	lc := &logCopy{cancel: cancel, done: make(chan struct{})}
	c.logs[s.Name] = lc
	go func() {
		defer close(lc.done)
		defer cancel()
		f, err := os.OpenFile(platform.LogPath(s.LogDir, s.Node, s.Name, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		r, err := cs.CoreV1().Pods(c.ns).GetLogs(pod, &corev1.PodLogOptions{Container: appContainer, Follow: true}).Stream(ctx)
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(f, "continuum: the instance's log cannot be read: %v\n", err)
			}
			return
		}
		defer r.Close()
		_, _ = io.Copy(f, r)
	}()
	return nil
}

// Close ends the log copies (the instances run on); a Start after it is refused.
func (c *PodClient) Close() {
	c.mu.Lock()
	c.closed = true
	var copies []*logCopy
	for _, lc := range c.logs {
		copies = append(copies, lc)
	}
	c.mu.Unlock()
	c.cancel()
	for _, lc := range copies {
		<-lc.done
	}
}

// State lists the run's instance pods and its nodes: a node's labels are those of the cluster
// Node its pod runs on, and it is isolated while that Node's kubelet is lost to the control
// plane (Ready Unknown) or its pod is not running.
func (c *PodClient) State(ctx context.Context) (platform.State, error) {
	cs, err := c.client()
	if err != nil {
		return platform.State{}, err
	}
	sel := LabelRun + "=" + c.run
	pods, err := cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return platform.State{}, fmt.Errorf("platform kubernetes: pods of run %s: %w", c.run, err)
	}
	var st platform.State
	hosts := map[string]*corev1.Node{}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch p.Labels[LabelRole] {
		case RoleInstance:
			if p.DeletionTimestamp != nil {
				continue // being stopped: gone for the component
			}
			st.Instances = append(st.Instances, instanceState(p))
		case RoleNode:
			ns := platform.NodeState{Name: p.Labels[LabelNode], Isolated: p.Status.Phase != corev1.PodRunning}
			if host := p.Spec.NodeName; host != "" {
				n, ok := hosts[host]
				if !ok {
					n, err = cs.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
					switch {
					case apierrors.IsForbidden(err):
						n = nil // no grant to read Nodes (access.go): the node pod's state only
					case err != nil:
						return platform.State{}, fmt.Errorf("platform kubernetes: node %s's cluster node %s: %w", ns.Name, host, err)
					}
					hosts[host] = n
				}
				if n != nil {
					ns.Labels = maps.Clone(n.Labels)
					ns.Isolated = ns.Isolated || nodeLost(n)
				}
			}
			// The scenario node's own labels, over its cluster Node's: several scenario nodes
			// may share one cluster node, each with its own (an FL node's fl/type, data/...).
			// An annotation that is not such an object (the runner writes it; a pod of the
			// run's namespace could change it) is left out, not a failure of every caller's
			// State.
			var own map[string]string
			if v := p.Annotations[annotationNodeLabels]; v != "" && json.Unmarshal([]byte(v), &own) == nil {
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				maps.Copy(ns.Labels, own)
			}
			st.Nodes = append(st.Nodes, ns)
		}
	}
	return st, nil
}

// instanceState is how an instance pod stands: running, or how its container ended.
func instanceState(p *corev1.Pod) platform.InstanceState {
	is := platform.InstanceState{Name: p.Annotations[annotationInstance], Node: p.Labels[LabelNode]}
	if is.Name == "" {
		is.Name = p.Labels[LabelInstance]
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != appContainer {
			continue
		}
		switch {
		case cs.State.Running != nil:
			is.Running = true
		case cs.State.Terminated != nil:
			is.Ended = exitText(cs.State.Terminated)
		}
	}
	if !is.Running && is.Ended == "" && (p.Status.Phase == corev1.PodPending) {
		is.Ended = "not started: " + podTrouble(p)
		if is.Ended == "not started: " {
			is.Ended = "" // still starting
		}
	}
	return is
}

// exitText says how a container ended as the testbed says how a process did: "exit 1",
// "signal killed" (a container's exit code 128+n is signal n).
func exitText(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Signal != 0:
		return "signal " + syscall.Signal(t.Signal).String()
	case t.ExitCode > 128 && t.ExitCode < 128+65:
		return "signal " + syscall.Signal(t.ExitCode-128).String()
	case t.Reason == "OOMKilled":
		return fmt.Sprintf("exit %d (OOMKilled)", t.ExitCode)
	}
	return fmt.Sprintf("exit %d", t.ExitCode)
}

// nodeLost says whether a cluster Node's kubelet is lost to the control plane: its Ready
// condition Unknown (the node controller's mark for a node that stopped reporting).
func nodeLost(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionUnknown
		}
	}
	return false
}

// Addr is where port of a component on node is reached from other pods: the node's name, which
// its headless Service resolves to the node pod's IP.
func (c *PodClient) Addr(node string, port int) string {
	return fmt.Sprintf("%s:%d", node, port)
}

// SharesNode is false: an instance pod has a network of its own.
func (c *PodClient) SharesNode(string) bool { return false }

var _ platform.Instances = (*PodClient)(nil)
