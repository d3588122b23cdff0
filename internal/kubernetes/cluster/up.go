package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/testbed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Cluster is a running cluster, owned by the process that called Up.
type Cluster struct {
	cfg   Config
	p     paths
	st    *state
	log   *slog.Logger
	nodes []nodeConfig // the one-node cluster's host node, or a multi-node cluster's nodes
	// A multi-node cluster's testbed, the node its store and control plane run in, and the
	// forwarder that lets the host's clients reach the API server there; a one-node cluster has
	// none of them.
	tb     *testbed.Testbed
	cpNode nodeConfig
	fwd    *forwarder
	lock   *os.File // the state directory's (lockStateDir)

	store        *proc
	storeURL     string
	storeMetrics string // its health endpoint's base URL
	cp           *controlplane.ControlPlane
	procs        []*proc // node daemons, in start order: containerd, coredns, kubelet, kube-proxy
	client       kubernetes.Interface
	down         chan struct{} // closed by stopAll
	downOnce     sync.Once
	restartMu    sync.Mutex // one RestartNode at a time; Down waits for the one under way
	ctl          *control   // a multi-node cluster's control socket
}

// Up brings a cluster up in cfg.StateDir and returns once its Nodes are Ready. On error it
// leaves nothing behind. The caller keeps the cluster running until it calls Down.
//
// A multi-node cluster (cfg.Topology or cfg.Nodes) is a testbed of the topology, hosted by this
// process, with a Kubernetes node in each testbed node: the store and the control plane run in
// one of them; every node runs its containerd, CoreDNS, kubelet and kube-proxy as the testbed's
// processes (their network namespace, the host's mount namespace for containerd and kubelet,
// and a cgroup below the node's, whose limits they share with the node's pods), and its pods on
// a bridge in the node's namespace, on the node's /24 of the pod CIDR, which the fabric routes
// to the node. So every packet between nodes (pods', kubelets' to the API server) takes the
// emulated links, and the testbed's faults (`continuum testbed fault --name <testbed>`) are the
// cluster's.
func Up(ctx context.Context, cfg Config, log *slog.Logger) (_ *Cluster, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("cluster up: must run as root (containerd, kubelet and the pod network need it)")
	}
	if err := checkBinaries(cfg); err != nil {
		return nil, err
	}
	p := paths{cfg.StateDir}
	old, err := readState(cfg.StateDir)
	switch {
	case errors.Is(err, errNotRunning):
	case err != nil:
		return nil, fmt.Errorf("a previous cluster's state: %w", err)
	default:
		if old.alive() {
			return nil, fmt.Errorf("a cluster is already up in %s (supervisor pid %d); see `continuum cluster status` or remove it with `continuum cluster down`", cfg.StateDir, old.PID)
		}
		log.Info("removing what a cluster that is no longer running left behind", "state_dir", cfg.StateDir)
		if err := sweep(ctx, old); err != nil {
			return nil, fmt.Errorf("remove the previous cluster in %s: %w", cfg.StateDir, err)
		}
	}
	var pl *clusterPlan
	if cfg.multiNode() {
		if cfg.TestbedStateDir == "" {
			cfg.TestbedStateDir = testbed.DefaultStateDir()
		}
		if pl, err = cfg.plan(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, err
	}
	if err := checkStateDir(cfg.StateDir); err != nil {
		return nil, err
	}
	// One Up per state directory at a time: two would plan the same testbed, and the one that
	// failed would sweep what the other made. Taken before state.json is written, held by the
	// supervisor while the cluster runs (Down, or the process's end, lets it go).
	lock, err := lockStateDir(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	st := &state{PID: os.Getpid(), Started: time.Now().UTC(), Config: cfg}
	if st.Sysctls, err = readSysctls(); err != nil {
		return nil, err
	}
	if pl != nil {
		// A cluster of testbed nodes changes no firewall rule and no forwarding setting in the
		// host's namespace (kube-proxy, the CNI plugins and the bridges live in the nodes'): it
		// records none, so that Down cannot take away chains or a setting others made while it
		// ran. kubelet's tunables are the kernel's, not a namespace's: they stay recorded.
		delete(st.Sysctls, ipForward)
	} else {
		if st.Chains, err = iptablesChains(); err != nil {
			return nil, err
		}
		if st.Tables, err = nftTables(); err != nil {
			return nil, err
		}
	}
	st.Created = missingDirs(kubeletHostDirs)
	c := &Cluster{cfg: cfg, p: p, st: st, log: log, down: make(chan struct{}), lock: lock}
	if pl == nil {
		c.nodes = []nodeConfig{cfg.hostNode()}
	} else {
		c.nodes = pl.nodes
		st.Testbed = &testbedRef{Name: pl.testbed, StateDir: cfg.TestbedStateDir}
		st.Nodes, st.ControlPlane = pl.nodes, pl.controlPlane
		for _, n := range pl.nodes {
			st.Created = append(st.Created, missingCgroups(n.CgroupRoot)...)
			if n.Name == pl.controlPlane {
				c.cpNode = n
			}
		}
	}
	if err := writeState(p, st); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.stopAll()
			if serr := sweep(context.WithoutCancel(ctx), st); serr != nil {
				err = errors.Join(err, fmt.Errorf("clean up: %w", serr))
			}
		}
	}()
	type step struct {
		what string
		do   func(context.Context) error
	}
	var steps []step
	if pl != nil {
		steps = append(steps, step{"testbed " + pl.testbed, func(context.Context) error { return c.upTestbed(pl.topo) }})
	}
	steps = append(steps,
		step{"cgroups", c.makeCgroups},
		step{"pod network bridge", c.setupBridges},
		step{"store (" + cfg.Store + ")", c.startStore},
		step{"control plane", c.startControlPlane},
	)
	if pl != nil {
		steps = append(steps, step{"API server forwarder", c.forwardAPI})
	}
	steps = append(steps,
		step{"containerd", c.startContainerd},
		step{"images", c.importImages},
		step{"CoreDNS", c.startCoreDNS},
		step{"kubelet", c.startKubelet},
		step{"kube-proxy", c.startKubeProxy},
		step{"storage", c.setupStorage},
	)
	for _, s := range steps {
		start := time.Now()
		if err := s.do(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", s.what, err)
		}
		log.Info("up", "part", s.what, "took", time.Since(start).Round(time.Millisecond))
	}
	if pl != nil {
		if c.ctl, err = c.serveControl(); err != nil {
			return nil, err
		}
	}
	st.Ready = true
	if err := writeState(p, st); err != nil {
		return nil, err
	}
	return c, nil
}

