package kubeplatform

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/kubernetes/cluster"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestQuickstartOnFabricCluster runs the quickstart itself (scenarios/quickstart.yaml: device
// -10 ms- edge -50 ms- cloud, cloud partitioned from 10 s to 20 s) on a cluster of the
// quickstart's topology on this host's testbed, as `continuum run --platform kubernetes` does
// with the cluster's kubeconfig: the platform finds the cluster's testbed (cluster.FabricFor),
// sets the scenario's links there and applies the partition there, and reaches its agents from
// inside their pods, so that isolating cloud (the control plane's node) does not cut the run
// off. The requests to edge take at least the device-edge round trip and never fail; those to
// cloud take at least the device-cloud round trip and fail only while cloud is cut off; run.json
// says where the run ran and how its links were emulated, network.csv what the fabric carried;
// afterwards the cluster's links are as before the run, with no partition in force. Before the
// run, a pod-to-pod round trip device-cloud is the node-to-node one (podRTTIsNodeRTT).
func TestQuickstartOnFabricCluster(t *testing.T) {
	binDir, bin := clusterNeeds(t)
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	images, err := builtImages(bin, root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.DefaultConfig()
	state := t.TempDir()
	cfg.StateDir, cfg.TestbedStateDir = filepath.Join(state, "cluster"), filepath.Join(state, "testbeds")
	cfg.BinDir, cfg.ContinuumBin = binDir, bin
	cfg.Images = []string{filepath.Join(images, "continuum.tar")}
	cfg.Topology = filepath.Join(root, "scenarios", "topologies", "three-tier.yaml")
	if cfg.SandboxImage, err = cluster.SandboxFrom(cfg.Images); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	cl, err := cluster.Up(ctx, cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Down(context.Background()); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	t.Logf("three nodes Ready in %v", time.Since(start).Round(time.Second))

	fc, ok := cluster.FabricFor(cl.Kubeconfig())
	if !ok || fc.Testbed != cl.Testbed().Name || len(fc.CgroupRoots) != 3 {
		t.Fatalf("FabricFor(%s) = %+v, %v; want the cluster's testbed %s and its three nodes", cl.Kubeconfig(), fc, ok, cl.Testbed().Name)
	}
	name, dir := fc.Testbed, fc.TestbedStateDir
	podRTTIsNodeRTT(ctx, t, cl, fc, "device", "cloud", 120*time.Millisecond)
	// The cluster's edge-cloud link as its user left it, which the run changes and gives back.
	tb := testbed.NewClient(dir, name)
	five := spec.Duration{Duration: 5 * time.Millisecond}
	if _, err := tb.Inject(testbed.Fault{Action: testbed.FaultLink, Link: []string{"edge", "cloud"}, Delay: &five}); err != nil {
		t.Fatal(err)
	}
	before, err := tb.Status()
	if err != nil {
		t.Fatal(err)
	}

	prov := Provider{Kubeconfig: cl.Kubeconfig(), Image: testImage, PullPolicy: "Never",
		Fabric: &Fabric{Testbed: name, StateDir: dir, CgroupRoots: fc.CgroupRoots}}
	scenario := filepath.Join(root, "scenarios", "quickstart.yaml")
	if _, err := experiment.Check(scenario, experiment.Options{Platform: prov, Binary: bin}); err != nil {
		t.Fatalf("run --check: %v", err)
	}
	res, err := experiment.Execute(ctx, scenario, experiment.Options{Platform: prov, Binary: bin, Out: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 {
		t.Fatalf("%d of %d runs failed (%s)", res.Failed, res.Runs, res.Dir)
	}
	run := filepath.Join(res.Dir, results.RunsDir, "001")
	var rec results.Run
	if err := results.ReadJSON(filepath.Join(run, results.RunFile), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Platform != PlatformName || !strings.Contains(rec.LinkEmulation, "testbed fabric "+name) {
		t.Errorf("run.json: platform %q, links %q; want kubernetes on the testbed fabric %s", rec.Platform, rec.LinkEmulation, name)
	}
	// The fabric's own figures, as a testbed run writes them (and the report's distortion check
	// reads): a row per sampling interval, with the packets it carried.
	// Its nodes' column is the testbed nodes' cgroups, which hold the cluster's daemons besides
	// the run's pods (what the distortion check's host reason counts): never empty, never 0.
	var carried, nodesCPU float64
	readCSV(t, filepath.Join(run, results.NetworkFile), []string{"packets", "nodes_cpu_cores"}, func(r results.CSVRow) {
		v, err := r.Floats("packets", "nodes_cpu_cores")
		if err != nil {
			t.Fatal(err)
		}
		carried += v[0]
		if !(v[1] > 0) {
			t.Errorf("%s: an interval's nodes_cpu_cores is %v; want the cluster's nodes' CPU (its daemons never idle to 0)", results.NetworkFile, v[1])
		}
		nodesCPU = max(nodesCPU, v[1])
	})
	t.Logf("%s: the nodes used up to %.2f cores in an interval", results.NetworkFile, nodesCPU)
	if carried == 0 {
		t.Errorf("%s: the fabric carried no packets", results.NetworkFile)
	}
	readCSV(t, filepath.Join(run, "events.csv"), []string{"action", "status", "detail"}, func(r results.CSVRow) {
		if r.Str("status") != "ok" {
			t.Errorf("event %s: status %q (%s)", r.Str("action"), r.Str("status"), r.Str("detail"))
		}
	})

	// Every second of the load: edge never fails; cloud fails only for requests sent while it
	// is cut off (the load's seconds count from its own start, a little after the run's, and a
	// request sent just before 10 s times out after it).
	readCSV(t, filepath.Join(run, "workloads", "load", "timeseries.csv"), []string{"t_s", "series", "ok", "errors", "p50_ms"}, func(r results.CSVRow) {
		v, err := r.Floats("t_s", "ok", "errors", "p50_ms")
		if err != nil {
			t.Fatal(err)
		}
		sec, okN, errN, p50 := v[0], v[1], v[2], v[3]
		rtt := map[string]float64{"edge": 20, "cloud": 120}[r.Str("series")]
		switch {
		case r.Str("series") == "edge" && errN != 0:
			t.Errorf("edge second %g: %g errors, want none (only cloud is cut off)", sec, errN)
		case r.Str("series") == "cloud" && errN != 0 && (sec < 9 || sec > 20):
			t.Errorf("cloud second %g: %g errors outside the partition (10-20 s)", sec, errN)
		case r.Str("series") == "cloud" && sec >= 11 && sec <= 18 && okN != 0:
			t.Errorf("cloud second %g: %g answers while cut off", sec, okN)
		case okN > 0 && p50 < rtt:
			t.Errorf("%s second %g: p50 %g ms, below the links' round trip %g ms", r.Str("series"), sec, p50, rtt)
		}
	})

	after, err := tb.Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Partitions) != 0 {
		t.Errorf("partitions left after the run: %v", after.Partitions)
	}
	for i, l := range after.Links {
		if l != before.Links[i] {
			t.Errorf("link %v after the run %+v, want it as before %+v", l.Between, l, before.Links[i])
		}
	}
}

// podRTTIsNodeRTT: a TCP connect from a pod on node from to a pod on node to takes the same
// time as one from node from to node to, the topology's round trip between them (want): the
// pods' traffic takes the nodes' path through the fabric and nothing else. Medians of 15 each,
// taken in turn so that both see the machine alike; they may differ by at most 1 ms.
func podRTTIsNodeRTT(ctx context.Context, t *testing.T, cl *cluster.Cluster, fc *cluster.FabricCluster, from, to string, want time.Duration) {
	t.Helper()
	c, err := (Provider{Kubeconfig: cl.Kubeconfig()}).connect()
	if err != nil {
		t.Fatal(err)
	}
	pod := func(node string, args ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "rtt-" + node},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{LabelNode: node},
				Containers: []corev1.Container{{Name: "c", Image: testImage, ImagePullPolicy: corev1.PullNever, Args: args}}},
		}
		if _, err := c.cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			_ = c.cs.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		var got *corev1.Pod
		testenv.Eventually(t, 2*time.Minute, "pod "+p.Name+" running", func() bool {
			got, err = c.cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.PodRunning && got.Status.PodIP != ""
		})
		return got
	}
	server := pod(to, "echo", "--listen", ":8080")
	client := pod(from, "cluster", "pause")
	var fromNS, toAddr string
	for _, n := range cl.Testbed().Status().Nodes {
		switch n.Name {
		case from:
			fromNS = n.Netns
		case to:
			toAddr = n.Address
		}
	}
	// Both connects are made the same way, from a thread switched into the namespace: through a
	// process of the client pod, and through the node's own.
	pids, err := cluster.PodProcesses(fc.CgroupRoots[from], string(client.UID))
	if err != nil {
		t.Fatal(err)
	}
	podNS := fmt.Sprintf("/proc/%d/ns/net", pids[0])
	podDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return testbed.DialIn(ctx, podNS, network, addr)
	}
	// A connect's round trip is the kernel's own measure of it (TCP_INFO's RTT, which the
	// handshake's first sample sets, in µs): a busy host delays this test's threads (entering
	// a namespace, being woken after the SYN-ACK) by milliseconds, the kernel's timestamps of
	// the SYN and the SYN-ACK far less.
	connect := func(dial func(context.Context, string, string) (net.Conn, error), addr string) time.Duration {
		conn, err := dial(ctx, "tcp", addr)
		if err != nil {
			t.Fatalf("connect to %s: %v", addr, err)
		}
		defer conn.Close()
		return kernelRTT(t, conn)
	}
	nodeDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return testbed.DialIn(ctx, fromNS, network, addr)
	}
	podAddr := net.JoinHostPort(server.Status.PodIP, "8080")
	testenv.Eventually(t, time.Minute, "the echo pod listening", func() bool {
		conn, err := podDial(ctx, "tcp", podAddr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	// The paths' round trips are their minima: on a busy host a packet also waits for a CPU at
	// each hop that needs one (a pod's veth and bridge add two each way), which says how busy
	// the host was, not what the path is (beside two busy loops, medians of 15 came 3.7 ms
	// apart once in 13 runs). Medians are logged beside them.
	var pods, hosts []time.Duration
	for range 20 { // interleaved: a busy moment touches both alike
		pods = append(pods, connect(podDial, podAddr))
		hosts = append(hosts, connect(nodeDial, net.JoinHostPort(toAddr, "10250"))) // the kubelet of node to
	}
	slices.Sort(pods)
	slices.Sort(hosts)
	podRTT, nodeRTT := pods[0], hosts[0]
	t.Logf("TCP handshake round trip %s -> %s (the kernel's), least of 20: pod to pod %v, node to node %v (medians %v, %v; the topology's %v)",
		from, to, podRTT, nodeRTT, pods[len(pods)/2], hosts[len(hosts)/2], want)
	if nodeRTT < want || podRTT < want {
		t.Errorf("round trips below the topology's %v: pod to pod %v, node to node %v", want, podRTT, nodeRTT)
	}
	if d := podRTT - nodeRTT; d > time.Millisecond || d < -time.Millisecond {
		t.Errorf("pod to pod %v, node to node %v: %v apart, want within 1 ms", podRTT, nodeRTT, d)
	}
}

// kernelRTT is the round trip the kernel measured on conn's connection (TCP_INFO's tcpi_rtt,
// its smoothed RTT; right after the handshake, the handshake's own).
func kernelRTT(t *testing.T, conn net.Conn) time.Duration {
	t.Helper()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var serr error
	if err := raw.Control(func(fd uintptr) { info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatalf("TCP_INFO: %v", serr)
	}
	return time.Duration(info.Rtt) * time.Microsecond
}
