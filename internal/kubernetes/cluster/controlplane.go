package cluster

import (
	"context"
	"fmt"

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
