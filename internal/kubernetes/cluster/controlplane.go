package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
)

// startControlPlane starts kube-apiserver, kube-controller-manager and kube-scheduler on the
// store. The API server listens on every address and advertises the bridge's: pods reach it
// through the kubernetes Service, whose endpoint is that address.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	cfg := controlplane.DefaultConfig()
	cfg.Dir = c.p.controlPlane()
	cfg.EtcdServers = []string{c.storeURL}
	cfg.BinDir = c.cfg.BinDir
	cfg.ControllerManager, cfg.Scheduler = true, true
	cfg.ServiceClusterIPRange = c.cfg.ServiceCIDR
	// The API server listens on every address and advertises the bridge's, so that the
	// kubernetes Service's endpoint is one pods reach; the lease reconciler keeps it.
	cfg.APIServerArgs = []string{"--bind-address=0.0.0.0", "--advertise-address=" + gateway(c.cfg.PodCIDR).String(),
		"--endpoint-reconciler-type=lease"}
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		return err
	}
	c.cp = cp
	c.client = cp.Client()
	c.st.Kubeconfig = cp.Kubeconfig()
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
