package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestTwoNodeClusterDelay: a cluster of two nodes joined by a link of 10 ms one way. Both Nodes
// become Ready with the topology's labels and continuum.io/node; a pod pinned to each node by
// that label; a TCP connection from the edge pod to the cloud pod takes at least the link's
// round trip (the pods' traffic crosses the fabric) and not much more, and so does an HTTP
// request from a pod on edge; the host reaches the API server through the forwarder, and
// ReadStatus shows the nodes and the link. Down leaves the host as it was: namespaces,
// cgroups, mounts, links, rules, sysctls, kubelet's host paths.
func TestTwoNodeClusterDelay(t *testing.T) {
	binDir, tarball, ours, before := hostForClusterTest(t)
	bin := continuumBin(t)

	const delay = 10 * time.Millisecond
	cfg := DefaultConfig()
	cfg.StateDir = filepath.Join(ours, "cluster")
	cfg.TestbedStateDir = filepath.Join(ours, "testbeds")
	cfg.BinDir, cfg.ContinuumBin, cfg.Images = binDir, bin, []string{tarball}
	// Short enough for a test, long enough that a busy machine's late lease renewal (every
	// 2 s) does not make a node NotReady by itself.
	cfg.NodeGracePeriod, cfg.EvictionTimeout = 10*time.Second, 5*time.Second
	cfg.Topology = writeTopology(t, fmt.Sprintf(`
nodes:
  - {name: edge, labels: {tier: edge, region: eu-west}}
  - {name: cloud, labels: {tier: cloud}}
links:
  - {between: [edge, cloud], delay: %s}
`, delay))
	var err error
	if cfg.SandboxImage, err = SandboxFrom(cfg.Images); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	start := time.Now()
	cl, err := Up(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two nodes Ready in %v", time.Since(start).Round(time.Second))
	failed := cl.Failed()
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = cl.Down(context.Background())
		}
	})
	if cl.cpNode.Name != "cloud" {
		t.Errorf("control plane in %s, want cloud (tier=cloud)", cl.cpNode.Name)
	}

	// The host's kubeconfig reaches the API server in cloud through the forwarder.
	admin, err := clientFor(cl.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Nodes with %s: %v", cl.Kubeconfig(), err)
	}
	want := map[string]map[string]string{
		"edge":  {"tier": "edge", "region": "eu-west", nodeLabel: "edge"},
		"cloud": {"tier": "cloud", nodeLabel: "cloud"},
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d Nodes, want edge and cloud", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		for k, v := range want[n.Name] {
			if n.Labels[k] != v {
				t.Errorf("Node %s: label %s=%q, want %q (labels %v)", n.Name, k, n.Labels[k], v, n.Labels)
			}
		}
		if err := nodeReady(ctx, admin, n.Name); err != nil {
			t.Errorf("Node %s: %v", n.Name, err)
		}
	}

	ref := strings.TrimPrefix(strings.Replace(cfg.SandboxImage, "continuum-pause", "continuum", 1), "docker.io/")
	pods := map[string]*corev1.Pod{}
	for _, node := range []string{"edge", "cloud"} {
		pods[node] = echoOn(ctx, t, admin, ref, node)
	}
	for node, p := range pods {
		if p.Spec.NodeName != node || !cl.nodeOf(node).PodCIDR.Contains(mustAddr(t, p.Status.PodIP)) {
			t.Errorf("pod %s: on node %s with address %s, want node %s in %s", p.Name, p.Spec.NodeName, p.Status.PodIP, node, cl.nodeOf(node).PodCIDR)
		}
	}

	// TCP connects from the edge pod's namespace to the cloud pod: SYN and SYN-ACK each cross
	// the link once. Node to node for comparison.
	rtt, ok := cl.tb.RTT("edge", "cloud")
	if !ok || rtt != 2*delay {
		t.Fatalf("the testbed's round trip edge-cloud %v (%v), want %v", rtt, ok, 2*delay)
	}
	edgePod := podPID(t, cl.nodeOf("edge"), string(pods["edge"].UID))
	target := net.JoinHostPort(pods["cloud"].Status.PodIP, "8080")
	podRTT := medianOf(t, 15, func() (time.Duration, error) { return connectFrom(ctx, edgePod, target) })
	cloudAddr := net.JoinHostPort(cl.nodeOf("cloud").IP.String(), "10250") // cloud's kubelet
	nodeRTT := medianOf(t, 15, func() (time.Duration, error) {
		t0 := time.Now()
		c, err := cl.tb.Dial(ctx, "edge", "tcp", cloudAddr)
		if err != nil {
			return 0, err
		}
		d := time.Since(t0)
		c.Close()
		return d, nil
	})
	t.Logf("TCP connect, median of 15: pod edge -> pod cloud %v, node edge -> node cloud %v (link round trip %v)", podRTT, nodeRTT, rtt)
	if podRTT < rtt || podRTT > rtt+30*time.Millisecond {
		t.Errorf("pod-to-pod TCP connect takes %v, want the link's round trip %v or a little more", podRTT, rtt)
	}

	// An HTTP load from a pod on edge to the cloud pod: no errors, each request at least a
	// round trip.
	out := runOn(ctx, t, admin, ref, "run-edge", "edge", []string{"load", "http", "--target", "cloud=http://" + target + "/",
		"--rate", "20", "--duration", "2s", "--warmup", "0s", "--out", "/tmp/out"})
	done := doneLine(t, out)
	if done.Status != "ok" || done.Errors != 0 || done.OK == 0 {
		t.Fatalf("the load pod's run is not clean:\n%s", out)
	}
	if p50 := time.Duration(done.Series["cloud"].P50 * float64(time.Millisecond)); p50 < rtt || p50 > 2*rtt+40*time.Millisecond {
		t.Errorf("HTTP requests pod edge -> pod cloud: p50 %v, want at least the link's round trip %v and not far above", p50, rtt)
	} else {
		t.Logf("HTTP requests pod edge -> pod cloud: p50 %v", p50)
	}

	// What `cluster status` shows.
	s, err := ReadStatus(ctx, cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Testbed != cl.tb.Name || s.ControlPlane != "cloud" || len(s.Links) != 1 || s.Links[0].Delay != delay.String() || !s.Links[0].Up {
		t.Errorf("status: testbed %q, control plane %q, links %+v", s.Testbed, s.ControlPlane, s.Links)
	}
	for _, n := range s.Nodes {
		if !n.Ready || n.PodCIDR != cl.nodeOf(n.Name).PodCIDR.String() || n.Labels[nodeLabel] != n.Name || n.Address != cl.nodeOf(n.Name).IP.String() {
			t.Errorf("status of node %s: %+v", n.Name, n)
		}
	}

	nodeFaults(ctx, t, cl, admin, ref, pods["cloud"], pods["edge"])
	select {
	case err := <-failed:
		t.Errorf("the cluster failed: %v", err)
	default:
	}

	downed = true
	downLeavesHostAsBefore(t, cl, ours, before)
	for _, dir := range []string{cfg.StateDir, filepath.Join(cfg.TestbedStateDir, cl.tb.Name)} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", dir, err)
		}
	}
}

