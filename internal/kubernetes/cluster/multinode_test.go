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
		if err := cl.nodeReady(ctx, n.Name); err != nil {
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
	out := runOn(ctx, t, admin, ref, "edge", []string{"load", "http", "--target", "cloud=http://" + target + "/",
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

	downed = true
	downLeavesHostAsBefore(t, cl, ours, before)
	for _, dir := range []string{cfg.StateDir, filepath.Join(cfg.TestbedStateDir, cl.tb.Name)} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", dir, err)
		}
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

// runOn runs a pod of the continuum image with args on node and returns its log.
func runOn(ctx context.Context, t *testing.T, client kubernetes.Interface, ref, node string, args []string) string {
	t.Helper()
	name := "run-" + node
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
