package kubeplatform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/kubernetes/cluster"
	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/chaos"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// links emulates a run's links on the cluster, in one of two ways:
//
//   - chaosLinks, on a cluster whose nodes are joined by a real network: Chaos Mesh's
//     NetworkChaos objects put netem on the pods' interfaces, per pair of scenario nodes (a
//     pair's end-to-end delay, not hop by hop);
//   - fabricLinks, on a multi-node cluster `continuum cluster up --topology` started on this
//     host: its nodes are a testbed's, whose fabric carries every packet between them, so the
//     scenario's links are set on the fabric's links and its link faults are the testbed's,
//     hop by hop as on the testbed, flows of different pairs sharing a link's bandwidth and
//     queue.
type links interface {
	// setUp puts the scenario's link conditions in place, once the run's node pods exist.
	setUp(ctx context.Context) error
	// apply applies a partition, heal or link fault and says what it did.
	apply(ctx context.Context, f platform.Fault) (string, error)
	// tearDown undoes what the run did to the links.
	tearDown(ctx context.Context) error
	// describe says how the run's links are emulated (run.json's "links").
	describe() string
}

// chaosLinks keeps the run's NetworkChaos objects in step with its network's state.
type chaosLinks struct {
	c       *clients
	ns, run string
	topo    *platform.Topology

	mu      sync.Mutex
	network *chaos.Network
	on      bool // the run has NetworkChaos objects to keep in step, which tearDown deletes
}

func newChaosLinks(c *clients, ns, run string, topo *platform.Topology) *chaosLinks {
	return &chaosLinks{c: c, ns: ns, run: run, topo: topo, network: chaos.NewNetwork(topo)}
}

func (l *chaosLinks) setUp(ctx context.Context) error {
	if chaos.NeedsChaosMesh(l.topo, nil) == "" {
		return nil
	}
	l.mu.Lock()
	l.on = true
	l.mu.Unlock()
	return l.sync(ctx)
}

func (l *chaosLinks) apply(ctx context.Context, f platform.Fault) (string, error) {
	l.mu.Lock()
	detail, err := l.network.Apply(f)
	if err == nil {
		l.on = true
	}
	l.mu.Unlock()
	if err != nil {
		return "", err
	}
	return detail, l.sync(ctx)
}

// sync makes the run's NetworkChaos objects those of the network's state.
func (l *chaosLinks) sync(ctx context.Context) error {
	l.mu.Lock()
	objs := l.network.Objects(l.ns, l.run, runLabels(l.run))
	l.mu.Unlock()
	if err := chaos.Sync(ctx, l.c.dyn, l.ns, l.run, objs, false); err != nil {
		return fmt.Errorf("platform kubernetes: link emulation (NetworkChaos): %w", err)
	}
	return nil
}

func (l *chaosLinks) tearDown(ctx context.Context) error {
	l.mu.Lock()
	on := l.on
	l.mu.Unlock()
	if !on {
		return nil
	}
	return chaos.DeleteAll(ctx, l.c.dyn, l.ns, l.run)
}

func (l *chaosLinks) describe() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.on {
		return "none: the cluster's own network"
	}
	return "Chaos Mesh NetworkChaos, per pair of nodes"
}

// Fabric names the testbed whose fabric joins the nodes of a multi-node cluster on this host
// (cluster.FabricFor finds it from the cluster's kubeconfig).
type Fabric struct {
	Testbed  string // its name
	StateDir string // where it records itself ("" = the default)
	// CgroupRoots are the nodes' kubelet cgroup roots by node name, where the runner finds a
	// pod's processes to reach its agent (podDialer).
	CgroupRoots map[string]string
}

// fabricControl is what fabricLinks needs of the testbed: its control socket's client.
type fabricControl interface {
	Status() (testbed.Status, error)
	Inject(testbed.Fault) (string, error)
	FabricStats() (fabric.Stats, error)
	NodesCPU() (testbed.NodesCPU, error)
}

// fabricLinks sets the scenario's links on the cluster's testbed for the run, applies its link
// faults there, and gives the links back as they were when the run ends.
type fabricLinks struct {
	name  string
	tb    fabricControl
	topo  *platform.Topology
	lock  *os.File             // the testbed's run lock: one run on its links at a time
	saved []testbed.LinkStatus // the links before the run
	// cgroupRoots are the nodes' kubelet cgroup roots (Fabric.CgroupRoots).
	cgroupRoots map[string]string
}

// fabricNoRunLock stands for the run lock in tests without a testbed directory.
const fabricNoRunLock = ""

