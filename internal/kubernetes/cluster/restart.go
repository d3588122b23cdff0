package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A multi-node cluster lives through the failure of a node, as a real cluster does: `continuum
// testbed fault kill --node N` (SIGKILL to everything in the node's cgroup: its daemons, their
// shims and its pods) or `pause --node N` leaves the cluster running, the Node goes NotReady
// once its grace period has passed without a heartbeat, and its pods are evicted when their
// tolerations end. `continuum cluster node restart N` (RestartNode) starts the node's daemons
// again, as a reboot would. Only the testbed's end (`continuum testbed down`) ends the cluster.
// The one-node cluster's node is the host: a daemon's exit there ends the cluster (Failed).

// daemonGrace is how long a daemon is given to exit on SIGTERM before it is killed.
const daemonGrace = 10 * time.Second

// watchNodes logs every exit of a multi-node cluster's daemons, and their starts again, until
// Down: a daemon's exit there is its node's failure, not the cluster's.
func (c *Cluster) watchNodes(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	exited := map[*proc]bool{}
	for {
		select {
		case <-c.down:
			return
		case <-t.C:
		}
		for _, pr := range append([]*proc{c.store}, c.procs...) {
			ok, err := pr.exited()
			switch {
			case ok && !exited[pr]:
				c.log.Warn("a node daemon exited; `continuum cluster node restart` starts the node's daemons again",
					"node", pr.node, "daemon", pr.role, "exit", err, "log", pr.log)
			case !ok && exited[pr]:
				c.log.Info("a node daemon runs again", "node", pr.node, "daemon", pr.role)
			}
			exited[pr] = ok
		}
	}
}

// RestartNode starts node name's daemons again, as a reboot of the node would: a paused node is
// resumed, what still runs is stopped (the kubelet first, so that it starts no pod meanwhile),
// then everything starts in Up's order: on the control plane's node the store and the API
// server (which it waits for: nothing in the cluster works without them), then containerd
// (waited for: the kubelet needs it), CoreDNS, the kubelet and kube-proxy. A daemon that fails
// to start does not stop the others from starting; the error names what runs and what does
// not. It does not wait for the Node to be Ready: across a partition it cannot become so. It
// returns what it restarted and when the daemons began to start again: a whole second at which
// none of the node's old daemons ran (see began). Down ends a restart under way (ctx ends it
// too).
func (c *Cluster) RestartNode(ctx context.Context, name string) (string, time.Time, error) {
	if c.tb == nil {
		return "", time.Time{}, errors.New("the one-node cluster's node is the host, and its daemons' exit ends the cluster: `continuum cluster down`, then `up`")
	}
	i := slices.IndexFunc(c.nodes, func(n nodeConfig) bool { return n.Name == name })
	if i < 0 {
		var names []string
		for _, n := range c.nodes {
			names = append(names, n.Name)
		}
		return "", time.Time{}, fmt.Errorf("%w %q in the cluster (nodes: %v)", errNoNode, name, names)
	}
	n := c.nodes[i]
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if isClosed(c.down) {
		return "", time.Time{}, errGoingDown
	}
	go func() {
		select {
		case <-c.down:
			cancel()
		case <-ctx.Done():
		}
	}()
	// SIGSTOPped processes (`testbed fault pause --node`) act on no signal until resumed: the
	// daemons' stop, and the pods' end when their shims go.
	if _, err := c.tb.Inject(testbed.Fault{Action: testbed.FaultResume, Node: name}); err != nil {
		return "", time.Time{}, fmt.Errorf("resume node %s: %w", name, err)
	}
	var mine []*proc // in start order
	for _, pr := range c.procs {
		if pr.node == name {
			mine = append(mine, pr)
		}
	}
	for _, pr := range mine {
		if pr.role == "kubelet" {
			pr.stop(daemonGrace)
		}
	}
	for j := len(mine) - 1; j >= 0; j-- {
		mine[j].stop(daemonGrace)
	}
	cp := name == c.cpNode.Name
	if cp {
		c.cp.StopAPIServer()
		c.store.stop(daemonGrace)
	}
	// A reboot empties /run, and containerd's state with it: its tasks' bundles and the pods'
	// network namespaces, which are mounts. Emptied, the restarted containerd finds its pods'
	// sandboxes gone, as after a reboot, and the kubelet makes new ones, rather than waiting
	// on the shims the kill ended.
	state := filepath.Join(n.paths().containerd(), "state")
	if err := unmountUnder(state); err != nil {
		return "", time.Time{}, fmt.Errorf("node %s: containerd's state: %w", name, err)
	}
	if err := os.RemoveAll(state); err != nil {
		return "", time.Time{}, fmt.Errorf("node %s: containerd's state: %w", name, err)
	}
	// The kubelet reports its Node's status with a heartbeat in whole seconds, and a restarted
	// one whose first status equals the last one before the kill reports nothing new for
	// nodeStatusReportFrequency (5 min): a report of the new kubelet within the second its
	// start was asked in looks older than that instant (one wait took 3.5 min under make
	// test's load). Starting on the next whole second, when the old daemons are gone, makes
	// every heartbeat at or after it the new kubelet's (WaitNodeReady).
	began := time.Now().Truncate(time.Second).Add(time.Second)
	select {
	case <-time.After(time.Until(began)):
	case <-ctx.Done():
		if isClosed(c.down) {
			return "", time.Time{}, errGoingDown
		}
		return "", time.Time{}, ctx.Err()
	}
	var started, failed []string
	var errs []error
	fail := func(what string, err error) {
		failed = append(failed, what)
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	start := func(what string, do func() error) {
		if ctx.Err() != nil {
			fail(what, ctx.Err())
			return
		}
		if err := do(); err != nil {
			fail(what, err)
			return
		}
		started = append(started, what)
	}
	if cp {
		start("store", func() error {
			if err := c.store.tp.Restart(daemonGrace); err != nil {
				return err
			}
			return c.waitStore(ctx, c.store)
		})
		start("kube-apiserver", func() error { return c.cp.StartAPIServer(ctx) })
	}
	for _, pr := range mine {
		start(pr.role, func() error {
			if err := pr.tp.Restart(daemonGrace); err != nil {
				return err
			}
			if pr.role == "containerd" {
				return c.waitContainerd(ctx, n, pr)
			}
			return nil
		})
	}
	if len(errs) > 0 {
		if errors.Is(ctx.Err(), context.Canceled) && isClosed(c.down) {
			errs = append([]error{errGoingDown}, errs...)
		}
		return "", time.Time{}, fmt.Errorf("node %s: restarted %v, not %v: %w", name, started, failed, errors.Join(errs...))
	}
	return fmt.Sprintf("restarted %v on node %s", started, name), began, nil
}

var (
	// errGoingDown: the cluster is being taken down.
	errGoingDown = errors.New("the cluster is going down")
	// errNoNode: the cluster has no node of that name.
	errNoNode = errors.New("no node")
)

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// WaitNodeReady waits until Node node of the cluster in stateDir is Ready as its kubelet reported
// since since, RestartNode's began (a Node killed and restarted within its grace period is
// still Ready from before), or ctx ends; then it says what it saw last.
func WaitNodeReady(ctx context.Context, stateDir, node string, since time.Time) error {
	st, err := readState(stateDir)
	if err != nil {
		return err
	}
	client, err := clientFor(st.Kubeconfig)
	if err != nil {
		return err
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		err := readySince(ctx, client, node, since)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-t.C:
		}
	}
}

// readySince is nil once the kubelet of node has reported the Node Ready at or after t (the
// Ready condition True, its heartbeat, in whole seconds, not before t: RestartNode's began). A lease renewal is not enough: a restarted kubelet
// renews its lease at once but first reports the Node NotReady, and Ready only with a later
// status.
func readySince(ctx context.Context, client kubernetes.Interface, node string, t time.Time) error {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := client.CoreV1().Nodes().Get(qctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch {
		case c.Status != corev1.ConditionTrue:
			return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
		case c.LastHeartbeatTime.Before(&metav1.Time{Time: t}):
			return fmt.Errorf("Ready, but its kubelet has not reported it since %s", t.Format(time.TimeOnly))
		}
		return nil
	}
	return errors.New("no Ready condition yet")
}
