package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
	"github.com/continuum-project/continuum/internal/testbed"
)

// sweep removes what a cluster whose state directory is dir left on the host, whether its
// supervisor shut down in order or was killed: pods (through CRI, so that the CNI plugins
// release their addresses and rules), processes, kubelet's stale device plugin socket, mounts,
// kubelet's links to container logs, a multi-node cluster's testbed (its namespaces, links and cgroups), cgroups, the bridge, the
// iptables and nftables rules, and the sysctls it changed. Each step runs even if an earlier one
// failed; the errors are joined. The state directory itself is removed last, only if all went
// well.
//
// A multi-node cluster's pods and daemons live in its testbed's namespaces and cgroups, with
// their files and mounts in the state directory as the one-node cluster's: the same steps
// remove them, node by node, and the testbed goes once nothing runs in it any more. What
// kubelet and kube-proxy change in a node's namespace (rules, forwarding) goes with the
// namespace; the kernel tunables kubelet sets are the host's and are restored here.
func sweep(ctx context.Context, st *state) error {
	p := paths{st.Config.StateDir}
	var errs []error
	note := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, n := range st.nodes() {
		what := "remove pods"
		if st.Testbed != nil {
			what += " of node " + n.Name
		}
		note(what, removePods(ctx, n.paths().containerdSock()))
	}
	note("stop processes", killProcesses(p.root, st.cgroupTree()))
	note("remove kubelet's device plugin socket", removeStaleKubeletSocket())
	note("unmount", unmountUnder(p.root))
	note("remove container log links", removeContainerLogLinks(p.root))
	if st.Testbed != nil {
		note("remove testbed "+st.Testbed.Name, removeTestbed(st.Testbed))
	}
	note("remove cgroups", removeCgroups(st.cgroupTree()))
	note("remove directories", removeCreated(st.Created))
	if st.Testbed == nil {
		note("remove bridge", removeBridge(st.Config.Bridge))
		note("remove kube-proxy rules", cleanupKubeProxy(st.Config.BinDir, p))
	}
	note("remove iptables chains", removeNewChains(st.Chains))
	note("remove nftables tables", removeNewTables(st.Tables))
	note("restore sysctls", restoreSysctls(st.Sysctls))
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.RemoveAll(p.root)
}

// removeTestbed removes a multi-node cluster's testbed as `continuum testbed down --name`
// does, if it is still there (`testbed down --all` may have removed it first).
func removeTestbed(ref *testbedRef) error {
	all, err := testbed.List(ref.StateDir)
	if err != nil {
		return err
	}
	for _, tb := range all {
		if tb.Name == ref.Name {
			return testbed.Destroy(ref.StateDir, ref.Name)
		}
	}
	return nil
}

