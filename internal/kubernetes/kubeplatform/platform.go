package kubeplatform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/agent"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testbed"
)

// Platform is one run's topology up on a cluster, as Provider.Up returns it.
type Platform struct {
	c     *clients
	log   *slog.Logger
	cfg   platform.Config
	run   string // the run's name as a label value
	ns    string
	ownNS bool // the namespace is the run's own: Down deletes it
	// made is set once up has made sure the run's name is this run's alone (its namespace
	// created, or none of the run's pods in the given one): before that Down deletes nothing.
	made bool
	spec podSpec

	// ctx outlives every request of the run (instances' output streams and waits); Down ends it.
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	nodes map[string]*nodePod
	insts map[string]runInstance // nil while starting
	// redirects are, per node, the container pods' ports its loopback reaches (port -> pod
	// IP:port): Dial goes straight there, so that a readiness probe sees the container and not
	// the node pod's forward, which accepts before the container listens.
	redirects map[string]map[int]string
	// helpers are the agents' instances the platform runs for itself (container pods' forwards):
	// samples leave them out.
	helpers map[string]bool
	place   map[string]map[string]string // node selectors by scenario node
	images  map[string]string            // local images loaded into the cluster: path + pick -> reference
	imageMu sync.Mutex                   // one image load at a time (the same image is loaded once)
	// containerd is the cluster's containerd socket on this host, which local images are
	// imported through ("" none: local images are refused).
	containerd string
	services   map[string]bool // declared services that have their Service
	paths      imagePaths      // the runner's clone's Python paths, as the images have them
	links      links           // how the run's links are emulated
	// fabric, on a multi-node cluster on this host's testbed, is links as fabricLinks: the
	// runner reaches the agents from inside their pods (podDialer), not across the links.
	fabric *fabricLinks
	netlog *testbed.NetworkLog // the fabric's figures of the latest Sample (under mu)
	down   bool
}

// nodePod is a scenario node: its pod and the agent in it.
type nodePod struct {
	name  string
	ip    string
	fw    *forwarder // the port-forward to the agent; nil when it is reached through its node
	agent *agent.Client
}

// up creates the namespace, Services and node pods, waits for the pods to run, connects to their
// agents and puts the link conditions in place.
func (pf *Platform) up(ctx context.Context, place map[string]map[string]string, readyTimeout time.Duration) error {
	cs := pf.c.cs
	create := metav1.CreateOptions{FieldManager: "continuum"}
	// What Down deletes is what this run made: a run of the same name (runs are named
	// run<pid>-<n>, and two runners on one cluster may share a pid) is refused here, and its
	// objects are left alone.
	if pf.ownNS {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, pf.spec.namespace(), create); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("platform kubernetes: namespace %s exists already: a run of the same name is on this cluster (another runner's, or one that crashed: `continuum run --platform kubernetes --cleanup %s` deletes it)", pf.ns, pf.run)
			}
			return fmt.Errorf("platform kubernetes: namespace %s: %w", pf.ns, err)
		}
		pf.made = true
	} else if _, err := cs.CoreV1().Namespaces().Get(ctx, pf.ns, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("platform kubernetes: namespace %s: %w (create it, or leave --namespace out for one per run)", pf.ns, err)
	} else {
		if l, err := cs.CoreV1().Pods(pf.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + pf.run, Limit: 1}); err != nil {
			return fmt.Errorf("platform kubernetes: namespace %s: %w", pf.ns, err)
		} else if len(l.Items) > 0 {
			return fmt.Errorf("platform kubernetes: namespace %s holds pods of a run of the same name (%s: another runner's, or one that crashed: `continuum run --platform kubernetes --namespace %s --cleanup %s` deletes them)", pf.ns, pf.run, pf.ns, pf.run)
		}
		pf.made = true
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := waitServiceAccount(sctx, pf.c, pf.ns)
	cancel()
	if err != nil {
		return err
	}
	if pf.ownNS {
		granted, err := pf.spec.access().create(ctx, cs, create)
		if err != nil {
			return err
		}
		if granted {
			pf.spec.Account = instancesAccount(pf.run)
		} else {
			pf.log.Warn("the node pods get no ServiceAccount: this runner may not grant one, so components cannot start instances as pods or discover services", "namespace", pf.ns)
		}
	} else {
		pf.log.Info("the node pods get no ServiceAccount in a given namespace (access.go): components cannot start instances as pods or discover services there", "namespace", pf.ns)
	}
	for _, n := range pf.cfg.Topology.Nodes {
		s := pf.spec
		s.NodeSelector = place[n.Name]
		if _, err := cs.CoreV1().Services(pf.ns).Create(ctx, s.nodeService(n.Name), create); err != nil {
			return fmt.Errorf("platform kubernetes: node %s's Service: %w", n.Name, err)
		}
		if _, err := cs.CoreV1().Pods(pf.ns).Create(ctx, s.nodePod(n), create); err != nil {
			return fmt.Errorf("platform kubernetes: node %s's pod: %w", n.Name, err)
		}
	}
	if err := pf.links.setUp(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(pf.cfg.Topology.Nodes))
	for i, n := range pf.cfg.Topology.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			np, err := pf.connectNode(wctx, n.Name)
			if err != nil {
				errs[i] = err
				return
			}
			pf.mu.Lock()
			pf.nodes[n.Name] = np
			pf.mu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// connectNode waits for a node's pod to run, connects to its agent and waits for it to answer:
// through a port-forward (the API server and the pod's kubelet), or, on a cluster on this host's
// testbed, from inside the pod's node, so that the runner's control of the run crosses no
// emulated link and a partition of the control plane's node does not cut it.
func (pf *Platform) connectNode(ctx context.Context, node string) (*nodePod, error) {
	pod, err := pf.waitRunning(ctx, podName(node))
	if err != nil {
		return nil, err
	}
	var fw *forwarder
	var ac *agent.Client
	if pf.fabric != nil {
		root, ok := pf.fabric.cgroupRoots[pod.Spec.NodeName]
		if !ok {
			return nil, fmt.Errorf("platform kubernetes: node %s's pod runs on %q, which is not a node of the cluster's testbed %s", node, pod.Spec.NodeName, pf.fabric.name)
		}
		d := &podDialer{root: root, uid: string(pod.UID)}
		ac = agent.NewClientVia(fmt.Sprintf("http://127.0.0.1:%d", AgentPort), d.dial)
	} else {
		if fw, err = forward(ctx, pf.c.rc, pf.c.cs, pf.ns, pod.Name, AgentPort); err != nil {
			return nil, fmt.Errorf("platform kubernetes: node %s: %w", node, err)
		}
		ac = agent.NewClient(fw.base(), nil)
	}
	for {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ac.Health(hctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			if fw != nil {
				fw.Close()
			}
			return nil, fmt.Errorf("platform kubernetes: node %s: its agent does not answer: %w", node, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return &nodePod{name: node, ip: pod.Status.PodIP, fw: fw, agent: ac}, nil
}

// waitRunning polls a pod until it runs and is ready, failing at once when it cannot (unschedulable, an image
// that cannot be pulled, a container that exited) with what the cluster says.
func (pf *Platform) waitRunning(ctx context.Context, name string) (*corev1.Pod, error) {
	for {
		pod, err := pf.c.cs.CoreV1().Pods(pf.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("platform kubernetes: pod %s/%s: %w", pf.ns, name, err)
		}
		if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && podReady(pod) {
			return pod, nil
		}
		if why := podTrouble(pod); why != "" {
			return nil, fmt.Errorf("platform kubernetes: node pod %s/%s cannot run: %s", pf.ns, name, why)
		}
		select {
		case <-ctx.Done():
			why := string(pod.Status.Phase)
			for _, c := range pod.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					why += "; " + c.Message
				}
			}
			return nil, fmt.Errorf("platform kubernetes: node pod %s/%s not running in time (%s)%s", pf.ns, name, why, pf.podEvents(name))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podEvents are the last events of pod name (the kubelet's reasons: a sandbox that fails to be
// created, an image it cannot find), for an error that says why the pod is not running; "" if
// there are none.
func (pf *Platform) podEvents(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := pf.c.cs.CoreV1().Events(pf.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	items := evs.Items
	sort.Slice(items, func(i, j int) bool { return items[i].LastTimestamp.Before(&items[j].LastTimestamp) })
	var b strings.Builder
	b.WriteString("; its last events:")
	for _, e := range items[max(0, len(items)-5):] {
		fmt.Fprintf(&b, " [%s x%d] %s;", e.Reason, max(e.Count, 1), e.Message)
	}
	return b.String()
}

// podReady: the pod's Ready condition is true (its agent listens: the startup probe passed).
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podTrouble says why a pod will not come up by itself, or "" while it may still.
func podTrouble(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return "it ended (" + string(pod.Status.Phase) + ")"
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
				return w.Reason + ": " + w.Message + " (build the image with `continuum image build` and load it into the cluster, or give --image)"
			}
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("its agent exited (%s, code %d): %s", t.Reason, t.ExitCode, t.Message)
		}
	}
	return ""
}

// Network is what the cluster's testbed fabric did while the latest Sample ran, on a cluster on
// this host's testbed (platform.NetworkReporter); the zero report elsewhere: a real network
// reports nothing.
func (pf *Platform) Network() platform.NetworkReport {
	pf.mu.Lock()
	nl := pf.netlog
	pf.mu.Unlock()
	if nl == nil {
		return platform.NetworkReport{}
	}
	return nl.Report()
}

// Links says how the run's links are emulated (platform.LinkDescriber).
func (pf *Platform) Links() string { return pf.links.describe() }

// NodeAddrs maps every node to its pod's IP.
func (pf *Platform) NodeAddrs() map[string]string {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	out := map[string]string{}
	for n, np := range pf.nodes {
		out[n] = np.ip
	}
	return out
}

func (pf *Platform) node(name string) (*nodePod, error) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	np, ok := pf.nodes[name]
	if !ok {
		names := make([]string, 0, len(pf.nodes))
		for n := range pf.nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no node %q (nodes: %s)", name, strings.Join(names, ", "))
	}
	return np, nil
}

// Dial connects from inside node's pod, through its agent.
func (pf *Platform) Dial(ctx context.Context, node, network, addr string) (net.Conn, error) {
	np, err := pf.node(node)
	if err != nil {
		return nil, err
	}
	return np.agent.Dial(ctx, network, pf.redirect(node, network, addr))
}

// Apply applies a fault: kill, pause and resume through the node's agent (process-group
// signals, as the testbed's), restart through the instance, and partition, heal and link by
// bringing the run's NetworkChaos objects in step with the new network state.
func (pf *Platform) Apply(ctx context.Context, f platform.Fault) (string, error) {
	switch f.Action {
	case platform.FaultKill:
		if f.Component != "" {
			in, err := pf.instance(f.Component)
			if err != nil {
				return "", err
			}
			return "killed " + f.Component, in.kill(ctx)
		}
		detail, err := pf.signalNode(ctx, f.Node, syscall.SIGKILL, "killed")
		if err == nil {
			// The node's container pods are part of it: they die with it.
			for _, in := range pf.podInstances(f.Node) {
				if kerr := in.kill(ctx); kerr != nil {
					err = kerr
				}
			}
		}
		return detail, err
	case platform.FaultPause, platform.FaultResume:
		sig, what := syscall.SIGSTOP, "paused"
		if f.Action == platform.FaultResume {
			sig, what = syscall.SIGCONT, "resumed"
		}
		detail, err := pf.signalNode(ctx, f.Node, sig, what)
		if pods := pf.podInstances(f.Node); len(pods) > 0 && err == nil {
			// A pod's processes cannot be stopped from outside it: say so where the event is
			// recorded rather than let the run look as if they were.
			names := make([]string, 0, len(pods))
			for _, p := range pods {
				names = append(names, p.spec.Name)
			}
			sort.Strings(names)
			detail += " (not its container pods, which run on: " + strings.Join(names, ", ") + ")"
		}
		return detail, err
	case platform.FaultRestart:
		in, err := pf.instance(f.Component)
		if err != nil {
			return "", err
		}
		return "restarted " + f.Component, in.restart(ctx, 5*time.Second)
	case platform.FaultPartition, platform.FaultHeal, platform.FaultLink:
		return pf.links.apply(ctx, f)
	}
	return "", fmt.Errorf("platform kubernetes cannot apply fault %s (it applies: %s)", f.Action,
		strings.Join([]string{platform.FaultPartition, platform.FaultHeal, platform.FaultLink, platform.FaultKill,
			platform.FaultPause, platform.FaultResume, platform.FaultRestart}, ", "))
}

func (pf *Platform) signalNode(ctx context.Context, node string, sig syscall.Signal, what string) (string, error) {
	np, err := pf.node(node)
	if err != nil {
		return "", err
	}
	return what + " every process of " + node, np.agent.Signal(ctx, "", sig)
}

func (pf *Platform) instance(name string) (runInstance, error) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	in, ok := pf.insts[name]
	if !ok || in == nil {
		names := make([]string, 0, len(pf.insts))
		for n := range pf.insts {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no instance %q (instances: %s)", name, strings.Join(names, ", "))
	}
	return in, nil
}

// declareService gives a declared service its Service (once) and labels the node pod as one of
// its instances, so that EndpointSlices list it (the proxy's Kubernetes discovery reads those).
func (pf *Platform) declareService(ctx context.Context, node string, svc *platform.Service) error {
	pf.mu.Lock()
	_, isNode := pf.nodes[svc.Name]
	have := pf.services[svc.Name]
	pf.mu.Unlock()
	if isNode {
		return fmt.Errorf("service %s has the name of a node, which names that node's Service on this platform: rename the service", svc.Name)
	}
	if !have {
		_, err := pf.c.cs.CoreV1().Services(pf.ns).Create(ctx, pf.spec.serviceService(svc), metav1.CreateOptions{FieldManager: "continuum"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("service %s: %w", svc.Name, err)
		}
		pf.mu.Lock()
		pf.services[svc.Name] = true
		pf.mu.Unlock()
	}
	// The node pod joins the Service's selector; the service's attributes become its
	// continuum.io/ annotations, which discovery sources read as the instance's attributes.
	meta := map[string]any{"labels": map[string]any{LabelServicePrefix + svc.Name: "true"}}
	if len(svc.Attributes) > 0 {
		ann := map[string]any{}
		for k, v := range svc.Attributes {
			ann[AttributePrefix+k] = v
		}
		meta["annotations"] = ann
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = pf.c.cs.CoreV1().Pods(pf.ns).Patch(ctx, podName(node), types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "continuum"})
	return err
}

// withdrawService takes node's pod out of service svc's selector once instance in, which served
// it there, has exited, unless another running instance on the node serves it too: a discovery
// source then stops listing an instance that is gone, as on the testbed.
func (pf *Platform) withdrawService(in *instance, node, svc string) {
	pf.mu.Lock()
	for _, other := range pf.insts {
		o, ok := other.(*instance)
		if !ok || o == in || o.spec.Node != node || o.spec.Service == nil || o.spec.Service.Name != svc {
			continue
		}
		select {
		case <-o.Done():
		default:
			pf.mu.Unlock()
			return // still served there
		}
	}
	pf.mu.Unlock()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, LabelServicePrefix+svc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pf.c.cs.CoreV1().Pods(pf.ns).Patch(ctx, podName(node), types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "continuum"}); err != nil && !apierrors.IsNotFound(err) {
		pf.log.Warn("withdrawing a node from its service", "node", node, "service", svc, "err", err)
	}
}

// Sample asks every node's agent for its figures, once at the start and then every interval.
func (pf *Platform) Sample(ctx context.Context, interval time.Duration, emit func([]platform.Sample)) {
	s := newSampler(pf)
	t0 := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var nl *testbed.NetworkLog
	if pf.fabric != nil {
		nl = &testbed.NetworkLog{}
		pf.mu.Lock()
		pf.netlog = nl
		pf.mu.Unlock()
	}
	for {
		t := time.Since(t0)
		emit(s.take(ctx, t))
		if nl != nil {
			// The fabric's figures, as the testbed's own sampler takes them each round: what
			// the fabric did to the run's traffic (lateness, drops, its CPU), for network.csv
			// and the distortion check, with what every process in the nodes used (the
			// cluster's daemons besides the run's pods: how busy the host was).
			if st, err := pf.fabric.tb.FabricStats(); err == nil {
				if nodes, err := pf.fabric.tb.NodesCPU(); err == nil {
					nl.TakeWithNodes(t, st.At, st, nodes)
				} else {
					nl.Take(t, st.At, st)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Down stops every instance (SIGTERM, SIGKILL after 5 s; their output comes back first), stops
// the forwards and deletes every object of the run: the namespace when it is the run's own, and
// waits until it is gone.
func (pf *Platform) Down() error {
	pf.mu.Lock()
	if pf.down {
		pf.mu.Unlock()
		return nil
	}
	pf.down = true
	insts := make([]runInstance, 0, len(pf.insts))
	for _, in := range pf.insts {
		if in != nil { // nil: still starting; Start sees down and stops it
			insts = append(insts, in)
		}
	}
	nodes := make([]*nodePod, 0, len(pf.nodes))
	for _, np := range pf.nodes {
		nodes = append(nodes, np)
	}
	pf.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, in := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.Stop(5 * time.Second); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	pf.cancel()
	for _, np := range nodes {
		if np.fw != nil {
			np.fw.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := pf.links.tearDown(ctx); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, pf.deleteObjects(ctx))
	return errors.Join(errs...)
}

// deleteObjects deletes the run's namespace (or its objects in a given one) and waits for them
// to be gone.
func (pf *Platform) deleteObjects(ctx context.Context) error {
	if !pf.made {
		return nil // another run's, or nothing yet
	}
	cs := pf.c.cs
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + pf.run}
	zero := int64(0)
	now := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	var accessErr error
	if _, err := deleteAccess(ctx, cs, pf.ns, pf.run, pf.ownNS); err != nil {
		accessErr = fmt.Errorf("platform kubernetes: the node pods' grants: %w", err) // the rest goes on
	}
	if pf.ownNS {
		if err := cs.CoreV1().Namespaces().Delete(ctx, pf.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("platform kubernetes: deleting namespace %s: %w", pf.ns, err)
		}
		// Its pods first, without grace: their instances are already stopped.
		_ = cs.CoreV1().Pods(pf.ns).DeleteCollection(ctx, now, sel)
		for {
			_, err := cs.CoreV1().Namespaces().Get(ctx, pf.ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return accessErr
			}
			select {
			case <-ctx.Done():
				return errors.Join(accessErr, fmt.Errorf("platform kubernetes: namespace %s still there after 3 minutes (`continuum run --platform kubernetes --cleanup %s` deletes it)", pf.ns, pf.run))
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	errs := []error{accessErr}
	svcs, err := cs.CoreV1().Services(pf.ns).List(ctx, sel)
	if err == nil {
		for _, s := range svcs.Items {
			if err := cs.CoreV1().Services(pf.ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	} else {
		errs = append(errs, err)
	}
	if err := cs.CoreV1().Pods(pf.ns).DeleteCollection(ctx, now, sel); err != nil {
		errs = append(errs, err)
	}
	for {
		pods, err := cs.CoreV1().Pods(pf.ns).List(ctx, sel)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if len(pods.Items) == 0 {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("platform kubernetes: %d pods of run %s still in namespace %s after 3 minutes", len(pods.Items), pf.run, pf.ns))...)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

var (
	_ platform.Platform        = (*Platform)(nil)
	_ platform.NetworkReporter = (*Platform)(nil)
	_ platform.LinkDescriber   = (*Platform)(nil)
)