// upTestbed brings up the testbed of a multi-node cluster: the nodes' namespaces, the fabric
// with each node's pod CIDR behind it, and each node's routes to the others' pod CIDRs out of
// its eth0 (testbed.Options.NodePrefixes), so that a node needs no route of its own for the
// cluster's pod CIDR: the testbed routes every other node's /24, the node's own is on its
// bridge, and what is in neither (no node's) is unreachable at once rather than dropped by
// the fabric.
func (c *Cluster) upTestbed(topo *testbed.Topology) error {
	prefixes := map[string][]netip.Prefix{}
	for _, n := range c.nodes {
		prefixes[n.Name] = []netip.Prefix{n.PodCIDR}
	}
	tb, err := testbed.Up(topo, testbed.Options{Name: c.st.Testbed.Name, StateDir: c.st.Testbed.StateDir,
		Launcher: c.cfg.ContinuumBin, Logger: c.log, NodePrefixes: prefixes})
	if err != nil {
		return err
	}
	c.tb = tb
	// Each kubelet's cgroup root is <node>/pods (nodeCgroupRoot), which a testbed process of
	// that name would share: none may take it.
	return tb.Reserve(podsCgroup)
}

// Kubeconfig is the administrator's kubeconfig file: of a multi-node cluster, with the
// host's forwarder to the API server as its server.
func (c *Cluster) Kubeconfig() string { return c.st.Kubeconfig }

// Testbed is the testbed a multi-node cluster's nodes live in; nil for the one-node cluster.
func (c *Cluster) Testbed() *testbed.Testbed { return c.tb }

