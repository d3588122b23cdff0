package main

// End-to-end tests of the built CLI: every test runs the real binary ($CONTINUUM_BIN, or one
// built in TestMain) as a user would, with its own state dir (CONTINUUM_STATE_DIR) and testbed
// names unique to this process, and checks that nothing is left on the host afterwards.

import (
	"github.com/continuum-project/continuum/internal/testenv"

	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
)

// bin is the continuum binary under test.
var bin string

func TestMain(m *testing.M) {
	path, cleanup, err := testenv.Binary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// requireRoot skips (or fails, when CONTINUUM_REQUIRE_ROOT=1) without root. These tests also
// skip with -short: they bring up real testbeds and experiments.
func requireRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("brings up real testbeds")
	}
	testenv.RequireRoot(t)
}

// binRunner runs the binary with a private state dir; Cleanup removes every testbed recorded there.
type binRunner struct {
	t     *testing.T
	state string
	dir   string // scratch dir for files and results
}

func newCLI(t *testing.T) *binRunner {
	t.Helper()
	// TempDirs are removed after this Cleanup (cleanups run last-in first-out).
	c := &binRunner{t: t, state: t.TempDir(), dir: t.TempDir()}
	if n := len(filepath.Join(c.state, "e12345-xxxx99", "control.sock")); n > 100 {
		t.Fatalf("state dir %s too long for a unix socket path", c.state)
	}
	t.Cleanup(func() {
		if out, errOut, err := c.run("testbed", "down", "--all"); err != nil {
			t.Errorf("cleanup: testbed down --all: %v\n%s%s", err, out, errOut)
		}
	})
	return c
}

func (c *binRunner) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CONTINUUM_STATE_DIR="+c.state)
	cmd.Dir = c.dir
	return cmd
}