// openFabricLinks takes the testbed's run lock, gives the links back as they were before a run
// that ended without doing so (killed: its record is in the lock file), checks that the
// scenario's topology is the cluster's (the same nodes by name, the same links, no partition in
// force), records the links as they are in the lock file and returns them ready for setUp.
// lockDir is the testbed's directory ("": no lock, for tests).
func openFabricLinks(f Fabric, tb fabricControl, topo *platform.Topology, lockDir string) (_ *fabricLinks, err error) {
	l := &fabricLinks{name: f.Testbed, tb: tb, topo: topo, cgroupRoots: f.CgroupRoots}
	if lockDir != fabricNoRunLock {
		fl, err := os.OpenFile(filepath.Join(lockDir, fabricRunLock), os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("platform kubernetes: the testbed's run lock: %w", err)
		}
		if err := unix.Flock(int(fl.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			fl.Close()
			return nil, fmt.Errorf("platform kubernetes: another run uses the links of the cluster's testbed %s (one run at a time sets them)", f.Testbed)
		}
		l.lock = fl
		defer func() {
			if err != nil {
				l.release()
			}
		}()
		if err := l.restoreLeftover(); err != nil {
			return nil, err
		}
	}
	st, err := tb.Status()
	if err != nil {
		return nil, fmt.Errorf("platform kubernetes: the cluster's testbed %s: %w", f.Testbed, err)
	}
	if err := sameTopology(f.Testbed, st, topo); err != nil {
		return nil, err
	}
	if len(st.Partitions) > 0 {
		return nil, fmt.Errorf("platform kubernetes: the cluster's testbed %s has partitions in force (%s): heal them first (continuum testbed fault --name %s heal)",
			f.Testbed, strings.Join(st.Partitions, "; "), f.Testbed)
	}
	l.saved = slices.Clone(st.Links)
	if err := l.record(l.saved); err != nil {
		return nil, err
	}
	return l, nil
}

// fabricRunLock is the run lock's file in the testbed's directory: locked while a run sets the
// links, holding the links as they were before it until it has given them back.
const fabricRunLock = "kubernetes-run.lock"

// record writes links into the lock file (nil: empties it), on disk before it returns.
func (l *fabricLinks) record(links []testbed.LinkStatus) error {
	if l.lock == nil {
		return nil
	}
	var b []byte
	if links != nil {
		var err error
		if b, err = json.Marshal(links); err != nil {
			return err
		}
	}
	if err := l.lock.Truncate(0); err != nil {
		return fmt.Errorf("platform kubernetes: the testbed's run lock: %w", err)
	}
	if _, err := l.lock.WriteAt(b, 0); err != nil {
		return fmt.Errorf("platform kubernetes: the testbed's run lock: %w", err)
	}
	return l.lock.Sync()
}

// restoreLeftover gives back the links a run recorded and did not give back.
func (l *fabricLinks) restoreLeftover() error {
	b, err := io.ReadAll(io.NewSectionReader(l.lock, 0, 1<<20))
	if err != nil || len(b) == 0 {
		return err
	}
	var left []testbed.LinkStatus
	if err := json.Unmarshal(b, &left); err != nil {
		return fmt.Errorf("platform kubernetes: the testbed's run lock %s holds no links (%v): remove it once no run is under way", l.lock.Name(), err)
	}
	if err := l.giveBack(left); err != nil {
		return fmt.Errorf("platform kubernetes: an earlier run ended without giving the links back, and they could not be now: %w", err)
	}
	return l.record(nil)
}

// release lets the run lock go.
func (l *fabricLinks) release() {
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
	}
}

// sameTopology refuses a scenario whose nodes or links are not the cluster's: the links are
// the fabric's, so the scenario's delays take the same paths only on the same graph.
func sameTopology(name string, st testbed.Status, topo *platform.Topology) error {
	var nodes []string
	for _, n := range st.Nodes {
		nodes = append(nodes, n.Name)
	}
	fix := "bring the cluster up with the scenario's topology (continuum cluster up --topology FILE)"
	if !slices.Equal(slices.Sorted(slices.Values(nodes)), slices.Sorted(slices.Values(topo.NodeNames()))) {
		return fmt.Errorf("platform kubernetes: the scenario's nodes (%s) are not the nodes of the cluster's testbed %s (%s): %s",
			strings.Join(topo.NodeNames(), ", "), name, strings.Join(nodes, ", "), fix)
	}
	key := func(a, b string) string {
		if a > b {
			a, b = b, a
		}
		return a + "-" + b
	}
	var have, want []string
	queues := map[string]int{}
	for _, l := range st.Links {
		k := key(l.Between[0], l.Between[1])
		have, queues[k] = append(have, k), l.Queue
	}
	for _, l := range topo.Links {
		k := key(l.Between[0], l.Between[1])
		want = append(want, k)
		q := l.Queue
		if q == 0 {
			q = platform.DefaultQueue
		}
		if cq, ok := queues[k]; ok && cq != q {
			return fmt.Errorf("platform kubernetes: link %s-%s has a queue of %d packets, the cluster's testbed %s one of %d, fixed when it came up: %s",
				l.Between[0], l.Between[1], q, name, cq, fix)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(have)), slices.Sorted(slices.Values(want))) {
		return fmt.Errorf("platform kubernetes: the scenario's links (%s) are not the links of the cluster's testbed %s (%s): %s",
			strings.Join(slices.Sorted(slices.Values(want)), ", "), name, strings.Join(slices.Sorted(slices.Values(have)), ", "), fix)
	}
	return nil
}