// Failed returns a channel that yields what ends the cluster while it runs: for the one-node
// cluster, the first of its daemons to exit; for a multi-node cluster, the testbed's shutdown
// (`continuum testbed down` asked the testbed's host, this process, to shut it down), its
// daemons' exits being their nodes' failures, which it lives through (restart.go). Call it once.
func (c *Cluster) Failed() <-chan error {
	ch := make(chan error, 1)
	send := func(err error) {
		select {
		case ch <- err:
		default:
		}
	}
	if c.tb == nil {
		for _, pr := range append([]*proc{c.store}, c.procs...) {
			go func() {
				<-pr.exitedC()
				send(pr.failure())
			}()
		}
		return ch
	}
	go c.watchNodes(time.Second)
	go func() {
		select {
		case <-c.tb.ShutdownRequested():
			send(fmt.Errorf("testbed %s was asked to shut down (continuum testbed down)", c.tb.Name))
		case <-c.down:
		}
	}()
	return ch
}

// Down stops the cluster in order (kubelets first, so that they restart nothing; then the pods,
// the node daemons, the control plane, the store and the testbed) and removes everything Up
// made.
func (c *Cluster) Down(ctx context.Context) error {
	c.downOnce.Do(func() { close(c.down) })
	c.closeControl()
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	for _, pr := range c.procs {
		if pr.role == "kubelet" {
			pr.stop(10 * time.Second)
		}
	}
	var errs []error
	for _, n := range c.nodes {
		if err := removePods(ctx, n.paths().containerdSock()); err != nil {
			errs = append(errs, fmt.Errorf("remove pods of node %s: %w", n.Name, err))
		}
	}
	c.stopAll()
	if err := sweep(ctx, c.st); err != nil {
		errs = append(errs, err)
	}
	c.lock.Close()
	return errors.Join(errs...)
}

// checkStateDir refuses a state directory someone but root could change: the cluster keeps its
// keys there, and a multi-node cluster's supervisor root's control socket, which such a one
// could replace (by a symbolic link, or a socket of their own that root's CLI would talk to).
func checkStateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("state dir %s is not a directory (a symbolic link?): give the directory itself", dir)
	case ok && st.Uid != 0:
		return fmt.Errorf("state dir %s belongs to uid %d, not root: the cluster keeps its keys and root's control socket there (remove it, or give another --state-dir)", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("state dir %s is writable by others than its owner (%s): the cluster keeps its keys and root's control socket there (chmod go-w, or give another --state-dir)", dir, fi.Mode().Perm())
	}
	return nil
}

// lockStateDir takes the state directory's lock (flock on the directory), or says that another
// `continuum cluster up` holds it.
func lockStateDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another `continuum cluster up` is bringing a cluster up in %s or runs it (see `continuum cluster status --state-dir %s`)", dir, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}

// stopAll stops every process of the cluster, last started first, and takes the testbed down.
func (c *Cluster) stopAll() {
	c.downOnce.Do(func() { close(c.down) })
	c.closeControl()
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(10 * time.Second)
	}
	if c.fwd != nil {
		c.fwd.Close()
	}
	if c.cp != nil {
		c.cp.Stop()
	}
	if c.store != nil {
		c.store.stop(10 * time.Second)
	}
	if c.tb != nil {
		if err := c.tb.Down(); err != nil {
			c.log.Warn("testbed down (the sweep removes what is left)", "testbed", c.tb.Name, "err", err)
		}
	}
}

// closeControl stops the control server, if it runs.
func (c *Cluster) closeControl() {
	if c.ctl != nil {
		c.ctl.close()
		c.ctl = nil
	}
}

// startDaemon starts a node daemon: a host process for the one-node cluster, a process of its
// testbed node for a multi-node cluster (in the host's mount namespace if hostMounts).
func (c *Cluster) startDaemon(n nodeConfig, role string, argv, env []string, hostMounts bool) (*proc, error) {
	var pr *proc
	var err error
	if c.tb == nil {
		pr, err = startProc(c.p, role, argv, env)
	} else {
		pr, err = startNodeProc(c.tb, c.p, n, role, argv, env, hostMounts)
	}
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, pr)
	return pr, nil
}