// run runs the binary to completion and returns stdout, stderr and the exit error.
func (c *binRunner) run(args ...string) (string, string, error) {
	cmd := c.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// must runs the binary and fails the test unless it exits 0; it returns stdout.
func (c *binRunner) must(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("continuum %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// exitCode returns the exit status of a finished command's error (0 for nil, -1 if not an exit).
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// writeFile writes a file into the scratch dir and returns its path.
func (c *binRunner) writeFile(name, text string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return p
}

var nameSeq int

// uniqueName returns a testbed name no other test process uses (tests elsewhere run testbeds
// concurrently on the same host).
func uniqueName(tag string) string {
	nameSeq++
	return fmt.Sprintf("e%d-%s%d", os.Getpid()%100000, tag, nameSeq)
}

// up starts a testbed from topology text and returns its name.
func (c *binRunner) up(tag, topo string) string {
	c.t.Helper()
	name := uniqueName(tag)
	f := c.writeFile(name+".yaml", topo)
	out := c.must("testbed", "up", "-f", f, "--name", name)
	if !strings.Contains(out, "testbed "+name+" up") {
		c.t.Fatalf("testbed up printed %q", out)
	}
	return name
}

// statusJSON mirrors the fields of `testbed status --json` the tests read.
type statusJSON struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Nodes []struct {
		Name    string `json:"name"`
		Address string `json:"address"`
		Netns   string `json:"netns"`
	} `json:"nodes"`
	Links []struct {
		Between []string `json:"between"`
		Up      bool     `json:"up"`
		Delay   string   `json:"delay"`
	} `json:"links"`
	Partitions []string `json:"partitions"`
	Procs      []struct {
		Name     string `json:"name"`
		Node     string `json:"node"`
		PID      int    `json:"pid"`
		State    string `json:"state"`
		ExitCode int    `json:"exit_code"`
		Signal   string `json:"signal"`
		Restarts int    `json:"restarts"`
	} `json:"processes"`
}

func (c *binRunner) status(name string) statusJSON {
	c.t.Helper()
	out := c.must("testbed", "status", "--name", name, "--json")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

// proc returns the status of component comp (fails if absent).
func (c *binRunner) proc(name, comp string) (pid int, state, signal string, restarts int) {
	c.t.Helper()
	for _, p := range c.status(name).Procs {
		if p.Name == comp {
			return p.PID, p.State, p.Signal, p.Restarts
		}
	}
	c.t.Fatalf("testbed %s: no process %q in status", name, comp)
	return
}

var rttRE = regexp.MustCompile(`time=([0-9.]+) ms`)

// pingRTTs pings from node a to node b (by name) and returns the sorted RTTs in ms.
func (c *binRunner) pingRTTs(name, a, b string, count int) []float64 {
	c.t.Helper()
	out, errOut, err := c.run("testbed", "exec", "--name", name, a, "--", "ping", "-n", "-c", strconv.Itoa(count), "-i", "0.05", "-W", "2", b)
	if err != nil {
		c.t.Fatalf("ping %s -> %s: %v\n%s%s", a, b, err, out, errOut)
	}
	var rtts []float64
	for _, m := range rttRE.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	if len(rtts) < count-1 {
		c.t.Fatalf("ping %s -> %s: %d of %d replies\n%s", a, b, len(rtts), count, out)
	}
	sort.Float64s(rtts)
	return rtts
}

func median(v []float64) float64 { return v[len(v)/2] }

// checkMedianRTT pings a -> b and checks the median RTT is want +- tol ms. The fabric runs in
// userspace on a host shared with concurrent tests, where CPU contention only ever adds delay:
// a round trip shorter than configured fails at once, a slow median is measured again (3 tries).
func (c *binRunner) checkMedianRTT(name, a, b string, want, tol float64) {
	c.t.Helper()
	var tries [][]float64
	for range 3 {
		rtts := c.pingRTTs(name, a, b, 10)
		if rtts[0] < want-tol {
			c.t.Errorf("RTT %s -> %s of %.2f ms is below the configured %.0f ms (all: %v)", a, b, rtts[0], want, rtts)
			return
		}
		if med := median(rtts); med <= want+tol {
			return
		}
		tries = append(tries, rtts)
	}
	c.t.Errorf("median RTT %s -> %s above %.0f +- %.0f ms in 3 tries: %v", a, b, want, tol, tries)
}

// reachable reports whether a quick ping from a to b gets an answer (exit status 0).
func (c *binRunner) reachable(name, a, b string) bool {
	c.t.Helper()
	_, _, err := c.run("testbed", "exec", "--name", name, a, "--", "ping", "-n", "-c", "2", "-i", "0.05", "-W", "1", b)
	if err != nil && exitStatus(err) <= 0 {
		c.t.Fatalf("ping %s -> %s did not run: %v", a, b, err)
	}
	return err == nil
}

// procStat returns the state letter of /proc/PID/stat and the command name (0, "" if gone).
func procStat(pid int) (byte, string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < 0 || end+2 >= len(b) {
		return 0, ""
	}
	return b[end+2], string(b[open+1 : end])
}

// processGone reports whether pid no longer runs (exited or a zombie waiting to be reaped: the
// processes the tests look at are not their children).
func processGone(pid int) bool {
	st, _ := procStat(pid)
	return st == 0 || st == 'Z' || st == 'X'
}

// cgroupDirs are the directories testbed name's cgroup would occupy.
func cgroupDirs(name string) []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup/continuum/" + name}
	}
	var out []string
	for _, ctrl := range []string{"cpu", "cpuacct", "memory", "pids"} {
		out = append(out, filepath.Join("/sys/fs/cgroup", ctrl, "continuum", name))
	}
	return out
}

// nodeCgroupFile returns the file of a node's cgroup in controller ctrl (v1) or the unified tree.
func nodeCgroupFile(name, node, ctrl, file string) string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return filepath.Join("/sys/fs/cgroup/continuum", name, node, file)
	}
	return filepath.Join("/sys/fs/cgroup", ctrl, "continuum", name, node, file)
}

// tunName mirrors internal/testbed's name for the host end of a node's veth pair.
func tunName(testbed, node string) string {
	h := sha256.Sum256([]byte(testbed + "/" + node))
	return "ctm" + hex.EncodeToString(h[:5])
}

