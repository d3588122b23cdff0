package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
	"github.com/continuum-project/continuum/internal/testenv"
)

func TestMain(m *testing.M) {
	if IsLauncher() {
		LauncherMain() // the test binary doubles as the node launcher
	}
	os.Exit(m.Run())
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
}

var tbSeq int

// startTestbed brings up a testbed with a unique name and its own state dir, torn down by Cleanup.
func startTestbed(t *testing.T, yamlText string) *Testbed {
	t.Helper()
	return startTestbedWith(t, yamlText, Options{})
}

// startTestbedWith is startTestbed with opts (its name, state dir and seed are set here).
func startTestbedWith(t *testing.T, yamlText string, opts Options) *Testbed {
	t.Helper()
	requireRoot(t)
	topo, err := ParseTopology("test.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	tbSeq++
	opts.Name, opts.StateDir, opts.Seed = fmt.Sprintf("t%d-%d", os.Getpid()%100000, tbSeq), t.TempDir(), 1
	tb, err := Up(topo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Down(); err != nil {
			t.Errorf("down: %v", err)
		}
		assertGone(t, tb)
	})
	return tb
}

// assertGone checks that nothing of the testbed is left on the host.
func assertGone(t *testing.T, tb *Testbed) {
	t.Helper()
	for _, n := range tb.nodes {
		if netnsExists(n.ns) {
			t.Errorf("namespace %s left behind", n.ns)
		}
		if _, err := os.Stat("/etc/netns/" + n.ns); err == nil {
			t.Errorf("/etc/netns/%s left behind", n.ns)
		}
		if _, err := os.Stat("/sys/class/net/" + n.tun); err == nil {
			t.Errorf("interface %s left behind", n.tun)
		}
	}
	for _, d := range tb.cg.dirs(cgroupRoot + "/" + tb.Name) {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left behind", d)
		}
	}
	if _, err := os.Stat(tb.dir); err == nil {
		t.Errorf("state dir %s left behind", tb.dir)
	}
}

// execIn runs a command inside a node of tb and returns its output.
func execIn(t *testing.T, tb *Testbed, node string, argv ...string) (string, error) {
	t.Helper()
	c, err := ExecCommand(tb.opts.StateDir, tb.Name, node, argv)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CombinedOutput()
	return string(out), err
}

var rttRE = regexp.MustCompile(`time=([0-9.]+) ms`)

// pingRTTs pings from a to b and returns the round-trip times in ms, sorted.
func pingRTTs(t *testing.T, tb *Testbed, a, b string, count int) []float64 {
	t.Helper()
	out, err := execIn(t, tb, a, "ping", "-n", "-c", strconv.Itoa(count), "-i", "0.02", "-W", "2", b)
	if err != nil {
		t.Fatalf("ping %s -> %s: %v\n%s", a, b, err, out)
	}
	var rtts []float64
	for _, m := range rttRE.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	sort.Float64s(rtts)
	return rtts
}

func TestPingByNameGivesConfiguredRTT(t *testing.T) {
	tb := startTestbed(t, `
nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 10ms}]
`)
	rtts := pingRTTs(t, tb, "a", "b", 30)
	if len(rtts) < 28 {
		t.Fatalf("only %d of 30 replies", len(rtts))
	}
	if med := rtts[len(rtts)/2]; med < 19 || med > 21 {
		t.Errorf("median RTT %.2f ms, want 20 +- 1 ms (all: %v)", med, rtts)
	}
	if out, _ := execIn(t, tb, "b", "hostname"); strings.TrimSpace(out) != "b" {
		t.Errorf("hostname inside node b = %q", out)
	}
}

func TestMultiHopRouteSumsDelays(t *testing.T) {
	tb := startTestbed(t, `
nodes: [{name: device}, {name: edge}, {name: cloud}]
links:
  - {between: [device, edge], delay: 5ms}
  - {between: [edge, cloud], delay: 20ms}
`)
	if rtt, ok := tb.RTT("device", "cloud"); !ok || rtt != 50*time.Millisecond {
		t.Fatalf("configured RTT = %v, %v; want 50ms", rtt, ok)
	}
	rtts := pingRTTs(t, tb, "device", "cloud", 10)
	if med := rtts[len(rtts)/2]; med < 49 || med > 51.5 {
		t.Errorf("median RTT %.2f ms, want 50 ms", med)
	}
}