// dialer opens connections from node n: in its namespace, or the host's for the one-node
// cluster (whose node is the host). Health checks of what listens on a node's loopback or
// bridge go through it.
func (c *Cluster) dialer(n nodeConfig) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.tb == nil {
		return (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return c.tb.Dial(ctx, n.Name, network, addr)
	}
}

// forNodes runs do for every node, in order, and stops at the first error, naming the node (of
// a multi-node cluster; the one-node cluster's errors read as before).
func (c *Cluster) forNodes(do func(n nodeConfig) error) error {
	for _, n := range c.nodes {
		if err := do(n); err != nil {
			if c.tb != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			return err
		}
	}
	return nil
}

// checkBinaries names every program the cluster needs that is missing, and where it comes from.
func checkBinaries(cfg Config) error {
	var missing []string
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "coredns"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			missing = append(missing, filepath.Join(cfg.BinDir, b))
		}
	}
	// The store's program, when it is not the continuum binary (etcd, from BinDir).
	if st, err := clusterstore.Lookup(cfg.Store); err == nil {
		if argv, err := st.Command(cfg.storeArgs("", "", "", "")); err == nil && len(argv) > 0 && argv[0] != cfg.ContinuumBin {
			if _, err := os.Stat(argv[0]); err != nil {
				missing = append(missing, argv[0])
			}
		}
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	for _, b := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, b)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %v: run `continuum setup kubernetes` (Kubernetes, CoreDNS and etcd are built into .tools/bin; containerd, runc and the CNI plugins are Debian packages)", missing)
	}
	return nil
}

// makeCgroups makes every node's cgroup root in every hierarchy (kubelet wants it in each it
// uses; the testbed makes a node's cgroup in four).
func (c *Cluster) makeCgroups(context.Context) error {
	return c.forNodes(func(n nodeConfig) error { return makeCgroups(n.CgroupRoot) })
}

// setupBridges makes every node's pod bridge, in its namespace.
func (c *Cluster) setupBridges(context.Context) error {
	return c.forNodes(func(n nodeConfig) error {
		if c.tb == nil {
			return setupBridge(n)
		}
		return c.tb.InNode(n.Name, func() error { return setupBridge(n) })
	})
}

// setupBridge creates node n's pod bridge with the gateway address before anything needs it,
// in the calling thread's network namespace, and turns forwarding on there: the API server of
// the one-node cluster advertises that address and every node's CoreDNS listens on it, both
// before the first pod (which is when the CNI bridge plugin would create it).
func setupBridge(n nodeConfig) error {
	gw := n.gateway()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: n.Bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("add bridge %s: %w", n.Bridge, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: gw.AsSlice(), Mask: net.CIDRMask(n.PodCIDR.Bits(), 32)}}
	if err := netlink.AddrAdd(br, addr); err != nil {
		return fmt.Errorf("address %s on %s: %w", addr, n.Bridge, err)
	}
	// A bridge whose address was not set takes the lowest of its ports' addresses, so it changes
	// as pods come and go; the pods' ARP entries for the gateway (where CoreDNS listens) then
	// point at an address the bridge no longer has, and DNS times out in every pod for seconds
	// after a pod is deleted. A fixed address (locally administered, from the gateway's IPv4)
	// stays.
	gw4 := gw.As4()
	if err := netlink.LinkSetHardwareAddr(br, net.HardwareAddr{0x02, 0x63, gw4[0], gw4[1], gw4[2], gw4[3]}); err != nil {
		return fmt.Errorf("address of bridge %s: %w", n.Bridge, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/"+ipForward, []byte("1\n"), 0o644)
}

// startContainerd starts every node's containerd with its config and waits until each answers.
func (c *Cluster) startContainerd(ctx context.Context) error {
	started := map[string]*proc{}
	if err := c.forNodes(func(n nodeConfig) error {
		conf := filepath.Join(n.paths().containerd(), "config.toml")
		if err := writeFile(conf, []byte(c.cfg.containerdConfig(n))); err != nil {
			return err
		}
		pr, err := c.startDaemon(n, "containerd", []string{"containerd", "--config", conf}, nil, true)
		started[n.Name] = pr
		return err
	}); err != nil {
		return err
	}
	return c.forNodes(func(n nodeConfig) error { return c.waitContainerd(ctx, n, started[n.Name]) })
}

// waitContainerd waits until node n's containerd answers, or its process pr exits.
func (c *Cluster) waitContainerd(ctx context.Context, n nodeConfig, pr *proc) error {
	return waitFor(ctx, "containerd", 60*time.Second, []*proc{pr}, func() error {
		return exec.CommandContext(ctx, "ctr", "--address", n.paths().containerdSock(), "version").Run()
	})
}

// importImages loads the OCI tarballs into every node's containerd, in its k8s.io namespace,
// where the CRI plugin (and so kubelet) finds them.
func (c *Cluster) importImages(ctx context.Context) error {
	return c.forNodes(func(n nodeConfig) error {
		sock := n.paths().containerdSock()
		for _, img := range c.cfg.Images {
			out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "-n", "k8s.io",
				"images", "import", "--no-unpack=false", img).CombinedOutput()
			if err != nil {
				return fmt.Errorf("import %s: %v: %s", img, err, out)
			}
		}
		out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "-n", "k8s.io",
			"images", "ls", "-q").Output()
		if err != nil {
			return err
		}
		if !containsLine(string(out), c.cfg.SandboxImage) {
			return fmt.Errorf("sandbox image %s is not among the imported images:\n%s", c.cfg.SandboxImage, out)
		}
		return nil
	})
}