// assertNothingLeft checks that nothing of testbed name (with those nodes) remains on the host:
// namespaces, /etc/netns entries, veth pairs, cgroups, the state dir entry and the given pids.
func (c *binRunner) assertNothingLeft(name string, nodes []string, pids ...int) {
	c.t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		c.t.Fatalf("ip netns list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "ctm-"+name+"-") {
		c.t.Errorf("namespaces of %s left behind:\n%s", name, out)
	}
	if m, _ := filepath.Glob("/etc/netns/ctm-" + name + "-*"); len(m) > 0 {
		c.t.Errorf("/etc/netns entries left behind: %v", m)
	}
	for _, n := range nodes {
		if _, err := os.Stat("/sys/class/net/" + tunName(name, n)); err == nil {
			c.t.Errorf("veth host end %s of node %s left behind", tunName(name, n), n)
		}
	}
	for _, d := range cgroupDirs(name) {
		if _, err := os.Stat(d); err == nil {
			c.t.Errorf("cgroup %s left behind", d)
		}
	}
	if _, err := os.Stat(filepath.Join(c.state, name)); err == nil {
		c.t.Errorf("state dir entry %s left behind", filepath.Join(c.state, name))
	}
	for _, pid := range pids {
		deadline := time.Now().Add(10 * time.Second)
		for !processGone(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !processGone(pid) {
			_, comm := procStat(pid)
			c.t.Errorf("process %d (%s) still running", pid, comm)
		}
	}
}

// helpCommands lists the subcommands in a help text's command sections: "Available Commands:"
// or, where commands are grouped, every group's heading ("Engine commands (...):", "System kv:")
// up to "Flags:". Only headings after "Usage:" count: the description above it is free text.
func helpCommands(help string) []string {
	var out []string
	_, rest, ok := strings.Cut("\n"+help, "\nUsage:\n")
	if !ok {
		return nil
	}
	in := false
	for _, line := range strings.Split(rest, "\n") {
		switch {
		case line == "":
			in = false
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			in = line != "Usage:" && line != "Examples:" && !strings.HasSuffix(line, "Flags:") &&
				line != "Aliases:" && line != "Additional help topics:"
		case in:
			if f := strings.Fields(line); len(f) > 0 {
				out = append(out, f[0])
			}
		}
	}
	return out
}

func TestVersionAndHelp(t *testing.T) {
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "continuum ") {
		t.Errorf("continuum version = %q, %v; want a line starting with \"continuum \"", out, err)
	}
	out, err = exec.Command(bin, "--help").Output()
	if err != nil {
		t.Fatalf("continuum --help: %v", err)
	}
	top := helpCommands(string(out))
	for _, want := range []string{"testbed", "run", "report"} {
		if !contains(top, want) {
			t.Errorf("continuum --help lists %v, missing %q", top, want)
		}
	}
	// Every command, walked from the top, shows an example. Cobra's own generated commands
	// ("help", "completion") are not ours to document.
	var walk func(path []string)
	walk = func(path []string) {
		args := append([]string{"help"}, path...)
		help, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Errorf("continuum %s: %v", strings.Join(args, " "), err)
			return
		}
		if !strings.Contains(string(help), "Example") {
			t.Errorf("`continuum %s` shows no Example:\n%s", strings.Join(args, " "), help)
		}
		for _, sub := range helpCommands(string(help)) {
			if sub == "help" || sub == "completion" {
				continue
			}
			walk(append(append([]string{}, path...), sub))
		}
	}
	for _, c := range top {
		if c == "help" || c == "completion" {
			continue
		}
		walk([]string{c})
	}
	// The testbed subcommands the docs promise are all there.
	out, _ = exec.Command(bin, "help", "testbed").Output()
	subs := helpCommands(string(out))
	for _, want := range []string{"up", "down", "status", "exec", "fault", "start", "stop"} {
		if !contains(subs, want) {
			t.Errorf("continuum help testbed lists %v, missing %q", subs, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTestbedUpExecStatusDown(t *testing.T) {
	requireRoot(t)
	c := newCLI(t)
	name := c.up("ued", `
nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 10ms}]
`)
	c.checkMedianRTT(name, "a", "b", 20, 1)
	for _, n := range []string{"a", "b"} {
		if out := c.must("testbed", "exec", "--name", name, n, "--", "hostname"); strings.TrimSpace(out) != n {
			t.Errorf("hostname inside node %s = %q", n, out)
		}
	}
	// exec passes on the command's exit status.
	if _, _, err := c.run("testbed", "exec", "--name", name, "a", "--", "sh", "-c", "exit 7"); exitStatus(err) != 7 {
		t.Errorf("exec of `exit 7`: %v, want exit status 7", err)
	}
	st := c.status(name)
	if st.Name != name || len(st.Nodes) != 2 || len(st.Links) != 1 || st.PID <= 0 {
		t.Fatalf("status --json: %+v; want 2 nodes, 1 link and the daemon pid", st)
	}
	if st.Nodes[0].Netns != "ctm-"+name+"-a" || st.Nodes[1].Netns != "ctm-"+name+"-b" {
		t.Errorf("node namespaces %q, %q; want ctm-%s-a, ctm-%s-b", st.Nodes[0].Netns, st.Nodes[1].Netns, name, name)
	}
	if !st.Links[0].Up || st.Links[0].Delay != "10ms" {
		t.Errorf("link: %+v, want up with delay 10ms", st.Links[0])
	}
	if out := c.must("testbed", "status"); !strings.Contains(out, name) {
		t.Errorf("testbed status does not list %s:\n%s", name, out)
	}
	// A second testbed with the same name is refused.
	f := c.writeFile("dup.yaml", "nodes: [{name: a}]\n")
	if _, errOut, err := c.run("testbed", "up", "-f", f, "--name", name); err == nil || !strings.Contains(errOut, "already exists") {
		t.Errorf("second up with name %s: %v, stderr %q; want an 'already exists' error", name, err, errOut)
	}

	// Everything exists while the testbed is up (so the absence checks below mean something).
	if _, err := os.Stat("/etc/netns/ctm-" + name + "-a"); err != nil {
		t.Errorf("/etc/netns/ctm-%s-a missing while up: %v", name, err)
	}
	for _, d := range cgroupDirs(name) {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("cgroup %s missing while up: %v", d, err)
		}
	}
	out := c.must("testbed", "down", "--name", name)
	if !strings.Contains(out, "removed testbed "+name) {
		t.Errorf("down printed %q", out)
	}
	c.assertNothingLeft(name, []string{"a", "b"}, st.PID)
	if out := c.must("testbed", "status"); !strings.Contains(out, "no testbeds") {
		t.Errorf("status after down:\n%s", out)
	}
}

func TestTestbedFaultsFromCLI(t *testing.T) {
	requireRoot(t)
	c := newCLI(t)
	name := c.up("flt", `
nodes: [{name: a}, {name: b}, {name: c}]
links:
  - {between: [a, b], delay: 10ms}
  - {between: [b, c], delay: 1ms}
`)
	fault := func(args ...string) string {
		t.Helper()
		return c.must(append([]string{"testbed", "fault", "--name", name}, args...)...)
	}
	if !c.reachable(name, "a", "b") {
		t.Fatal("b unreachable from a before any fault")
	}

	t.Run("partition", func(t *testing.T) {
		for _, p := range [][]string{
			{"--node", "b"},
			{"--link", "a,b"},
			{"--groups", "a/b,c"},
		} {
			fault(append([]string{"partition"}, p...)...)
			if c.reachable(name, "a", "b") {
				t.Errorf("partition %v: a still reaches b", p)
			}
			if p[0] != "--node" && !c.reachable(name, "b", "c") {
				t.Errorf("partition %v: b no longer reaches c", p)
			}
			if st := c.status(name); len(st.Partitions) != 1 {
				t.Errorf("partition %v: status lists partitions %v, want one", p, st.Partitions)
			}
			fault("heal")
			if !c.reachable(name, "a", "b") {
				t.Errorf("after heal of %v: a does not reach b", p)
			}
			if st := c.status(name); len(st.Partitions) != 0 {
				t.Errorf("after heal of %v: partitions %v", p, st.Partitions)
			}
		}
	})

	t.Run("link", func(t *testing.T) {
		fault("link", "--link", "a,b", "--delay", "30ms")
		c.checkMedianRTT(name, "a", "b", 60, 1.5)
		fault("link", "--link", "b,a", "--delay", "10ms")
	})

	t.Run("pause-resume-kill", func(t *testing.T) {
		c.must("testbed", "start", "--name", name, "c", "--as", "sleeper", "--", "sleep", "1000")
		pid, state, _, _ := c.proc(name, "sleeper")
		if state != "running" || pid <= 0 {
			t.Fatalf("sleeper: pid %d state %s", pid, state)
		}
		// The launcher execs ip, which execs sleep: pause once it is sleep, so the stop hits it.
		testenv.Eventually(t, 10*time.Second, "sleeper to exec sleep", func() bool { st, comm := procStat(pid); return comm == "sleep" && st == 'S' })
		fault("pause", "--node", "c")
		testenv.Eventually(t, 5*time.Second, "state T after pause", func() bool { st, _ := procStat(pid); return st == 'T' })
		fault("resume", "--node", "c")
		testenv.Eventually(t, 5*time.Second, "state S after resume", func() bool { st, _ := procStat(pid); return st == 'S' })
		fault("kill", "--node", "c")
		testenv.Eventually(t, 10*time.Second, "sleeper exited after kill", func() bool {
			_, state, _, _ := c.proc(name, "sleeper")
			return state == "exited"
		})
		if _, state, sig, _ := c.proc(name, "sleeper"); state != "exited" || sig != "killed" {
			t.Errorf("after kill: state %q signal %q, want exited / killed", state, sig)
		}
		testenv.Eventually(t, 5*time.Second, "sleeper pid gone", func() bool { return processGone(pid) })
		c.must("testbed", "stop", "--name", name, "sleeper")
	})

	t.Run("cpu-restart", func(t *testing.T) {
		c.must("testbed", "start", "--name", name, "b", "--as", "busy", "--", "sh", "-c", "while :; do :; done")
		pid, _, _, _ := c.proc(name, "busy")
		fault("cpu", "--node", "b", "--cpus", "0.3")
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
			b, _ := os.ReadFile(nodeCgroupFile(name, "b", "cpu", "cpu.max"))
			if got := strings.TrimSpace(string(b)); got != "30000 100000" {
				t.Errorf("cpu.max = %q, want \"30000 100000\"", got)
			}
		} else {
			b, err := os.ReadFile(nodeCgroupFile(name, "b", "cpu", "cpu.cfs_quota_us"))
			if got := strings.TrimSpace(string(b)); err != nil || got != "30000" {
				t.Errorf("cpu.cfs_quota_us = %q (%v), want 30000", got, err)
			}
		}
		usage := func() time.Duration {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				b, _ := os.ReadFile(nodeCgroupFile(name, "b", "cpu", "cpu.stat"))
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
						n, _ := strconv.ParseInt(v, 10, 64)
						return time.Duration(n) * time.Microsecond
					}
				}
				t.Fatal("no usage_usec in cpu.stat")
			}
			b, err := os.ReadFile(nodeCgroupFile(name, "b", "cpuacct", "cpuacct.usage"))
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return time.Duration(n)
		}
		// Let the quota take hold for a period, then measure one second.
		time.Sleep(200 * time.Millisecond) // one CFS period plus margin, not a wait for an event
		u0, t0 := usage(), time.Now()
		time.Sleep(time.Second)
		u1, t1 := usage(), time.Now()
		cores := float64(u1-u0) / float64(t1.Sub(t0))
		t.Logf("busy loop under --cpus 0.3: %.3f cores", cores)
		if cores > 0.4 {
			t.Errorf("busy loop used %.2f cores under a 0.3 core quota", cores)
		}
		if cores < 0.05 {
			t.Errorf("busy loop used only %.3f cores: is it running?", cores)
		}
		fault("restart", "--component", "busy")
		npid, state, _, restarts := c.proc(name, "busy")
		if restarts != 1 || state != "running" || npid == pid {
			t.Errorf("after restart: restarts %d state %s pid %d (was %d); want 1, running, a new pid", restarts, state, npid, pid)
		}
		testenv.Eventually(t, 10*time.Second, "old busy pid gone", func() bool { return processGone(pid) })
		c.must("testbed", "stop", "--name", name, "busy")
		testenv.Eventually(t, 10*time.Second, "busy gone after stop", func() bool { return processGone(npid) })
		for _, p := range c.status(name).Procs {
			if p.Name == "busy" {
				t.Errorf("busy still listed after stop: %+v", p)
			}
		}
	})

	t.Run("bad-fault", func(t *testing.T) {
		for _, args := range [][]string{
			{"explode"},
			{"partition", "--node", "zz"},
			{"link", "--link", "a,c", "--delay", "5ms"},
			{"link", "--link", "a,b", "--delay", "5"},
		} {
			_, errOut, err := c.run(append([]string{"testbed", "fault", "--name", name}, args...)...)
			if err == nil || strings.TrimSpace(errOut) == "" {
				t.Errorf("fault %v: err %v, stderr %q; want an error message", args, err, errOut)
			}
		}
	})
}

