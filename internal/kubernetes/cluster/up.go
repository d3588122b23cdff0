package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Cluster is a running one-node cluster, owned by the process that called Up.
type Cluster struct {
	cfg      Config
	p        paths
	st       *state
	log      *slog.Logger
	store    *proc
	storeURL string
	cp       *controlplane.ControlPlane
	node     nodeConfig
	procs    []*proc // node daemons, in start order: containerd, coredns, kubelet, kube-proxy
	client   kubernetes.Interface
}

// Up brings a cluster up in cfg.StateDir and returns once its Node is Ready. On error it leaves
// nothing behind. The caller keeps the cluster running until it calls Down.
func Up(ctx context.Context, cfg Config, log *slog.Logger) (_ *Cluster, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.multiNode() {
		return nil, errors.New("cluster up: a cluster of several nodes (a topology, a node count) is not built yet")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("cluster up: must run as root (containerd, kubelet and the pod network need it)")
	}
	if err := checkBinaries(cfg); err != nil {
		return nil, err
	}
	p := paths{cfg.StateDir}
	if old, err := readState(cfg.StateDir); err == nil {
		if old.alive() {
			return nil, fmt.Errorf("a cluster is already up in %s (supervisor pid %d); see `continuum cluster status` or remove it with `continuum cluster down`", cfg.StateDir, old.PID)
		}
		log.Info("removing what a cluster that is no longer running left behind", "state_dir", cfg.StateDir)
		if err := sweep(ctx, old); err != nil {
			return nil, fmt.Errorf("remove the previous cluster in %s: %w", cfg.StateDir, err)
		}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, err
	}
	st := &state{PID: os.Getpid(), Started: time.Now().UTC(), Config: cfg}
	if st.Sysctls, err = readSysctls(); err != nil {
		return nil, err
	}
	if st.Chains, err = iptablesChains(); err != nil {
		return nil, err
	}
	if st.Tables, err = nftTables(); err != nil {
		return nil, err
	}
	if err := writeState(p, st); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, p: p, st: st, log: log, node: cfg.hostNode()}
	defer func() {
		if err != nil {
			c.stopAll()
			if serr := sweep(context.WithoutCancel(ctx), st); serr != nil {
				err = errors.Join(err, fmt.Errorf("clean up: %w", serr))
			}
		}
	}()
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"cgroups", func(context.Context) error { return makeCgroups(c.node.CgroupRoot) }},
		{"pod network bridge", c.setupBridge},
		{"store (" + cfg.Store + ")", c.startStore},
		{"control plane", c.startControlPlane},
		{"containerd", c.startContainerd},
		{"images", c.importImages},
		{"CoreDNS", c.startCoreDNS},
		{"kubelet", c.startKubelet},
		{"kube-proxy", c.startKubeProxy},
		{"storage", c.setupStorage},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.do(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", s.what, err)
		}
		log.Info("up", "part", s.what, "took", time.Since(start).Round(time.Millisecond))
	}
	st.Ready = true
	if err := writeState(p, st); err != nil {
		return nil, err
	}
	return c, nil
}

// Kubeconfig is the administrator's kubeconfig file.
func (c *Cluster) Kubeconfig() string { return c.cp.Kubeconfig() }

// Failed returns a channel that yields the first daemon that exits while the cluster runs.
func (c *Cluster) Failed() <-chan error {
	ch := make(chan error, 1)
	all := append([]*proc{c.store}, c.procs...)
	for _, pr := range all {
		go func() {
			<-pr.done
			select {
			case ch <- pr.failure():
			default:
			}
		}()
	}
	return ch
}

// Down stops the cluster in order (kubelet first, so that it restarts nothing; then the pods,
// the node daemons, the control plane and the store) and removes everything Up made.
func (c *Cluster) Down(ctx context.Context) error {
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == "kubelet" {
			c.procs[i].stop(10 * time.Second)
		}
	}
	var errs []error
	if err := removePods(ctx, c.node.paths().containerdSock()); err != nil {
		errs = append(errs, fmt.Errorf("remove pods: %w", err))
	}
	c.stopAll()
	if err := sweep(ctx, c.st); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Cluster) stopAll() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(10 * time.Second)
	}
	if c.cp != nil {
		c.cp.Stop()
	}
	if c.store != nil {
		c.store.stop(10 * time.Second)
	}
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

// setupBridge creates the pods' bridge with the gateway address before anything needs it: the
// API server advertises that address and CoreDNS listens on it, both before the first pod
// (which is when the CNI bridge plugin would create it).
func (c *Cluster) setupBridge(context.Context) error {
	n := c.node
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
	return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644)
}