// removeCreated removes the directories of dirs (recorded as missing before Up) that are
// empty, deepest first; one that holds something (another testbed's cgroup under continuum/,
// say) stays.
func removeCreated(dirs []string) error {
	sorted := slices.Clone(dirs)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	var errs []error
	for _, d := range sorted {
		err := syscall.Rmdir(d)
		switch {
		case err == nil, errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.EEXIST):
		default:
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// removePods stops and removes every pod sandbox through containerd's CRI, if containerd still
// answers: stopping a sandbox runs the CNI DEL that frees its address and port mappings.
func removePods(ctx context.Context, sock string) error {
	if _, err := os.Stat(sock); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	probe, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	list, err := rt.ListPodSandbox(probe, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil // containerd is gone: its pods' processes and mounts are swept below
	}
	var errs []error
	for _, s := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop pod %s/%s: %w", s.Metadata.GetNamespace(), s.Metadata.GetName(), err))
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove pod %s/%s: %w", s.Metadata.GetNamespace(), s.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// killProcesses kills every process that belongs to the cluster: its daemons and containerd's
// shims (isDaemon) and the processes in its cgroup subtree cgroup (the containers; in a
// multi-node cluster everything in its testbed). Shims are killed before containers' processes are collected, so that none is
// restarted meanwhile; it retries until none is left or 30 s have passed.
func killProcesses(root, cgroup string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := clusterPIDs(root, cgroup)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still running after 30 s: %v", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func clusterPIDs(root, cgroup string) []int {
	seen := map[int]bool{}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || isZombie(pid) {
			continue
		}
		if isDaemon(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), root) {
			seen[pid] = true
		}
	}
	for _, dir := range cgroupDirs(cgroup) {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != self && !isZombie(pid) {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// unmountUnder detaches every mount at or below dir, deepest first: containers' root
// filesystems, network namespaces, kubelet's volumes (tmpfs for Secrets and tokens).
func unmountUnder(dir string) error {
	var errs []error
	for range 3 { // a mount can hide another at the same point
		mounts, err := mountPoints()
		if err != nil {
			return err
		}
		var ours []string
		for _, m := range mounts {
			if under(m, dir) {
				ours = append(ours, m)
			}
		}
		if len(ours) == 0 {
			return nil
		}
		sort.Slice(ours, func(i, j int) bool { return len(ours[i]) > len(ours[j]) })
		errs = errs[:0]
		for _, m := range ours {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("%s: %w", m, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists the mount points of this mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDirs is path in every mounted cgroup hierarchy (v1's, or v2's unified one).
func cgroupDirs(path string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, x := range fields {
			if x == "-" && i+1 < len(fields) && (fields[i+1] == "cgroup" || fields[i+1] == "cgroup2") {
				out = append(out, filepath.Join(fields[4], path))
			}
		}
	}
	return out
}

// removeCgroups removes the cgroup subtree path in every hierarchy, deepest first (a cgroup
// can only be removed once it has no children and no processes).
func removeCgroups(path string) error {
	var errs []error
	for _, dir := range cgroupDirs(path) {
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeBridge deletes the pods' bridge and any interface still attached to it.
func removeBridge(name string) error {
	br, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			_ = netlink.LinkDel(l)
		}
	}
	return netlink.LinkDel(br)
}

// cleanupKubeProxy runs kube-proxy's own cleanup, which removes the rules of every mode it has
// (its nftables tables, and iptables chains of older modes).
func cleanupKubeProxy(binDir string, p paths) error {
	bin := filepath.Join(binDir, "kube-proxy")
	if _, err := os.Stat(bin); err != nil {
		return nil
	}
	out, err := exec.Command(bin, "--cleanup", "--v=0").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// makeCgroups creates cgroup path in every hierarchy, as kubelet wants its cgroup root to
// exist in each it uses. On v1 a new cpuset has no CPUs and no memory nodes until given its
// parent's, and a cpuset without them takes no process: every level on the path that has none
// gets its parent's, top down.
func makeCgroups(path string) error {
	for _, dir := range cgroupLevels(path) {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			cur, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				break // not the cpuset hierarchy
			}
			if strings.TrimSpace(string(cur)) != "" {
				continue
			}
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// cgroupLevels are the directories of cgroup path and of each of its ancestors below the
// root, in every hierarchy, each before its children.
func cgroupLevels(path string) []string {
	var out []string
	for _, root := range cgroupDirs("/") {
		dir := root
		for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
			dir = filepath.Join(dir, part)
			out = append(out, dir)
		}
	}
	return out
}

// missingCgroups are the levels of cgroup path (cgroupLevels) that do not exist yet.
func missingCgroups(path string) []string {
	var out []string
	for _, d := range cgroupLevels(path) {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}

// daemons are the programs a cluster runs on the host; `continuum` only as the kv member, not as
// `continuum cluster ...` (the supervisor, which Down stops by signal, or the command running
// Down itself).
var daemons = map[string]bool{"containerd": true, "containerd-shim-runc-v2": true, "kubelet": true,
	"kube-proxy": true, "coredns": true, "kube-apiserver": true, "kube-controller-manager": true,
	"kube-scheduler": true, "etcd": true}

// isDaemon reports whether argv is one of the cluster's daemons: a daemon program with an
// argument inside the state directory root (its config, data dir or containerd's socket).
func isDaemon(argv []string, root string) bool {
	if len(argv) == 0 {
		return false
	}
	name := filepath.Base(argv[0])
	if !daemons[name] && !isStore(argv) {
		return false
	}
	for _, arg := range argv[1:] {
		if strings.Contains(arg, root+"/") || strings.HasSuffix(arg, "="+root) || arg == root {
			return true
		}
	}
	return false
}

// isStore reports whether argv is a member of a registered control-plane store (a continuum kv
// member runs as the continuum binary, which names no daemon of its own).
func isStore(argv []string) bool {
	for _, st := range clusterstore.All() {
		if st.Is(argv) {
			return true
		}
	}
	return false
}