func TestDownAllAfterDaemonSIGKILL(t *testing.T) {
	requireRoot(t)
	c := newCLI(t)
	name := c.up("k9", `
nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 1ms}]
`)
	c.must("testbed", "start", "--name", name, "b", "--as", "sleeper", "--", "sleep", "1000")
	st := c.status(name)
	if len(st.Procs) != 1 {
		t.Fatalf("processes: %+v", st.Procs)
	}
	comp := st.Procs[0].PID
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 daemon %d: %v", st.PID, err)
	}
	testenv.Eventually(t, 10*time.Second, "daemon gone", func() bool { return processGone(st.PID) })
	// The namespaces and the component outlive the daemon until `down --all`.
	if processGone(comp) {
		// Seen once in ~10 runs of make test (2026-11-27), not reproduced in 40 runs alone or
		// under two busy loops: say what the component said, for the next time.
		stderr, _ := os.ReadFile(filepath.Join(c.state, name, "logs", "b.sleeper.stderr.log"))
		t.Errorf("component %d died with the daemon; the test no longer checks its cleanup (its stderr: %q)", comp, stderr)
	}
	out := c.must("testbed", "down", "--all")
	if !strings.Contains(out, name) {
		t.Errorf("down --all printed %q, want it to name %s", out, name)
	}
	c.assertNothingLeft(name, []string{"a", "b"}, st.PID, comp)
	if entries, _ := os.ReadDir(c.state); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("state dir not empty after down --all: %v", names)
	}
}