// tcpReachable dials from node a to a listener on node b.
func tcpReachable(t *testing.T, tb *Testbed, a, b string, port int) bool {
	t.Helper()
	addr, _ := tb.NodeAddr(b)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := tb.Dial(ctx, a, "tcp", fmt.Sprintf("%s:%d", addr, port))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func startListener(t *testing.T, tb *Testbed, node, name string, port int) *Proc {
	t.Helper()
	p, err := tb.Start(ProcSpec{Name: name, Node: node, Args: []string{"python3", "-c",
		fmt.Sprintf("import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.bind(('0.0.0.0',%d))\ns.listen(64)\nwhile True:\n c,_=s.accept()\n c.close()", port)}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "listener up", func() bool { return tcpReachable(t, tb, node, node, port) })
	return p
}

func TestPartitionAndHeal(t *testing.T) {
	tb := startTestbed(t, `
nodes: [{name: a}, {name: b}, {name: c}]
links: [{between: [a, b], delay: 1ms}, {between: [b, c], delay: 1ms}]
`)
	startListener(t, tb, "c", "srv", 7000)
	startListener(t, tb, "b", "srvb", 7001)
	if !tcpReachable(t, tb, "a", "c", 7000) {
		t.Fatal("c unreachable before partition")
	}
	cases := []Fault{
		{Action: FaultPartition, Node: "c"},
		{Action: FaultPartition, Link: []string{"b", "c"}},
		{Action: FaultPartition, Groups: [][]string{{"a", "b"}, {"c"}}},
	}
	for _, f := range cases {
		if _, err := tb.Inject(f); err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		if tcpReachable(t, tb, "a", "c", 7000) {
			t.Errorf("%s: c still reachable from a", platform.DescribePartition(f))
		}
		if !tcpReachable(t, tb, "a", "b", 7001) {
			t.Errorf("%s: b unreachable from a", platform.DescribePartition(f))
		}
		if _, err := tb.Inject(Fault{Action: FaultHeal}); err != nil {
			t.Fatal(err)
		}
		if !tcpReachable(t, tb, "a", "c", 7000) {
			t.Errorf("%s: c unreachable after heal", platform.DescribePartition(f))
		}
	}
	// Healing a partition that is not active names the active ones.
	if _, err := tb.Inject(Fault{Action: FaultPartition, Node: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Inject(Fault{Action: FaultHeal, Node: "a"}); err == nil || !strings.Contains(err.Error(), "node c") {
		t.Errorf("heal of inactive partition: err = %v, want it to list 'node c'", err)
	}
	if _, err := tb.Inject(Fault{Action: FaultHeal, Node: "c"}); err != nil {
		t.Fatal(err)
	}
}

func TestLinkChangeAtRunTime(t *testing.T) {
	tb := startTestbed(t, `
nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 2ms}]
`)
	d := spec.Duration{Duration: 15 * time.Millisecond}
	if _, err := tb.Inject(Fault{Action: FaultLink, Link: []string{"b", "a"}, Delay: &d}); err != nil {
		t.Fatal(err)
	}
	rtts := pingRTTs(t, tb, "a", "b", 10)
	if med := rtts[len(rtts)/2]; med < 29 || med > 31.5 {
		t.Errorf("median RTT after change %.2f ms, want 30", med)
	}
}

func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	return b[i+2]
}

func TestKillPauseResume(t *testing.T) {
	tb := startTestbed(t, `nodes: [{name: a}, {name: b}]`)
	p, err := tb.Start(ProcSpec{Name: "sleeper", Node: "a", Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tb.Start(ProcSpec{Name: "other", Node: "b", Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Status().PID
	testenv.Eventually(t, 5*time.Second, "sleep running", func() bool {
		pids, _ := tb.cg.procs(p.cgroupPath())
		return len(pids) == 1 && procState(pids[0]) == 'S'
	})
	pids, _ := tb.cg.procs(p.cgroupPath())
	if _, err := tb.Inject(Fault{Action: FaultPause, Node: "a"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "stopped state", func() bool { return procState(pids[0]) == 'T' })
	if _, err := tb.Inject(Fault{Action: FaultResume, Node: "a"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "running again", func() bool { return procState(pids[0]) == 'S' })
	if _, err := tb.Inject(Fault{Action: FaultKill, Node: "a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("process survived kill")
	}
	if st := p.Status(); st.State != "exited" || st.Signal != syscall.SIGKILL.String() {
		t.Errorf("status after kill = %+v (launcher pid %d)", st, pid)
	}
	if other.Status().State != "running" {
		t.Error("kill of node a killed a process on node b")
	}
	// Restart brings the component back under the same name.
	if _, err := tb.Inject(Fault{Action: FaultRestart, Component: "sleeper"}); err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.State != "running" || st.Restarts != 1 {
		t.Errorf("after restart: %+v", st)
	}
}

// cpuUsedOver measures the cores used by a cgroup over d.
func cpuUsedOver(t *testing.T, tb *Testbed, path string, d time.Duration) float64 {
	t.Helper()
	a, _ := tb.cg.cpuUsage(path)
	start := time.Now()
	time.Sleep(d) // measuring a rate over a window, not waiting for an event
	b, _ := tb.cg.cpuUsage(path)
	return (b - a).Seconds() / time.Since(start).Seconds()
}

func TestCPUQuotaAndChange(t *testing.T) {
	tb := startTestbed(t, `nodes: [{name: a, cpus: 0.2, memory: 64Mi}]`)
	n := tb.byName["a"]
	if _, err := tb.Start(ProcSpec{Name: "burn", Node: "a", Args: []string{"sh", "-c", "while :; do :; done"}}); err != nil {
		t.Fatal(err)
	}
	// A busy loop would take a whole core; the quota must hold it near 0.2. (The lower side is
	// not asserted: on a loaded CI machine the loop may get less than its quota.)
	if u := cpuUsedOver(t, tb, n.cgroup, 1500*time.Millisecond); u > 0.28 {
		t.Errorf("with cpus 0.2 the node used %.2f cores", u)
	}
	half := 0.5
	if _, err := tb.Inject(Fault{Action: FaultCPU, Node: "a", CPUs: &half}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tb.cg.ctrlDir("cpu", n.cgroup) + "/" + map[bool]string{true: "cpu.max", false: "cpu.cfs_quota_us"}[tb.cg.v2]); !strings.HasPrefix(string(got), "50000") {
		t.Errorf("quota after change = %q, want 50000", got)
	}
	if u := cpuUsedOver(t, tb, n.cgroup, 1500*time.Millisecond); u > 0.6 {
		t.Errorf("with cpus 0.5 the node used %.2f cores", u)
	}
	s := tb.NewSampler(time.Second)
	s.Take()
	time.Sleep(500 * time.Millisecond) // let the sampler see an interval of load
	rows := s.Take()
	var node, comp Sample
	for _, r := range rows {
		if r.Component == "" {
			node = r
		} else if r.Component == "burn" {
			comp = r
		}
	}
	// All of the node's CPU is the burner's, so it gets all of the dynamic power, and the model
	// holds: P = idle + (max-idle) * util/quota with the default 10..50 W.
	if node.CPUUtil <= 0 || comp.CPUUtil < node.CPUUtil*0.95 || comp.CPUUtil > node.CPUUtil*1.05 {
		t.Errorf("sampler rows: node %+v, component %+v", node, comp)
	}
	want := 10 + 40*min(node.CPUUtil/0.5, 1)
	if d := node.PowerW - want; d < -0.01 || d > 0.01 || comp.PowerW < (node.PowerW-10)*0.95 || comp.PowerW > node.PowerW-10+0.01 {
		t.Errorf("modelled power: node %.2f W (want %.2f), component %.2f W (want %.2f)", node.PowerW, want, comp.PowerW, node.PowerW-10)
	}
}

// TestProcessCPULimit: a process's own CPU limit holds inside an unlimited node.
func TestProcessCPULimit(t *testing.T) {
	tb := startTestbed(t, `nodes: [{name: a}]`)
	p, err := tb.Start(ProcSpec{Name: "burn", Node: "a", CPUs: 0.25, Args: []string{"sh", "-c", "while :; do :; done"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tb.cg.ctrlDir("cpu", p.cgroupPath()) + "/" + map[bool]string{true: "cpu.max", false: "cpu.cfs_quota_us"}[tb.cg.v2]); !strings.HasPrefix(string(got), "25000") {
		t.Errorf("process quota = %q, want 25000", got)
	}
	// The busy loop would take a whole core (upper side only, as above).
	if u := cpuUsedOver(t, tb, p.cgroupPath(), 1500*time.Millisecond); u > 0.33 {
		t.Errorf("with cpus 0.25 the process used %.2f cores", u)
	}
	// Its status reports the CPU it used (the loop ran for 1.5 s at up to a quarter core).
	if st := p.Status(); st.CPUSeconds <= 0 || st.CPUSeconds > 1 {
		t.Errorf("status cpu_seconds %g: want >0 and at most ~0.4", st.CPUSeconds)
	}
}

// TestProcessMemoryLimitAndStopSignal: a process's memory limit is its cgroup's, and Stop sends
// its own stop signal first (a process that exits cleanly on SIGINT only, as many servers do).
func TestProcessMemoryLimitAndStopSignal(t *testing.T) {
	tb := startTestbed(t, `nodes: [{name: a}]`)
	// It ignores SIGTERM: only SIGINT makes it write "bye" and exit 0 before the grace ends.
	script := `trap '' TERM; trap 'echo bye; exit 0' INT; echo ready; while :; do sleep 0.05; done`
	p, err := tb.Start(ProcSpec{Name: "srv", Node: "a", Memory: 64 << 20, StopSignal: syscall.SIGINT, Args: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	file := map[bool]string{true: "memory.max", false: "memory.limit_in_bytes"}[tb.cg.v2]
	if got, _ := os.ReadFile(tb.cg.ctrlDir("memory", p.cgroupPath()) + "/" + file); strings.TrimSpace(string(got)) != "67108864" {
		t.Errorf("process %s = %q, want 67108864", file, got)
	}
	log := LogPath(filepath.Join(tb.dir, "logs"), "a", "srv", "stdout")
	testenv.Eventually(t, 10*time.Second, "the script's traps are set", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "ready")
	})
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st := p.Exit(); st.Code != 0 || st.Signal != "" {
		t.Errorf("exit %+v: want 0 (it exits cleanly on SIGINT; SIGTERM is ignored, SIGKILL would show)", st)
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "bye") {
		t.Errorf("stdout %q: want the SIGINT handler's bye", b)
	}
}

func TestTwoTestbedsCoexistAndNoRootNeededForStatus(t *testing.T) {
	tb1 := startTestbed(t, `nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 1ms}]`)
	tb2 := startTestbed(t, `nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 5ms}]`)
	r1 := pingRTTs(t, tb1, "a", "b", 5)
	r2 := pingRTTs(t, tb2, "a", "b", 5)
	if r1[2] > 4 || r2[2] < 9 {
		t.Errorf("medians %.2f / %.2f ms: testbeds interfere", r1[2], r2[2])
	}
	st := tb1.Status()
	if len(st.Nodes) != 2 || st.Nodes[0].TxBytes == 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestDestroyAfterHostKilled(t *testing.T) {
	requireRoot(t)
	// The host process is simulated by a child that brings a testbed up and is SIGKILLed: the
	// state file must be enough to remove everything.
	dir := t.TempDir()
	topo := "nodes: [{name: a}, {name: b}]\nlinks: [{between: [a, b]}]\n"
	if err := os.WriteFile(dir+"/topo.yaml", []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHost$")
	cmd.Env = append(os.Environ(), "TESTBED_HELPER_HOST="+dir)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := stdout.Read(buf) // the helper prints "up" once the testbed and a component run
	if !strings.Contains(string(buf[:n]), "up") {
		t.Fatalf("helper host did not come up: %q", buf[:n])
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	states, _ := List(dir + "/state")
	if len(states) != 1 {
		t.Fatalf("state files after crash: %v", states)
	}
	names, err := DestroyAll(dir + "/state")
	if err != nil || len(names) != 1 {
		t.Fatalf("DestroyAll = %v, %v", names, err)
	}
	cg, _ := detectCgroups()
	tb := &Testbed{Name: "crash", cg: cg, dir: dir + "/state/crash"}
	for _, nn := range []string{"a", "b"} {
		tb.nodes = append(tb.nodes, &node{name: nn, ns: "ctm-crash-" + nn, tun: tunName("crash", nn)})
	}
	assertGone(t, tb)
	if out, _ := exec.Command("pgrep", "-f", "sleep 4242").Output(); len(out) > 0 {
		t.Errorf("component process survived: pids %s", out)
	}
}

// TestHelperHost is not a test: TestDestroyAfterHostKilled runs it in a child process.
func TestHelperHost(t *testing.T) {
	dir := os.Getenv("TESTBED_HELPER_HOST")
	if dir == "" {
		t.Skip("helper process only")
	}
	topo, err := LoadTopology(dir + "/topo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Up(topo, Options{Name: "crash", StateDir: dir + "/state"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Start(ProcSpec{Name: "sleeper", Node: "a", Args: []string{"sleep", "4242"}}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("up")
	select {} // wait to be killed
}

// TestNodePrefixTakesTheNodesPath: an address in a prefix behind node b (here on b's loopback,
// as a pod's would be on b's bridge) is reached from a over the a-b link, with its delay, and
// is cut by a partition of a and b like b's own address.
func TestNodePrefixTakesTheNodesPath(t *testing.T) {
	topoText := "nodes: [{name: a}, {name: b}]\nlinks: [{between: [a, b], delay: 10ms}]\n"
	tb := startTestbedWith(t, topoText, Options{NodePrefixes: map[string][]netip.Prefix{"b": {netip.MustParsePrefix("10.244.1.0/24")}}})
	topo, err := ParseTopology("test.yaml", []byte(topoText))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := execIn(t, tb, "b", "ip", "addr", "add", "10.244.1.7/32", "dev", "lo"); err != nil {
		t.Fatalf("address in b's prefix: %v\n%s", err, out)
	}
	rtts := pingRTTs(t, tb, "a", "10.244.1.7", 10)
	if len(rtts) < 9 {
		t.Fatalf("only %d of 10 replies from 10.244.1.7", len(rtts))
	}
	if med := rtts[len(rtts)/2]; med < 19 {
		t.Errorf("median RTT to b's prefix %.2f ms, want at least the link's 20 ms round trip (all: %v)", med, rtts)
	}
	if out, _ := execIn(t, tb, "b", "ip", "route", "show", "10.244.1.0/24"); strings.TrimSpace(out) != "" {
		t.Errorf("b routes its own prefix out of eth0: %q", out)
	}
	if _, err := tb.Inject(Fault{Action: FaultPartition, Groups: [][]string{{"a"}, {"b"}}}); err != nil {
		t.Fatal(err)
	}
	if out, err := execIn(t, tb, "a", "ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", "10.244.1.7"); err == nil {
		t.Errorf("ping across the partition answered:\n%s", out)
	}
	if tb.fab.Drops()[fabric.DropPartition] == 0 {
		t.Errorf("no packet counted as dropped by the partition: %v", tb.fab.Drops())
	}
	for _, bad := range []struct {
		prefixes map[string][]netip.Prefix
		want     string
	}{
		{map[string][]netip.Prefix{"z": nil}, `node "z", which the topology does not have`},
		{map[string][]netip.Prefix{"b": {netip.MustParsePrefix("224.0.0.0/4")}}, `prefix 224.0.0.0/4 overlaps 224.0.0.0/4`},
		{map[string][]netip.Prefix{"b": {netip.MustParsePrefix("10.77.3.0/24")}}, `overlaps the topology's network`},
	} {
		if _, err := Up(topo, Options{Name: "bad", StateDir: t.TempDir(), NodePrefixes: bad.prefixes}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("prefixes %v: %v, want an error with %q", bad.prefixes, err, bad.want)
		}
	}
}

// TestHostMountsProcess: a host-mounts process is in its node's network namespace and cgroup
// but the host's mount namespace, so it sees the cgroup filesystem (which kubelet and runc
// need); a process started the usual way gets `ip netns exec`'s own mounts, with a fresh sysfs
// hiding it.
func TestHostMountsProcess(t *testing.T) {
	tb := startTestbed(t, `nodes: [{name: a}]`)
	script := `readlink /proc/self/ns/mnt; ls /sys/fs/cgroup | wc -l; grep -c eth0: /proc/net/dev; cat /proc/self/cgroup`
	run := func(name string, hostMounts bool) []string {
		p, err := tb.Start(ProcSpec{Name: name, Node: "a", HostMounts: hostMounts, Args: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not exit", name)
		}
		if e := p.Exit(); e.Code != 0 {
			t.Fatalf("%s: exit %+v", name, e)
		}
		b, _ := os.ReadFile(LogPath(filepath.Join(tb.dir, "logs"), "a", name, "stdout"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	hostMnt, _ := os.Readlink("/proc/self/ns/mnt")
	host := run("host", true)
	if len(host) < 4 {
		t.Fatalf("host-mounts output %q", host)
	}
	if host[0] != hostMnt {
		t.Errorf("host-mounts process in mount namespace %s, want the host's %s", host[0], hostMnt)
	}
	if host[1] == "0" {
		t.Errorf("host-mounts process sees an empty /sys/fs/cgroup")
	}
	if host[2] != "1" {
		t.Errorf("host-mounts process: %s eth0 lines in /proc/net/dev, want 1 (the node's interface)", host[2])
	}
	if cg := strings.Join(host[3:], "\n"); !strings.Contains(cg, "/"+tb.Name+"/a/host") {
		t.Errorf("host-mounts process cgroups %q, want its node's (%s/a/host)", cg, tb.Name)
	}
	usual := run("usual", false)
	if len(usual) < 2 || usual[0] == hostMnt || usual[1] != "0" {
		t.Errorf("ip netns exec process: mount namespace %v, /sys/fs/cgroup entries %v; want its own, empty", usual[0], usual[1:2])
	}
}