// setUp gives every link the scenario's properties.
func (l *fabricLinks) setUp(context.Context) error {
	for _, lk := range l.topo.Links {
		p := lk.LinkProps
		f := testbed.Fault{Action: testbed.FaultLink, Link: slices.Clone(lk.Between), Delay: &p.Delay, Jitter: &p.Jitter, Loss: &p.Loss, Bandwidth: &p.Bandwidth}
		if _, err := l.tb.Inject(f); err != nil {
			return fmt.Errorf("platform kubernetes: link %s-%s on the cluster's testbed %s: %w", lk.Between[0], lk.Between[1], l.name, err)
		}
	}
	return nil
}

func (l *fabricLinks) apply(_ context.Context, f platform.Fault) (string, error) {
	return l.tb.Inject(f)
}

// tearDown heals every partition (there was none before the run) and gives every link back its
// properties from before the run; then empties the lock file's record and lets the lock go. A
// record that could not be given back stays for the next run to give back.
func (l *fabricLinks) tearDown(context.Context) error {
	err := l.giveBack(l.saved)
	if err == nil {
		err = l.record(nil)
	}
	l.release()
	if err != nil {
		return fmt.Errorf("platform kubernetes: the cluster's testbed %s: %w", l.name, err)
	}
	return nil
}

// giveBack heals every partition and gives every link of saved its properties.
func (l *fabricLinks) giveBack(saved []testbed.LinkStatus) error {
	var errs []error
	if _, err := l.tb.Inject(testbed.Fault{Action: testbed.FaultHeal}); err != nil {
		errs = append(errs, err)
	}
	for _, s := range saved {
		f, err := restoreFault(s)
		if err == nil {
			_, err = l.tb.Inject(f)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("link %s-%s back as before the run: %w", s.Between[0], s.Between[1], err))
		}
	}
	return errors.Join(errs...)
}

// restoreFault is the link fault that gives a link the properties s reports.
func restoreFault(s testbed.LinkStatus) (testbed.Fault, error) {
	delay, err := time.ParseDuration(s.Delay)
	if err != nil {
		return testbed.Fault{}, fmt.Errorf("delay %q: %w", s.Delay, err)
	}
	jitter, err := time.ParseDuration(s.Jitter)
	if err != nil {
		return testbed.Fault{}, fmt.Errorf("jitter %q: %w", s.Jitter, err)
	}
	d, j := spec.Duration{Duration: delay}, spec.Duration{Duration: jitter}
	loss, bw := spec.Percent(s.Loss), spec.Bandwidth(s.Bandwidth)
	return testbed.Fault{Action: testbed.FaultLink, Link: []string{s.Between[0], s.Between[1]}, Delay: &d, Jitter: &j, Loss: &loss, Bandwidth: &bw}, nil
}

func (l *fabricLinks) describe() string {
	return "testbed fabric " + l.name + ", hop by hop (continuum cluster up --topology)"
}

// podDialer opens connections from inside the network namespace of pod uid on this host (a
// pod of a cluster on this host's testbed): the agent listens on the pod's loopback only, and
// from there the runner reaches it without crossing the emulated links or the API server. The
// pod's namespace is entered through one of its processes, found in the pod's cgroup under its
// node's kubelet cgroup root (cluster.PodProcesses), where only root puts processes; after each
// connect the process must still be there (a pid that was reused meanwhile is not).
type podDialer struct {
	root, uid string // the node's kubelet cgroup root, the pod's UID
	mu        sync.Mutex
	pid       int // a process of the pod, 0 until found
}

// dial connects to addr from inside the pod, finding one of its processes again when the one it
// used has gone.
func (d *podDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		d.mu.Lock()
		pid := d.pid
		d.mu.Unlock()
		if pid == 0 {
			pids, perr := cluster.PodProcesses(d.root, d.uid)
			if perr != nil {
				return nil, perr
			}
			pid = pids[0]
			d.mu.Lock()
			d.pid = pid
			d.mu.Unlock()
		}
		var c net.Conn
		c, err = testbed.DialIn(ctx, fmt.Sprintf("/proc/%d/ns/net", pid), network, addr)
		if err == nil {
			if pids, perr := cluster.PodProcesses(d.root, d.uid); perr == nil && slices.Contains(pids, pid) {
				return c, nil
			}
			c.Close()
			err = fmt.Errorf("process %d left pod %s while the runner connected through it", pid, d.uid)
		}
		d.mu.Lock()
		d.pid = 0 // gone, or not answering: look again
		d.mu.Unlock()
	}
	return nil, err
}
