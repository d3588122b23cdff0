package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
)

// apiServerPort is where a multi-node cluster's API server listens, on its node's address (the
// node's namespace is the cluster's own: the usual port is free there).
const apiServerPort = 6443

// startControlPlane starts kube-apiserver, kube-controller-manager and kube-scheduler on the
// store. The one-node cluster's API server listens on every address and advertises the
// bridge's: pods reach it through the kubernetes Service, whose endpoint is that address. A
// multi-node cluster's runs in the control plane's node (its namespace and a cgroup of its
// own below the node's, as the testbed's processes) and listens on and advertises the node's
// address: the kubelets, kube-proxies and CoreDNSes of the other nodes, and pods through the
// kubernetes Service, reach it across the emulated links.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	cfg := controlplane.DefaultConfig()
	cfg.Dir = c.p.controlPlane()
	cfg.EtcdServers = []string{c.storeURL}
	cfg.BinDir = c.cfg.BinDir
	cfg.ControllerManager, cfg.Scheduler = true, true
	cfg.ServiceClusterIPRange = c.cfg.ServiceCIDR
	if c.tb == nil {
		// The API server listens on every address and advertises the bridge's, so that the
		// kubernetes Service's endpoint is one pods reach; the lease reconciler keeps it.
		cfg.APIServerArgs = []string{"--bind-address=0.0.0.0", "--advertise-address=" + gateway(c.cfg.PodCIDR).String(),
			"--endpoint-reconciler-type=lease"}
	} else {
		node := c.cpNode.Name
		cfg.Address = c.cpNode.IP.String()
		cfg.APIServerPort = apiServerPort
		cfg.APIServerArgs = []string{"--endpoint-reconciler-type=lease"}
		cfg.Wrap = func(argv []string) ([]string, error) {
			return c.tb.WrapArgv(node, node+"."+filepath.Base(argv[0]), false, argv)
		}
		cfg.Dial = c.dialer(c.cpNode)
	}
	if d := c.cfg.NodeGracePeriod; d > 0 {
		cfg.ControllerManagerArgs = append(cfg.ControllerManagerArgs, "--node-monitor-grace-period="+d.String())
	}
	if d := c.cfg.EvictionTimeout; d > 0 {
		s := strconv.Itoa(int(d / time.Second))
		cfg.APIServerArgs = append(cfg.APIServerArgs, "--default-not-ready-toleration-seconds="+s, "--default-unreachable-toleration-seconds="+s)
	}
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		return err
	}
	c.cp = cp
	c.client = cp.Client()
	if c.tb != nil {
		return nil // the host's kubeconfig is forwardAPI's
	}
	c.st.Kubeconfig = cp.Kubeconfig()
	if err := writeState(c.p, c.st); err != nil {
		return fmt.Errorf("record the kubeconfig: %w", err)
	}
	return nil
}

// forwardAPI lets the host's clients reach a multi-node cluster's API server, in its node's
// namespace: a forwarder on a free port of the host's loopback, and the admin kubeconfig
// (admin.kubeconfig in the state directory) with it as its server. The serving certificate is
// valid for 127.0.0.1. The control plane's own clients (c.client) dial into the node.
func (c *Cluster) forwardAPI(ctx context.Context) error {
	f, err := startForwarder("127.0.0.1:0", strings.TrimPrefix(c.cp.Server(), "https://"), c.dialer(c.cpNode), c.log)
	if err != nil {
		return err
	}
	c.fwd = f
	kc, err := clientcmd.LoadFromFile(c.cp.Kubeconfig())
	if err != nil {
		return err
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + f.Addr()
	}
	path := c.p.join("admin.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	client, err := clientFor(path)
	if err != nil {
		return err
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("the API server through the forwarder on %s: %w", f.Addr(), err)
	}
	c.st.Kubeconfig, c.st.APIForward = path, f.Addr()
	if err := writeState(c.p, c.st); err != nil {
		return fmt.Errorf("record the kubeconfig: %w", err)
	}
	return nil
}

// tierLabel is the node label topologies mark a node's place in the continuum with
// (scenarios/proxy/topology.yaml: tier cloud, near-edge, far-edge, device; docs/testbed.md's
// example: tier edge), and cloudTier the value of the tier the control plane belongs in.
const (
	tierLabel = "tier"
	cloudTier = "cloud"
)

// controlPlaneNode chooses the node the control plane (store, API server, controller manager,
// scheduler) runs in: the one named by explicit (`--control-plane`), an error if no node has
// that name; else the first whose tier label is cloud; else the node named cloud (three-tier.yaml
// labels no node); else the first node. The control plane sits where a real cluster's would, in
// the cloud, so the edge's kubelets reach it across the emulated links.
func controlPlaneNode(nodes []nodeSpec, explicit string) (string, error) {
	if len(nodes) == 0 {
		return "", errors.New("control plane: no nodes to run it on")
	}
	if explicit != "" {
		for _, n := range nodes {
			if n.Name == explicit {
				return n.Name, nil
			}
		}
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		return "", fmt.Errorf("control plane node %q: no such node (the nodes are %s)", explicit, strings.Join(names, ", "))
	}
	for _, n := range nodes {
		if n.Labels[tierLabel] == cloudTier {
			return n.Name, nil
		}
	}
	for _, n := range nodes {
		if n.Name == cloudTier {
			return n.Name, nil
		}
	}
	return nodes[0].Name, nil
}