// startCoreDNS serves the cluster's names on every node's bridge address and waits until each
// answers, asked from inside its node.
func (c *Cluster) startCoreDNS(ctx context.Context) error {
	kc, err := c.cp.IssueKubeconfig("system:coredns", nil, "")
	if err != nil {
		return err
	}
	if err := c.grantCoreDNS(ctx); err != nil {
		return err
	}
	return c.forNodes(func(n nodeConfig) error {
		conf := filepath.Join(n.paths().coreDNS(), "Corefile")
		if err := writeFile(conf, []byte(c.cfg.corefile(n, kc))); err != nil {
			return err
		}
		pr, err := c.startDaemon(n, "coredns", []string{filepath.Join(c.cfg.BinDir, "coredns"), "-conf", conf}, nil, false)
		if err != nil {
			return err
		}
		addr := net.JoinHostPort(n.gateway().String(), "53")
		dial := c.dialer(n)
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, "udp", addr)
		}}
		name := "kubernetes.default.svc." + c.cfg.ClusterDomain
		return waitFor(ctx, "CoreDNS", 60*time.Second, []*proc{pr}, func() error {
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := r.LookupHost(qctx, name)
			return err
		})
	})
}

// startKubelet starts every node's kubelet and waits until every Node is Ready.
func (c *Cluster) startKubelet(ctx context.Context) error {
	started := map[string]*proc{}
	if err := c.forNodes(func(n nodeConfig) error {
		kc, err := c.cp.IssueKubeconfig("system:node:"+n.Name, []string{"system:nodes"}, "")
		if err != nil {
			return err
		}
		conf := filepath.Join(n.paths().kubelet(), "config.yaml")
		b, err := c.cfg.kubeletConfig(n, c.cp.CAFile())
		if err != nil {
			return err
		}
		if err := writeFile(conf, b); err != nil {
			return err
		}
		cni, err := c.cfg.cniConfig(n)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(n.paths().cniConf(), "10-continuum.conflist"), cni); err != nil {
			return err
		}
		pr, err := c.startDaemon(n, "kubelet", c.cfg.kubeletArgs(n, conf, kc), []string{"PATH=" + os.Getenv("PATH") + ":" + cniBinDir}, true)
		started[n.Name] = pr
		return err
	}); err != nil {
		return err
	}
	return c.forNodes(func(n nodeConfig) error {
		return waitFor(ctx, "Node "+n.Name+" Ready", 3*time.Minute, []*proc{started[n.Name]}, func() error {
			return nodeReady(ctx, c.client, n.Name)
		})
	})
}

// nodeReady is nil once Node name is Ready, else what its Ready condition says.
func nodeReady(ctx context.Context, client kubernetes.Interface, name string) error {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	node, err := client.CoreV1().Nodes().Get(qctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("Ready=%s: %s", cond.Status, cond.Message)
		}
	}
	return errors.New("no Ready condition yet")
}

