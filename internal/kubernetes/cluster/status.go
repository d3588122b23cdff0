package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Status is what `continuum cluster status` shows.
type Status struct {
	StateDir   string
	PID        int  // the supervisor
	Running    bool // the supervisor runs
	Ready      bool // it reported the Node Ready
	Store      string
	Started    time.Time
	Kubeconfig string
	Nodes      []NodeStatus
	Pods       []PodStatus
	// APIError is why nodes and pods could not be listed, if they could not; NodesListed says
	// whether the Nodes were (their readiness is then the API server's word).
	APIError    string
	NodesListed bool
	// Testbed is the testbed a multi-node cluster's nodes live in ("" for the one-node
	// cluster): `continuum testbed status/fault --name <it>` act on its links and nodes.
	Testbed string
	// ControlPlane is the node the control plane of a multi-node cluster runs in.
	ControlPlane string
	// Links are the testbed's links between a multi-node cluster's nodes, as its fabric has them
	// now, and Partitions the partitions in force (testbed faults).
	Links      []testbed.LinkStatus
	Partitions []string
	// TestbedError is why the testbed's state could not be read, if it could not.
	TestbedError string
}

// NodeStatus is one node of the cluster: as planned (a multi-node cluster's nodes are listed
// before they register) and as its Node says.
type NodeStatus struct {
	Name  string
	Ready bool
	// ReadySince is when the Ready condition last changed, if the Node has one.
	ReadySince time.Time
	// Address is the Node's InternalIP (a testbed node's address).
	Address string
	// PodCIDR is the node's share of the cluster's pod CIDR.
	PodCIDR string
	// Labels are the Node's labels but Kubernetes' own (kubernetes.io, k8s.io): the topology's
	// and continuum.io/node.
	Labels map[string]string
	// Exited are the node's daemons (of a multi-node cluster) that do not run: the node failed
	// (`continuum testbed fault kill --node`) and was not restarted (`continuum cluster node
	// restart`).
	Exited []string
}

// PodStatus is one pod: namespace/name, phase, ready containers.
type PodStatus struct {
	Namespace, Name, Phase string
	Ready, Containers      int
}

// ReadStatus describes the cluster in stateDir; an error wrapping errNotRunning (IsNotRunning)
// when there is none.
func ReadStatus(ctx context.Context, stateDir string) (*Status, error) {
	st, err := readState(stateDir)
	if err != nil {
		return nil, err
	}
	s := &Status{StateDir: stateDir, PID: st.PID, Running: st.alive(), Ready: st.Ready, Store: st.Config.Store,
		Started: st.Started, Kubeconfig: st.Kubeconfig, ControlPlane: st.ControlPlane}
	planned := st.nodes()
	byName := map[string]int{}
	for i, n := range planned {
		byName[n.Name] = i
		s.Nodes = append(s.Nodes, NodeStatus{Name: n.Name, PodCIDR: n.PodCIDR.String(), Address: n.IP.String(), Labels: n.Labels})
	}
	if st.Testbed != nil {
		s.Testbed = st.Testbed.Name
		if s.Running {
			if ts, err := testbed.NewClient(st.Testbed.StateDir, st.Testbed.Name).Status(); err != nil {
				s.TestbedError = err.Error()
			} else {
				s.Links, s.Partitions = ts.Links, ts.Partitions
				for _, p := range ts.Procs {
					i, ok := byName[p.Node]
					if role, mine := strings.CutPrefix(p.Name, p.Node+"."); ok && mine && p.State == "exited" {
						s.Nodes[i].Exited = append(s.Nodes[i].Exited, role)
					}
				}
				for i := range s.Nodes {
					slices.Sort(s.Nodes[i].Exited)
				}
			}
		}
	}
	if !s.Running || st.Kubeconfig == "" {
		return s, nil
	}
	client, err := clientFor(st.Kubeconfig)
	if err != nil {
		s.APIError = err.Error()
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.APIError = err.Error()
		return s, nil
	}
	s.NodesListed = true
	for _, n := range nodes.Items {
		i, ok := byName[n.Name]
		if !ok {
			i = len(s.Nodes)
			s.Nodes = append(s.Nodes, NodeStatus{Name: n.Name})
		}
		ns := &s.Nodes[i]
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ns.Ready, ns.ReadySince = c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ns.Address = a.Address
			}
		}
		ns.Labels = map[string]string{}
		for k, v := range n.Labels {
			if !kubernetesLabel(k) {
				ns.Labels[k] = v
			}
		}
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		s.APIError = err.Error()
		return s, nil
	}
	for _, p := range pods.Items {
		ps := PodStatus{Namespace: p.Namespace, Name: p.Name, Phase: string(p.Status.Phase), Containers: len(p.Spec.Containers)}
		for _, c := range p.Status.ContainerStatuses {
			if c.Ready {
				ps.Ready++
			}
		}
		s.Pods = append(s.Pods, ps)
	}
	return s, nil
}

// IsNotRunning reports whether err says that there is no cluster in the state directory.
func IsNotRunning(err error) bool { return errors.Is(err, errNotRunning) }

// Down stops the cluster in stateDir and removes everything it made. It asks the supervisor to
// stop (SIGTERM: it tears down in order) and waits; if the supervisor is gone or does not finish
// in time, Down removes what is left itself.
func Down(ctx context.Context, stateDir string) error {
	st, err := readState(stateDir)
	if err != nil {
		return err
	}
	if st.alive() {
		_ = syscall.Kill(st.PID, syscall.SIGTERM)
		deadline := time.Now().Add(2 * time.Minute)
		for st.alive() && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if st.alive() {
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
		}
		if _, err := os.Stat(paths{stateDir}.state()); os.IsNotExist(err) {
			return nil // the supervisor removed everything
		}
	}
	if err := sweep(ctx, st); err != nil {
		return fmt.Errorf("cluster down %s: %w", stateDir, err)
	}
	return nil
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}
