package kubeplatform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/chaos"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/version"
)

// PlatformName is the platform's name: its endpoints start with "kubernetes:".
const PlatformName = "kubernetes"

// DefaultImage is the image node pods run: `continuum image build` tags it with this build's
// version, so that the agent and the instances in the pods are the runner's own binary.
func DefaultImage() string { return "continuum-project/continuum:" + version.Version }

// Provider runs scenarios on a Kubernetes cluster: every run in a namespace of its own (or in
// Namespace), every scenario node a pod.
type Provider struct {
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, then ~/.kube/config, then in-cluster).
	Kubeconfig string
	// Namespace, if set, holds every run's objects (it must exist); otherwise each run gets a
	// namespace of its own, continuum-<run>, deleted with it.
	Namespace string
	// Image is the node pods' image (default DefaultImage()).
	Image string
	// PullPolicy of that image ("" = IfNotPresent).
	PullPolicy corev1.PullPolicy
	// NodeMap pins scenario nodes to cluster nodes by name; scenario nodes not in it go to the
	// cluster nodes labelled continuum.io/node=<scenario node>, or to the only schedulable node.
	NodeMap map[string]string
	// ReadyTimeout bounds how long Up waits for the node pods (default 3 minutes: an image pull).
	ReadyTimeout time.Duration
	// Containerd is the cluster's containerd socket on this host (a cluster `continuum cluster
	// up` started: <state dir>/containerd/containerd.sock). A container component's image that
	// is a file of this host (an OCI layout or tarball) is imported through it; without it such
	// an image is refused, and only registry references run.
	Containerd string
	// Render, if set, receives from Check the YAML of every object a run creates (`run --check
	// --render`).
	Render io.Writer
	// Fabric, if set, is the testbed whose fabric joins the cluster's nodes (a multi-node
	// cluster `continuum cluster up --topology` started on this host: cluster.FabricFor). The
	// scenario's links are then emulated there, hop by hop, instead of by Chaos Mesh; its
	// topology must be the cluster's, and each scenario node runs on the cluster node of its
	// name.
	Fabric *Fabric
}

func (p Provider) image() string {
	if p.Image == "" {
		return DefaultImage()
	}
	return p.Image
}

func (p Provider) pullPolicy() corev1.PullPolicy {
	if p.PullPolicy == "" {
		return corev1.PullIfNotPresent
	}
	return p.PullPolicy
}

// clients are a provider's connections to its cluster.
type clients struct {
	rc   *rest.Config
	cs   kubernetes.Interface
	dyn  dynamic.Interface
	host string
}

func (p Provider) connect() (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = p.Kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("platform kubernetes: no cluster to run on: %w (give --kubeconfig, or set KUBECONFIG)", err)
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &clients{rc: rc, cs: cs, dyn: dyn, host: rc.Host}, nil
}

// Endpoint is "kubernetes:<namespace>/<run>".
func (p Provider) Endpoint(name string) string {
	ns := p.Namespace
	if ns == "" {
		ns = Namespace(name)
	}
	// The run as its objects' label has it: components select by it (PodClient, the proxy's
	// kubernetes discovery source).
	return platform.Endpoint{Platform: PlatformName, Address: ns + "/" + labelValue(name)}.String()
}