// startKubeProxy starts every node's kube-proxy and waits for its health endpoint, asked from
// inside its node.
func (c *Cluster) startKubeProxy(ctx context.Context) error {
	kc, err := c.cp.IssueKubeconfig("system:kube-proxy", nil, "")
	if err != nil {
		return err
	}
	return c.forNodes(func(n nodeConfig) error {
		conf := filepath.Join(n.paths().kubeProxy(), "config.yaml")
		b, err := c.cfg.kubeProxyConfig(n, kc)
		if err != nil {
			return err
		}
		if err := writeFile(conf, b); err != nil {
			return err
		}
		pr, err := c.startDaemon(n, "kube-proxy", []string{filepath.Join(c.cfg.BinDir, "kube-proxy"), "--config", conf}, nil, false)
		if err != nil {
			return err
		}
		return waitFor(ctx, "kube-proxy", 60*time.Second, []*proc{pr}, func() error {
			return httpOK(ctx, c.dialer(n), "http://127.0.0.1:10256/healthz")
		})
	})
}

// ContainerdSocket is the one-node cluster's containerd socket: images imported through it
// (into its k8s.io namespace) are the kubelet's. A multi-node cluster has one per node: "".
func (c *Cluster) ContainerdSocket() string {
	if c.tb != nil {
		return ""
	}
	return c.nodes[0].paths().containerdSock()
}

// ContainerdFor is the containerd socket of the running one-node cluster whose admin
// kubeconfig is kubeconfig (a cluster `continuum cluster up` started on this host), or "" when
// kubeconfig is not one: `run --platform kubernetes` imports local images through it without
// being told. A multi-node cluster has a containerd per node, which this one socket cannot
// name: "".
func ContainerdFor(kubeconfig string) string {
	dir, st := clusterOf(kubeconfig)
	if st == nil || st.Testbed != nil {
		return ""
	}
	return paths{dir}.host().containerdSock()
}

// FabricCluster is what a runner on this host needs of a multi-node cluster to run a scenario on
// its testbed's fabric: the testbed (its name and state directory, as `continuum testbed fault
// --name` finds it) and the nodes' kubelet cgroup roots, under which it finds the pods'
// processes (PodProcesses).
type FabricCluster struct {
	Testbed, TestbedStateDir string
	CgroupRoots              map[string]string // by node name
}

// FabricFor is the running multi-node cluster whose admin kubeconfig is kubeconfig (a cluster
// `continuum cluster up --topology` started on this host); ok false for any other kubeconfig.
// `run --platform kubernetes` emulates a scenario's links on its fabric.
func FabricFor(kubeconfig string) (_ *FabricCluster, ok bool) {
	_, st := clusterOf(kubeconfig)
	if st == nil || st.Testbed == nil || checkStateDir(st.Testbed.StateDir) != nil {
		return nil, false
	}
	fc := &FabricCluster{Testbed: st.Testbed.Name, TestbedStateDir: st.Testbed.StateDir, CgroupRoots: map[string]string{}}
	for _, n := range st.Nodes {
		fc.CgroupRoots[n.Name] = n.CgroupRoot
	}
	return fc, true
}

// clusterOf finds the running cluster whose admin kubeconfig is kubeconfig: its state directory
// holds the kubeconfig, or one of its directories up to three levels below does. The walk stops
// at the first state.json it meets, which must be in a directory only root may change
// (checkStateDir): a state.json planted in a directory others may write names no cluster.
func clusterOf(kubeconfig string) (string, *state) {
	abs, err := filepath.Abs(kubeconfig)
	if kubeconfig == "" || err != nil {
		return "", nil
	}
	for dir, i := filepath.Dir(abs), 0; i < 4 && dir != "/"; dir, i = filepath.Dir(dir), i+1 {
		if _, err := os.Lstat(paths{dir}.state()); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if checkStateDir(dir) != nil {
			return "", nil
		}
		st, err := readState(dir)
		if err != nil || st.Kubeconfig != abs || !st.alive() {
			return "", nil
		}
		return dir, st
	}
	return "", nil
}
