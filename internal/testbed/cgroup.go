package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroups drives the node and component cgroups on either cgroup v1 (one hierarchy per
// controller, as on this project's machines) or v2 (one unified hierarchy, common elsewhere).
// Paths are relative to the hierarchy root, e.g. "continuum/lab/edge/echo".
type cgroups struct {
	v2     bool
	root   string            // v2: the unified mount
	mounts map[string]string // v1: controller -> mount point
}

// v1Controllers are the hierarchies a node needs on cgroup v1.
var v1Controllers = []string{"cpu", "cpuacct", "memory", "pids"}

func detectCgroups() (*cgroups, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return &cgroups{v2: true, root: "/sys/fs/cgroup"}, nil
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cg := &cgroups{mounts: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mountinfo: ... mountpoint ... - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(fields) || fields[sep+1] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(fields[sep+3], ",") {
			for _, c := range v1Controllers {
				if opt == c {
					cg.mounts[c] = fields[4]
				}
			}
		}
	}
	for _, c := range []string{"cpu", "cpuacct", "memory"} {
		if cg.mounts[c] == "" {
			return nil, fmt.Errorf("cgroup v1 controller %q is not mounted (need cpu, cpuacct, memory; or cgroup v2)", c)
		}
	}
	return cg, nil
}

// dirs returns the directories that make up cgroup path in every hierarchy.
func (cg *cgroups) dirs(path string) []string {
	if cg.v2 {
		return []string{filepath.Join(cg.root, path)}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range v1Controllers {
		m := cg.mounts[c]
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, filepath.Join(m, path))
	}
	return out
}

func (cg *cgroups) ctrlDir(ctrl, path string) string {
	if cg.v2 {
		return filepath.Join(cg.root, path)
	}
	return filepath.Join(cg.mounts[ctrl], path)
}

// create makes the cgroup; on v2 it first enables the cpu, memory and pids controllers for the
// children of every ancestor (v2 only lets a cgroup use what its parent delegates).
func (cg *cgroups) create(path string) error {
	if cg.v2 {
		parts := strings.Split(path, "/")
		dir := cg.root
		for _, p := range parts {
			if err := enableV2Controllers(dir); err != nil {
				return err
			}
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
		}
		return nil
	}
	for _, d := range cg.dirs(path) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
	}
	return nil
}

func enableV2Controllers(dir string) error {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	var want []string
	for _, c := range strings.Fields(string(avail)) {
		if c == "cpu" || c == "memory" || c == "pids" {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: enable %v: %w", dir, want, err)
	}
	return nil
}

// setCPU limits the cgroup to cores CPUs (0 = unlimited) with a 100 ms CFS period.
func (cg *cgroups) setCPU(path string, cores float64) error {
	const period = 100000
	quota := int64(cores * period)
	if cores > 0 && quota < 1000 {
		quota = 1000 // the kernel's minimum quota
	}
	if cg.v2 {
		v := "max " + strconv.Itoa(period)
		if cores > 0 {
			v = fmt.Sprintf("%d %d", quota, period)
		}
		return writeCg(cg.ctrlDir("cpu", path), "cpu.max", v)
	}
	if err := writeCg(cg.ctrlDir("cpu", path), "cpu.cfs_period_us", strconv.Itoa(period)); err != nil {
		return err
	}
	if cores <= 0 {
		quota = -1
	}
	return writeCg(cg.ctrlDir("cpu", path), "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
}

// setMemory limits memory to bytes (0 = unlimited).
func (cg *cgroups) setMemory(path string, bytes int64) error {
	if cg.v2 {
		v := "max"
		if bytes > 0 {
			v = strconv.FormatInt(bytes, 10)
		}
		return writeCg(cg.ctrlDir("memory", path), "memory.max", v)
	}
	v := "-1"
	if bytes > 0 {
		v = strconv.FormatInt(bytes, 10)
	}
	return writeCg(cg.ctrlDir("memory", path), "memory.limit_in_bytes", v)
}

// cpuUsage is the cumulative CPU time of the cgroup and its children.
func (cg *cgroups) cpuUsage(path string) (time.Duration, error) {
	if cg.v2 {
		v, err := readStat(filepath.Join(cg.ctrlDir("cpu", path), "cpu.stat"), "usage_usec")
		return time.Duration(v) * time.Microsecond, err
	}
	b, err := os.ReadFile(filepath.Join(cg.ctrlDir("cpuacct", path), "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(v), err
}

// rss is the resident anonymous memory of the cgroup and its children (page cache excluded, so
// that a data-heavy component is not charged for the kernel's caching of its files).
func (cg *cgroups) rss(path string) (int64, error) {
	if cg.v2 {
		return readStat(filepath.Join(cg.ctrlDir("memory", path), "memory.stat"), "anon")
	}
	return readStat(filepath.Join(cg.ctrlDir("memory", path), "memory.stat"), "total_rss")
}

// join moves pid into the cgroup in every hierarchy.
func (cg *cgroups) join(path string, pid int) error {
	for _, d := range cg.dirs(path) {
		if err := writeCg(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// procs lists the pids in the cgroup and all its descendants (from the cpu hierarchy, which
// every process of a node joins).
func (cg *cgroups) procs(path string) ([]int, error) {
	root := cg.ctrlDir("cpu", path)
	var pids []int
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil // raced with removal
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	sort.Ints(pids)
	return pids, err
}

// signal sends sig to every process in the cgroup tree, repeating until no new process shows up,
// so that children forked while signalling are not missed.
func (cg *cgroups) signal(path string, sig syscall.Signal) (int, error) {
	done := map[int]bool{}
	for round := 0; round < 10; round++ {
		pids, err := cg.procs(path)
		if err != nil {
			return len(done), err
		}
		fresh := 0
		for _, pid := range pids {
			if !done[pid] {
				done[pid] = true
				fresh++
				_ = syscall.Kill(pid, sig)
			}
		}
		if fresh == 0 {
			break
		}
	}
	return len(done), nil
}

// remove kills what is left in the tree and removes the cgroups bottom-up, retrying while the
// kernel is still reaping the killed processes.
func (cg *cgroups) remove(path string) error {
	var last error
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _ = cg.signal(path, syscall.SIGKILL)
		last = nil
		for _, d := range cg.dirs(path) {
			if err := removeTree(d); err != nil {
				last = err
			}
		}
		if last == nil || time.Now().After(deadline) {
			return last
		}
		time.Sleep(20 * time.Millisecond) // the kernel reaps asynchronously; poll with a deadline
	}
}

// removeTree rmdirs a cgroup directory and its descendants, deepest first (cgroupfs directories
// cannot be removed with their pseudo-files, only with rmdir).
func removeTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("rmdir %s: %w", dirs[i], err)
		}
	}
	return nil
}

func writeCg(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup write %s=%s: %w", filepath.Join(dir, file), value, err)
	}
	return nil
}

func readStat(file, key string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %q", file, key)
}