// Check refuses what a cluster cannot run as written: node names that cannot name a Service,
// the cpu fault (a pod's CPU limit cannot be changed under a running process everywhere; give
// the node its cpus instead), and, when the cluster is reachable and lacks Chaos Mesh, link
// conditions and link faults. With a reachable cluster it also renders the node pods, their
// Services and the NetworkChaos objects of the scenario and has the API server validate them in
// a server-side dry run, creating nothing.
func (p Provider) Check(topo *platform.Topology, faults []platform.Fault) error {
	for _, n := range topo.Nodes {
		if err := checkNodeName(n.Name); err != nil {
			return fmt.Errorf("platform kubernetes: %w", err)
		}
	}
	for _, f := range faults {
		if f.Action == platform.FaultCPU {
			return fmt.Errorf("platform kubernetes cannot apply fault cpu (node %s): a node pod's CPU limit is set when it starts; give the node its cpus in the topology instead", f.Node)
		}
	}
	for s := range p.NodeMap {
		if _, ok := topo.Node(s); !ok {
			return fmt.Errorf("platform kubernetes: node map names %q, which is not a node of the topology (nodes: %s)", s, strings.Join(topo.NodeNames(), ", "))
		}
	}
	var c *clients
	if cc, err := p.connect(); err == nil {
		if _, err := cc.cs.Discovery().ServerVersion(); err == nil {
			c = cc
		}
	}
	// Without a reachable cluster (none configured, or down now) only the static checks apply
	// and the objects render without placement: `run --check` works offline, and Up says what
	// is wrong with the cluster.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if p.Fabric != nil {
		if len(p.NodeMap) > 0 {
			return errNodeMapOnFabric
		}
		st, err := p.fabricClient().Status()
		if err != nil {
			return fmt.Errorf("platform kubernetes: the cluster's testbed %s: %w", p.Fabric.Testbed, err)
		}
		if err := sameTopology(p.Fabric.Testbed, st, topo); err != nil {
			return err
		}
	}
	var place map[string]map[string]string
	if c != nil {
		if err := p.requireChaosMesh(ctx, c, topo, faults); err != nil {
			return err
		}
		var err error
		if place, err = p.placement(ctx, c, topo); err != nil {
			return err
		}
	}
	if p.Render != nil {
		if err := p.render(p.Render, topo, place); err != nil {
			return err
		}
	}
	if c == nil {
		return nil
	}
	return p.dryRun(ctx, c, topo, place)
}

// checkRun stands for every run's name in the objects Check renders.
const checkRun = "check"

// checkSpec is the podSpec of the objects Check renders and dry-runs, in namespace ns.
func (p Provider) checkSpec(ns string) podSpec {
	return podSpec{Run: checkRun, Namespace: ns, Image: p.image(), PullPolicy: p.pullPolicy(), RunDir: "/results/" + checkRun}
}

// render writes, as YAML, every object a run of topo creates (its name, namespace and results
// directory stand in as "check").
func (p Provider) render(w io.Writer, topo *platform.Topology, place map[string]map[string]string) error {
	ns := p.Namespace
	var objs []any
	if ns == "" {
		ns = Namespace(checkRun)
		o := p.checkSpec(ns).namespace()
		o.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
		objs = append(objs, o)
	}
	objs = append(objs, p.checkSpec(ns).access().list()...)
	for _, n := range topo.Nodes {
		s := p.checkSpec(ns)
		s.NodeSelector = place[n.Name]
		s.Account = instancesAccount(checkRun)
		svc := s.nodeService(n.Name)
		svc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
		pod := s.nodePod(n)
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		objs = append(objs, svc, pod)
	}
	if p.Fabric == nil && chaos.NeedsChaosMesh(topo, nil) != "" {
		for _, o := range chaos.NewNetwork(topo).Objects(ns, checkRun, runLabels(checkRun)) {
			objs = append(objs, o.Object)
		}
	}
	fmt.Fprintf(w, "# The objects of one run: its name, namespace and results directory stand in as %q.\n", checkRun)
	if place == nil {
		fmt.Fprintln(w, "# No cluster reachable: pods are shown without their node selectors.")
	}
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}

// errNodeMapOnFabric refuses --node-map on a cluster on the testbed's fabric.
var errNodeMapOnFabric = errors.New("platform kubernetes: on a cluster on this host's testbed each scenario node runs on the cluster node of its name, whose links are the scenario's: leave --node-map out")

// fabricClient is the control client of the Fabric's testbed.
func (p Provider) fabricClient() *testbed.Client {
	return testbed.NewClient(p.Fabric.StateDir, p.Fabric.Testbed)
}

// requireChaosMesh fails when the scenario needs Chaos Mesh and the cluster does not serve it
// (a cluster on the testbed's fabric emulates links there: it needs none).
func (p Provider) requireChaosMesh(ctx context.Context, c *clients, topo *platform.Topology, faults []platform.Fault) error {
	why := chaos.NeedsChaosMesh(topo, faults)
	if why == "" || p.Fabric != nil {
		return nil
	}
	ok, err := chaos.Installed(ctx, c.cs.Discovery())
	if err != nil {
		return fmt.Errorf("platform kubernetes: checking for Chaos Mesh on %s: %w", c.host, err)
	}
	if !ok {
		return fmt.Errorf("platform kubernetes: the scenario needs link emulation (%s), which a cluster does through Chaos Mesh, "+
			"and %s serves no chaos-mesh.org/v1alpha1 NetworkChaos: install Chaos Mesh in the cluster, or run a scenario without links and link events", why, c.host)
	}
	return nil
}