// startContainerd starts containerd with the cluster's config and waits until it answers.
func (c *Cluster) startContainerd(ctx context.Context) error {
	np := c.node.paths()
	conf := filepath.Join(np.containerd(), "config.toml")
	if err := writeFile(conf, []byte(c.cfg.containerdConfig(c.node))); err != nil {
		return err
	}
	pr, err := startProc(c.p, "containerd", []string{"containerd", "--config", conf}, nil)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, pr)
	return waitFor("containerd", 60*time.Second, []*proc{pr}, func() error {
		return exec.CommandContext(ctx, "ctr", "--address", np.containerdSock(), "version").Run()
	})
}

// importImages loads the OCI tarballs into containerd's k8s.io namespace, where the CRI plugin
// (and so kubelet) finds them.
func (c *Cluster) importImages(ctx context.Context) error {
	sock := c.node.paths().containerdSock()
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
}

// startCoreDNS serves the cluster's names on the bridge address.
func (c *Cluster) startCoreDNS(ctx context.Context) error {
	kc, err := c.cp.IssueKubeconfig("system:coredns", nil, "")
	if err != nil {
		return err
	}
	if err := c.grantCoreDNS(ctx); err != nil {
		return err
	}
	conf := filepath.Join(c.node.paths().coreDNS(), "Corefile")
	if err := writeFile(conf, []byte(c.cfg.corefile(c.node, kc))); err != nil {
		return err
	}
	pr, err := startProc(c.p, "coredns", []string{filepath.Join(c.cfg.BinDir, "coredns"), "-conf", conf}, nil)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, pr)
	addr := net.JoinHostPort(c.node.gateway().String(), "53")
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}
	name := "kubernetes.default.svc." + c.cfg.ClusterDomain
	return waitFor("CoreDNS", 60*time.Second, []*proc{pr}, func() error {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := r.LookupHost(qctx, name)
		return err
	})
}

// startKubelet starts kubelet and waits until its Node is Ready.
func (c *Cluster) startKubelet(ctx context.Context) error {
	n := c.node
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
	pr, err := startProc(c.p, "kubelet", c.cfg.kubeletArgs(n, conf, kc), []string{"PATH=" + os.Getenv("PATH") + ":" + cniBinDir})
	if err != nil {
		return err
	}
	c.procs = append(c.procs, pr)
	return waitFor("Node "+n.Name+" Ready", 3*time.Minute, []*proc{pr}, func() error {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		node, err := c.client.CoreV1().Nodes().Get(qctx, n.Name, metav1.GetOptions{})
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
	})
}

// startKubeProxy starts kube-proxy and waits for its health endpoint.
func (c *Cluster) startKubeProxy(ctx context.Context) error {
	kc, err := c.cp.IssueKubeconfig("system:kube-proxy", nil, "")
	if err != nil {
		return err
	}
	conf := filepath.Join(c.node.paths().kubeProxy(), "config.yaml")
	b, err := c.cfg.kubeProxyConfig(c.node, kc)
	if err != nil {
		return err
	}
	if err := writeFile(conf, b); err != nil {
		return err
	}
	pr, err := startProc(c.p, "kube-proxy", []string{filepath.Join(c.cfg.BinDir, "kube-proxy"), "--config", conf}, nil)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, pr)
	return waitFor("kube-proxy", 60*time.Second, []*proc{pr}, func() error {
		return httpOK(ctx, "http://127.0.0.1:10256/healthz")
	})
}

// ContainerdSocket is the cluster's containerd socket: images imported through it (into its
// k8s.io namespace) are the kubelet's.
func (c *Cluster) ContainerdSocket() string { return c.node.paths().containerdSock() }

// ContainerdFor is the containerd socket of the running cluster whose admin kubeconfig is
// kubeconfig (a cluster `continuum cluster up` started on this host), or "" when kubeconfig is
// not one: `run --platform kubernetes` imports local images through it without being told.
func ContainerdFor(kubeconfig string) string {
	abs, err := filepath.Abs(kubeconfig)
	if kubeconfig == "" || err != nil {
		return ""
	}
	for dir, i := filepath.Dir(abs), 0; i < 4 && dir != "/"; dir, i = filepath.Dir(dir), i+1 {
		st, err := readState(dir)
		if err != nil {
			continue
		}
		if st.Kubeconfig == abs && st.alive() {
			return paths{dir}.host().containerdSock()
		}
		return ""
	}
	return ""
}