const smallScenario = `version: 1
name: e2e-small
duration: 4s
topology:
  nodes: [{name: client}, {name: server}]
  links: [{between: [client, server], delay: 5ms}]
components:
  - {name: echo, kind: http-echo, node: server}
workloads:
  - name: load
    kind: http-load
    node: client
    config:
      rate: 20
      timeout: 1s
      targets: [{name: echo, component: echo}]
`

// runJSON mirrors run.json.
type runJSON struct {
	ID      string            `json:"id"`
	Params  map[string]string `json:"params"`
	Status  string            `json:"status"`
	Error   string            `json:"error"`
	Testbed string            `json:"testbed"`
	// Instances name the run's kinds, which decide the report's system sections.
	Instances []struct {
		Name, Kind, Node string
	} `json:"instances"`
}

// resultsDir returns the only results directory under out.
func resultsDir(t *testing.T, out string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(m) != 1 {
		t.Fatalf("want one results dir in %s, got %v", out, m)
	}
	return m[0]
}

func readRun(t *testing.T, dir, id string) runJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs", id, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r runJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("run.json: %v", err)
	}
	return r
}

// runTestbed waits for the testbed a `continuum run` creates in the state dir and returns its
// name and status once its components and workloads are up.
func (c *binRunner) runTestbed(t *testing.T, procs int, exited <-chan struct{}) (string, statusJSON) {
	t.Helper()
	var name string
	var st statusJSON
	testenv.Eventually(t, 60*time.Second, "the run's testbed with its processes", func() bool {
		select {
		case <-exited:
			t.Fatal("continuum run exited before its testbed was up")
		default:
		}
		entries, _ := os.ReadDir(c.state)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			out, _, err := c.run("testbed", "status", "--name", e.Name(), "--json")
			if err != nil {
				continue
			}
			var s statusJSON
			if json.Unmarshal([]byte(out), &s) != nil || len(s.Procs) < procs {
				continue
			}
			started := true
			for _, p := range s.Procs {
				started = started && p.PID > 0 && p.State == "running"
			}
			if started {
				name, st = e.Name(), s
				return true
			}
		}
		return false
	})
	return name, st
}