// dryRun has the API server validate the objects of a run named "check".
func (p Provider) dryRun(ctx context.Context, c *clients, topo *platform.Topology, place map[string]map[string]string) error {
	ns := p.Namespace
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "continuum"}
	if ns == "" {
		if _, err := c.cs.CoreV1().Namespaces().Create(ctx, p.checkSpec(Namespace(checkRun)).namespace(), dry); err != nil {
			return fmt.Errorf("platform kubernetes: namespace (dry run): %w", err)
		}
		ns = metav1.NamespaceDefault // the run's own does not exist yet; validation is the same
	}
	if err := waitServiceAccount(ctx, c, ns); err != nil {
		return err
	}
	// The grants are validated, but the pods are checked as the default ServiceAccount's: the
	// run's does not exist until the run, and admission refuses a pod of an account that does
	// not.
	if _, err := p.checkSpec(ns).access().create(ctx, c.cs, dry); err != nil {
		return fmt.Errorf("%w (dry run)", err)
	}
	for _, n := range topo.Nodes {
		s := p.checkSpec(ns)
		s.NodeSelector = place[n.Name]
		if _, err := c.cs.CoreV1().Pods(ns).Create(ctx, s.nodePod(n), dry); err != nil {
			return fmt.Errorf("platform kubernetes: node %s's pod (dry run): %w", n.Name, err)
		}
		if _, err := c.cs.CoreV1().Services(ns).Create(ctx, s.nodeService(n.Name), dry); err != nil {
			return fmt.Errorf("platform kubernetes: node %s's Service (dry run): %w", n.Name, err)
		}
	}
	if p.Fabric == nil && chaos.NeedsChaosMesh(topo, nil) != "" {
		if err := chaos.Sync(ctx, c.dyn, ns, checkRun, chaos.NewNetwork(topo).Objects(ns, checkRun, runLabels(checkRun)), true); err != nil {
			return fmt.Errorf("platform kubernetes: NetworkChaos (dry run): %w", err)
		}
	}
	return nil
}

// waitServiceAccount waits for namespace ns's default ServiceAccount, which the controller
// manager creates a moment after the namespace and without which no pod is admitted.
func waitServiceAccount(ctx context.Context, c *clients, ns string) error {
	for {
		_, err := c.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("platform kubernetes: namespace %s: %w", ns, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("platform kubernetes: namespace %s has no default ServiceAccount (is the controller manager running?)", ns)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// placement decides where each scenario node's pod may run, as a node selector: the cluster
// node NodeMap names, else the nodes labelled continuum.io/node=<scenario node>, else the
// cluster's only node, or its only schedulable node. Several scenario nodes may share a cluster node.
func (p Provider) placement(ctx context.Context, c *clients, topo *platform.Topology) (map[string]map[string]string, error) {
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("platform kubernetes: listing the cluster's nodes: %w", err)
	}
	return placement(list.Items, topo.NodeNames(), p.NodeMap)
}

func placement(nodes []corev1.Node, scenario []string, nodeMap map[string]string) (map[string]map[string]string, error) {
	hostname := func(n *corev1.Node) map[string]string {
		h := n.Labels[corev1.LabelHostname]
		if h == "" {
			h = n.Name
		}
		return map[string]string{corev1.LabelHostname: h}
	}
	var names, schedulable []string
	for i := range nodes {
		names = append(names, nodes[i].Name)
		if isSchedulable(&nodes[i]) {
			schedulable = append(schedulable, nodes[i].Name)
		}
	}
	sort.Strings(names)
	out := map[string]map[string]string{}
	for _, s := range scenario {
		if want, ok := nodeMap[s]; ok {
			i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == want })
			if i < 0 {
				return nil, fmt.Errorf("platform kubernetes: node map puts %s on cluster node %q, which does not exist (nodes: %s)", s, want, strings.Join(names, ", "))
			}
			out[s] = hostname(&nodes[i])
			continue
		}
		if slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Labels[LabelNode] == s }) {
			out[s] = map[string]string{LabelNode: s}
			continue
		}
		if len(nodes) == 1 || len(schedulable) == 1 {
			only := nodes[0].Name
			if len(nodes) > 1 {
				only = schedulable[0]
			}
			i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == only })
			out[s] = hostname(&nodes[i])
			continue
		}
		return nil, fmt.Errorf("platform kubernetes: no cluster node for scenario node %s: label one (kubectl label node NODE %s=%s) or map it (--node-map %s=NODE); cluster nodes: %s",
			s, LabelNode, s, s, strings.Join(names, ", "))
	}
	return out, nil
}