// nodeFaults: the testbed's faults on node edge are the cluster's, and it lives through them
// as a cluster does. A partition cuts the traffic to cloud's pods, the Node goes NotReady once
// its grace period has passed without a heartbeat (not before), its pod is evicted once the
// default toleration has passed (not before); after heal the Node is Ready again and the
// traffic flows. After `kill --node edge` the cluster runs on and its status names edge's
// exited daemons; RestartNode (through the control socket, as `cluster node restart`) brings
// the Node back Ready, its kubelet heard from since, running pods that reach cloud's.
func nodeFaults(ctx context.Context, t *testing.T, cl *Cluster, admin kubernetes.Interface, ref string, cloudPod, edgePod *corev1.Pod) {
	t.Helper()
	grace, eviction := cl.cfg.NodeGracePeriod, cl.cfg.EvictionTimeout
	renew := grace / 5 // the kubelets' lease renewal interval
	target := net.JoinHostPort(cloudPod.Status.PodIP, "8080")
	reach := func() error {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		c, err := cl.tb.Dial(dctx, "edge", "tcp", target)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := reach(); err != nil {
		t.Fatalf("before the partition, edge does not reach the cloud pod at %s: %v", target, err)
	}
	notReady := func(since time.Time) time.Duration {
		t.Helper()
		testenv.Eventually(t, grace+90*time.Second, "Node edge NotReady", func() bool { return nodeReady(ctx, admin, "edge") != nil })
		return time.Since(since)
	}

	cut := time.Now()
	if _, err := cl.tb.Inject(testbed.Fault{Action: testbed.FaultPartition, Node: "edge"}); err != nil {
		t.Fatal(err)
	}
	if err := reach(); err == nil {
		t.Errorf("during the partition, edge still reaches the cloud pod at %s", target)
	}
	took := notReady(cut)
	if took < grace-renew-time.Second {
		t.Errorf("Node edge NotReady %v after the partition, before its grace period %v (less a renewal interval %v) had passed", took, grace, renew)
	}
	seen := time.Now()
	var evicted time.Duration
	testenv.Eventually(t, eviction+90*time.Second, "edge's pod evicted", func() bool {
		p, err := admin.CoreV1().Pods("default").Get(ctx, edgePod.Name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			evicted = time.Since(seen)
			return true
		}
		return false
	})
	// The taint went on when the node controller saw the Node unheard, before this test did.
	if evicted+took < eviction {
		t.Errorf("edge's pod evicted %v after the partition, before its toleration (%v) had passed", evicted+took, eviction)
	}
	healed := time.Now()
	if _, err := cl.tb.Inject(testbed.Fault{Action: testbed.FaultHeal}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "Node edge Ready after heal", func() bool { return nodeReady(ctx, admin, "edge") == nil })
	backIn := time.Since(healed)
	if err := reach(); err != nil {
		t.Errorf("after heal, edge does not reach the cloud pod at %s: %v", target, err)
	}
	t.Logf("partition of edge: NotReady after %v (grace period %v), its pod evicted %v later (toleration %v); after heal Ready in %v",
		took.Round(100*time.Millisecond), grace, evicted.Round(100*time.Millisecond), eviction, backIn.Round(100*time.Millisecond))

	// The kill: not waited out to NotReady (the partition above measured that path); status
	// must name what exited, and the restart must be heard from.
	if _, err := cl.tb.Inject(testbed.Fault{Action: testbed.FaultKill, Node: "edge"}); err != nil {
		t.Fatal(err)
	}
	var s *Status
	testenv.Eventually(t, 30*time.Second, "status naming edge's exited daemons", func() bool {
		var err error
		s, err = ReadStatus(ctx, cl.cfg.StateDir)
		return err == nil && slices.ContainsFunc(s.Nodes, func(n NodeStatus) bool { return n.Name == "edge" && len(n.Exited) == 4 })
	})
	for _, n := range s.Nodes {
		want := []string(nil)
		if n.Name == "edge" {
			want = []string{"containerd", "coredns", "kube-proxy", "kubelet"}
		}
		if !slices.Equal(n.Exited, want) {
			t.Errorf("status after kill --node edge: node %s's exited daemons %v, want %v", n.Name, n.Exited, want)
		}
	}
	restarted := time.Now()
	what, began, err := RestartNode(ctx, cl.cfg.StateDir, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if !began.After(restarted) || began.Nanosecond() != 0 {
		t.Errorf("the restart began at %v, asked at %v: want a whole second after the ask", began, restarted)
	}
	if err := WaitNodeReady(ctx, cl.cfg.StateDir, "edge", began); err != nil {
		t.Fatal(err)
	}
	backIn = time.Since(restarted)
	out := runOn(ctx, t, admin, ref, "run-edge-restarted", "edge", []string{"load", "http", "--target", "cloud=http://" + target + "/",
		"--rate", "20", "--duration", "1s", "--warmup", "0s", "--out", "/tmp/out"})
	if done := doneLine(t, out); done.Status != "ok" || done.Errors != 0 || done.OK == 0 {
		t.Errorf("after the restart, a pod on edge does not reach the cloud pod cleanly:\n%s", out)
	}
	t.Logf("kill --node edge, then %s: Ready as its kubelet reported %v later", what, backIn.Round(100*time.Millisecond))
	if _, _, err := RestartNode(ctx, cl.cfg.StateDir, "nowhere"); err == nil || !strings.Contains(err.Error(), `no node "nowhere"`) {
		t.Errorf("restart of an unknown node: %v, want the error naming it", err)
	}
}

// nodeOf is the cluster's node of that name.
func (c *Cluster) nodeOf(name string) nodeConfig {
	for _, n := range c.nodes {
		if n.Name == name {
			return n
		}
	}
	return nodeConfig{}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("address %q: %v", s, err)
	}
	return a
}

// echoOn runs an echo server on node (by its continuum.io/node label) and returns the pod
// once it is Ready.
func echoOn(ctx context.Context, t *testing.T, client kubernetes.Interface, ref, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-" + node},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{nodeLabel: node},
			Containers: []corev1.Container{{
				Name: "echo", Image: ref, ImagePullPolicy: corev1.PullNever,
				Args:           []string{"echo", "--listen", ":8080"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	testenv.Eventually(t, 2*time.Minute, "pod "+pod.Name+" Ready", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// runOn runs a pod of the continuum image with args on node, as pod name, and returns its log.
func runOn(ctx context.Context, t *testing.T, client kubernetes.Interface, ref, name, node string, args []string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: map[string]string{nodeLabel: node},
			Containers: []corev1.Container{{Name: "run", Image: ref, ImagePullPolicy: corev1.PullNever, Args: args}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	testenv.Eventually(t, 2*time.Minute, "pod "+name+" finishes", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	})
	// The log comes from the node's kubelet, which the API server reaches across the link.
	b, err := client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s (through kubelet on %s): %v", name, node, err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod %s %s:\n%s", name, phase, b)
	}
	return string(b)
}

// doneLine is the load generator's last line.
func doneLine(t *testing.T, log string) loadgen.ProgressLine {
	t.Helper()
	for _, l := range slices.Backward(strings.Split(log, "\n")) {
		var pl loadgen.ProgressLine
		if json.Unmarshal([]byte(l), &pl) == nil && pl.Type == "done" {
			return pl
		}
	}
	t.Fatalf("no done line in:\n%s", log)
	return loadgen.ProgressLine{}
}

// podPID is a process of the pod with that UID on node n: one in the pod's cgroup, below the
// node's cgroup root (kubelet's cgroupfs layout: kubepods[/<qos>]/pod<uid>/<container>).
func podPID(t *testing.T, n nodeConfig, uid string) int {
	t.Helper()
	pid := 0
	testenv.Eventually(t, 30*time.Second, "a process in the cgroup of pod "+uid, func() bool {
		for _, root := range cgroupDirs(n.CgroupRoot) {
			_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() || pid != 0 || !strings.Contains(p, "/pod"+uid) {
					return nil
				}
				b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				if f := strings.Fields(string(b)); len(f) > 0 {
					pid, _ = strconv.Atoi(f[0])
				}
				return nil
			})
			if pid != 0 {
				return true
			}
		}
		return false
	})
	return pid
}

// connectFrom times a TCP connect to addr from the network namespace of process pid.
func connectFrom(ctx context.Context, pid int, addr string) (time.Duration, error) {
	type result struct {
		d   time.Duration
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // not unlocked if the thread stays in pid's namespace: it exits with the goroutine
		orig, err := netns.Get()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer orig.Close()
		ns, err := netns.GetFromPid(pid)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			res <- result{err: err}
			return
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", addr)
		r := result{d: time.Since(t0), err: err}
		if err == nil {
			c.Close()
		}
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		res <- r
	}()
	r := <-res
	return r.d, r.err
}

// medianOf is the median of n measurements.
func medianOf(t *testing.T, n int, measure func() (time.Duration, error)) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range n {
		d, err := measure()
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