func TestRunCleansUp(t *testing.T) {
	requireRoot(t)
	c := newCLI(t)
	scenario := c.writeFile("small.yaml", smallScenario)
	nodes := []string{"client", "server"}

	t.Run("complete", func(t *testing.T) {
		out := filepath.Join(c.dir, "out-complete")
		stdout, stderr, err := c.run("run", scenario, "--out", out)
		if err != nil {
			t.Fatalf("continuum run: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
		}
		dir := resultsDir(t, out)
		for _, f := range []string{"report.html", "summary.json", "summary.md", "scenario.yaml", "environment.json",
			"runs/001/run.json", "runs/001/events.csv", "runs/001/samples.csv",
			"runs/001/workloads/load/stats.json", "runs/001/workloads/load/timeseries.csv"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("results: %v", err)
			}
		}
		if !strings.Contains(stdout, filepath.Join(dir, "report.html")) {
			t.Errorf("stdout does not say where the report is:\n%s", stdout)
		}
		r := readRun(t, dir, "001")
		if r.Status != "ok" || r.Testbed == "" {
			t.Errorf("run.json: %+v, want status ok and the testbed name", r)
		}
		if len(r.Instances) != 2 || r.Instances[0].Kind != "http-echo" || r.Instances[1].Kind != "http-load" {
			t.Errorf("run.json instances %+v, want echo (http-echo) and load (http-load)", r.Instances)
		}
		// Only the sections of systems that ran: an HTTP echo and load has none of the NPM
		// platform's, IoT's or the proxy's (its QoS table needs a QoS latency), while the
		// report's own sections are there.
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"shareddata", "iot", "faas", "proxy"} {
			if strings.Contains(string(page), `<section id="`+id+`"`) {
				t.Errorf("report.html has the %q section of a system that did not run", id)
			}
		}
		if !strings.Contains(string(page), `id="run-001"`) {
			t.Error("report.html has no section for run 001")
		}
		var sum struct {
			Runs []struct {
				Status  string                        `json:"status"`
				Metrics map[string]map[string]float64 `json:"metrics"`
			} `json:"runs"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err := json.Unmarshal(b, &sum); err != nil || len(sum.Runs) != 1 {
			t.Fatalf("summary.json: %v\n%s", err, b)
		}
		// 20 rps for 4 s with nothing going wrong.
		if v := sum.Runs[0].Metrics["load/echo/throughput_rps"]["value"]; v < 15 || v > 25 {
			t.Errorf("throughput %.1f rps, want ~20", v)
		}
		if v := sum.Runs[0].Metrics["load/echo/errors"]["value"]; v != 0 {
			t.Errorf("errors %v, want 0", v)
		}
		c.assertNothingLeft(r.Testbed, nodes)
	})

	t.Run("interrupt", func(t *testing.T) {
		out := filepath.Join(c.dir, "out-interrupt")
		cmd := c.command("run", scenario, "--out", out, "--set", "duration=30s")
		var stdout, stderr testenv.SyncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var werr error
		go func() { werr = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		tbName, st := c.runTestbed(t, 2, exited)
		testenv.Eventually(t, 20*time.Second, `"running" progress on stderr`, func() bool { return strings.Contains(stderr.String(), "running") })
		sent := time.Now()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("continuum run still running 30 s after SIGINT\nstderr: %s", stderr.String())
		}
		t.Logf("run exited %v after SIGINT: %v", time.Since(sent).Round(time.Millisecond), werr)
		if werr == nil {
			t.Errorf("interrupted run exited 0; want a non-zero status")
		}
		if !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
		}
		dir := resultsDir(t, out)
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
			t.Errorf("report of the interrupted run: %v", err)
		}
		if r := readRun(t, dir, "001"); r.Status != "interrupted" || r.Testbed != tbName {
			t.Errorf("run.json: %+v, want status interrupted on testbed %s", r, tbName)
		}
		if _, err := os.Stat(filepath.Join(dir, "runs/001/workloads/load/stats.json")); err != nil {
			t.Errorf("the workload's measurements so far were not kept: %v", err)
		}
		var pids []int
		for _, p := range st.Procs {
			pids = append(pids, p.PID)
		}
		c.assertNothingLeft(tbName, nodes, pids...)
	})

	t.Run("sigkill", func(t *testing.T) {
		out := filepath.Join(c.dir, "out-kill")
		cmd := c.command("run", scenario, "--out", out, "--set", "duration=30s")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		tbName, st := c.runTestbed(t, 2, exited)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-exited
		var pids []int
		for _, p := range st.Procs {
			pids = append(pids, p.PID)
		}
		// The components and workloads outlive the killed runner until `down --all`.
		for _, pid := range pids {
			if processGone(pid) {
				t.Errorf("process %d died with the runner; the test no longer checks its cleanup", pid)
			}
		}
		if out := c.must("testbed", "down", "--all"); !strings.Contains(out, tbName) {
			t.Errorf("down --all printed %q, want it to name %s", out, tbName)
		}
		c.assertNothingLeft(tbName, nodes, pids...)
	})
}

func TestInvalidInputsStartNothing(t *testing.T) {
	c := newCLI(t)
	validScenario := smallScenario
	cases := []struct {
		name, file, text string
		want             []string // substrings of stderr; FILE is replaced by the file's base name
	}{
		{"topology-unknown-field", "topo-field.yaml",
			"nodes: [{name: a}, {name: b}]\nlinks:\n  - {between: [a, b], delay: 10ms, dealy: 3ms}\n",
			[]string{"FILE:3:", `unknown field "dealy"`, "allowed: between, delay, jitter, loss, bandwidth"}},
		{"topology-bad-unit", "topo-unit.yaml",
			"nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, b]\n    delay: 10\n",
			[]string{"FILE:4:", "delay", "ms"}},
		{"topology-unknown-node", "topo-node.yaml",
			"nodes: [{name: a}, {name: b}]\nlinks:\n  - between: [a, c]\n",
			[]string{"FILE:3:", `"c"`, "nodes: a, b"}},
		{"scenario-unknown-kind", "sc-kind.yaml",
			strings.Replace(validScenario, "kind: http-echo", "kind: http-ecko", 1),
			[]string{"FILE:8:", `"http-ecko"`, "http-echo"}},
		{"scenario-unknown-node", "sc-node.yaml",
			strings.Replace(validScenario, "node: server}", "node: edge9}", 1),
			[]string{"FILE:8:", `"edge9"`, "nodes: client, server"}},
		{"scenario-bad-action", "sc-action.yaml",
			validScenario + "events:\n  - {at: 1s, action: explode}\n",
			[]string{"FILE:18:", `"explode"`, "partition, heal, link, kill, pause, resume, cpu, restart, set"}},
		{"scenario-wrong-type", "sc-type.yaml",
			strings.Replace(validScenario, "rate: 20", "rate: fast", 1),
			[]string{"FILE:14:", "rate", "number"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := c.writeFile(tc.file, tc.text)
			var args []string
			if strings.HasPrefix(tc.name, "topology") {
				args = []string{"testbed", "up", "-f", f, "--name", uniqueName("bad")}
			} else {
				args = []string{"run", f, "--out", filepath.Join(c.dir, "out-"+tc.name)}
			}
			stdout, stderr, err := c.run(args...)
			if err == nil {
				t.Fatalf("continuum %s succeeded on an invalid input\nstdout: %s", strings.Join(args, " "), stdout)
			}
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "FILE", tc.file)
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if entries, _ := os.ReadDir(c.state); len(entries) != 0 {
				t.Errorf("state dir not empty after a refused %s: %d entries", args[0], len(entries))
			}
			if _, err := os.Stat(filepath.Join(c.dir, "out-"+tc.name)); err == nil {
				t.Errorf("results dir created for an invalid scenario")
			}
		})
	}
}