// isSchedulable: not cordoned and without a taint that keeps ordinary pods off for good (the
// node.kubernetes.io/ taints of a node's conditions, such as not-ready while it starts, come and
// go by themselves).
func isSchedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			continue
		}
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// Up brings the topology up as pods of the cluster and returns once every node pod runs and its
// agent answers. On error it removes what it created.
func (p Provider) Up(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
	if cfg.Dir == "" || !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("platform kubernetes: the run's results directory must be an absolute path (got %q)", cfg.Dir)
	}
	c, err := p.connect()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := p.requireChaosMesh(ctx, c, cfg.Topology, nil); err != nil {
		return nil, err
	}
	if p.Fabric != nil && len(p.NodeMap) > 0 {
		return nil, errNodeMapOnFabric
	}
	place, err := p.placement(ctx, c, cfg.Topology)
	if err != nil {
		return nil, err
	}
	ns := p.Namespace
	if ns == "" {
		ns = Namespace(cfg.Name)
	}
	run := labelValue(cfg.Name)
	pf := &Platform{c: c, log: log, cfg: cfg, run: run, ns: ns, ownNS: p.Namespace == "",
		spec:  podSpec{Run: run, Namespace: ns, Image: p.image(), PullPolicy: p.pullPolicy(), RunDir: cfg.Dir},
		nodes: map[string]*nodePod{}, insts: map[string]runInstance{}, services: map[string]bool{},
		redirects: map[string]map[int]string{}, helpers: map[string]bool{}, place: place, images: map[string]string{},
		containerd: p.Containerd, paths: clonePaths()}
	if p.Fabric != nil {
		dir := p.Fabric.StateDir
		if dir == "" {
			dir = testbed.DefaultStateDir()
		}
		fl, err := openFabricLinks(*p.Fabric, p.fabricClient(), cfg.Topology, filepath.Join(dir, p.Fabric.Testbed))
		if err != nil {
			return nil, err
		}
		pf.links, pf.fabric = fl, fl
	} else {
		pf.links = newChaosLinks(c, ns, run, cfg.Topology)
	}
	pf.ctx, pf.cancel = context.WithCancel(context.Background())
	if err := pf.up(ctx, place, p.readyTimeout()); err != nil {
		_ = pf.Down()
		return nil, err
	}
	return pf, nil
}

func (p Provider) readyTimeout() time.Duration {
	if p.ReadyTimeout > 0 {
		return p.ReadyTimeout
	}
	return 3 * time.Minute
}

// Cleanup deletes what runs left behind when their runner could not (a crash, a kill -9): the
// namespaces labelled continuum.io/run=<run>, and in Namespace the pods, Services and
// NetworkChaos objects with that label. run "all" means every run's. It returns what it deleted.
func (p Provider) Cleanup(ctx context.Context, run string) ([]string, error) {
	c, err := p.connect()
	if err != nil {
		return nil, err
	}
	sel := LabelManagedBy + "=" + ManagedBy
	if run != "all" {
		sel += "," + LabelRun + "=" + labelValue(run)
	}
	var deleted []string
	var errs []error
	if p.Namespace == "" {
		list, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, err
		}
		for _, ns := range list.Items {
			if err := c.cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			deleted = append(deleted, "namespace/"+ns.Name)
			// Its run's grants outside it (a run in a namespace of its own has them).
			grants, err := deleteAccess(ctx, c.cs, ns.Name, ns.Labels[LabelRun], true)
			deleted = append(deleted, grants...)
			errs = append(errs, err)
		}
		return deleted, errors.Join(errs...)
	}
	ns := p.Namespace
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, o := range pods.Items {
		deleted = append(deleted, "pod/"+o.Name)
	}
	svcs, err := c.cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, o := range svcs.Items {
		if err := c.cs.CoreV1().Services(ns).Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
		deleted = append(deleted, "service/"+o.Name)
	}
	if err := c.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
		errs = append(errs, err)
	}
	if ok, _ := chaos.Installed(ctx, c.cs.Discovery()); ok {
		runs := map[string]bool{}
		for _, o := range pods.Items {
			runs[o.Labels[LabelRun]] = true
		}
		for r := range runs {
			if err := chaos.DeleteAll(ctx, c.dyn, ns, r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return deleted, errors.Join(errs...)
}
