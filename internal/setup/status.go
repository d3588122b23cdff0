package setup

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/tools"
)

// StackStatus is what is installed of one stack.
type StackStatus struct {
	Stack
	MissingApt   []string // Debian packages not installed
	MissingTools []string // .tools paths found neither in a clone nor in the cache
	// Where are the cache entries (or, outside the cache, the paths) its tools were found in;
	// Bytes is their size on disk (0 when nothing was found).
	Where []string
	Bytes int64
}

// Installed reports whether nothing of the stack is missing.
func (s StackStatus) Installed() bool { return len(s.MissingApt) == 0 && len(s.MissingTools) == 0 }

// Missing says what is missing, for a message: "Debian packages maven; .tools/kafka/libs".
func (s StackStatus) Missing() string {
	var parts []string
	if len(s.MissingApt) > 0 {
		parts = append(parts, "Debian packages "+strings.Join(s.MissingApt, " "))
	}
	for _, t := range s.MissingTools {
		parts = append(parts, ".tools/"+t)
	}
	return strings.Join(parts, "; ")
}

// Checker finds what is installed. The zero value checks this host: dpkg's database and the
// tools Finder of this process.
type Checker struct {
	Finder tools.Finder
	// Dpkg reports which of the packages are installed; nil: dpkg-query.
	Dpkg func(pkgs []string) map[string]bool
	// Sizes has Status add up the size of what it found (a walk of gigabytes of venv: for
	// `setup --status`, not for a command checking that it can start).
	Sizes bool
}

// DefaultChecker checks this host from this process.
func DefaultChecker() Checker { return Checker{Finder: tools.Default()} }

// Status reports on each stack.
func (c Checker) Status(stacks []Stack) []StackStatus {
	var all []string
	for _, s := range stacks {
		all = append(all, s.Apt...)
	}
	dpkg := c.Dpkg
	if dpkg == nil {
		dpkg = DpkgInstalled
	}
	have := dpkg(all)
	out := make([]StackStatus, 0, len(stacks))
	for _, s := range stacks {
		st := StackStatus{Stack: s}
		for _, p := range s.Apt {
			if !have[p] {
				st.MissingApt = append(st.MissingApt, p)
			}
		}
		seen := map[string]bool{}
		for _, t := range s.Tools {
			p, ok := c.Finder.Find(t)
			if !ok {
				st.MissingTools = append(st.MissingTools, t.Path)
				continue
			}
			entry := c.cacheEntry(p)
			if !seen[entry] {
				seen[entry] = true
				st.Where = append(st.Where, entry)
				if c.Sizes {
					st.Bytes += diskUsage(entry)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// Missing returns the stacks of names (stack names or aliases) that are not installed.
func (c Checker) Missing(names []string) ([]StackStatus, error) {
	stacks, err := Resolve(names)
	if err != nil {
		return nil, err
	}
	var out []StackStatus
	for _, st := range c.Status(stacks) {
		if !st.Installed() {
			out = append(out, st)
		}
	}
	return out, nil
}

// cacheEntry is the setup cache's directory holding p (symlinks resolved): <cache>/etcd-<key>
// for <cache>/etcd-<key>/etcd. A path outside the cache is its own entry.
func (c Checker) cacheEntry(p string) string {
	// The directory's links first: a venv's bin/python is itself a link out of the venv (to
	// /usr/bin/python3.11), while .tools/bin/etcd is a link into the cache.
	var cands []string
	if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		cands = append(cands, filepath.Join(d, filepath.Base(p)))
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		cands = append(cands, r)
	}
	if len(cands) == 0 {
		return p
	}
	if c.Finder.Cache != "" {
		root, err := filepath.EvalSymlinks(c.Finder.Cache)
		if err != nil {
			root = c.Finder.Cache
		}
		for _, r := range cands {
			if rel, err := filepath.Rel(root, r); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				return filepath.Join(root, strings.SplitN(rel, string(filepath.Separator), 2)[0])
			}
		}
	}
	return cands[0]
}

// diskUsage is the space the files under p take (allocated blocks; a file with several links
// is counted once).
func diskUsage(p string) int64 {
	var n int64
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil {
			return nil
		}
		if st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		n += st.Blocks * 512
		return nil
	})
	return n
}

// DpkgInstalled asks dpkg which of pkgs are installed ("install ok installed"). Without dpkg
// (not Debian) it reports none.
func DpkgInstalled(pkgs []string) map[string]bool {
	have := map[string]bool{}
	if len(pkgs) == 0 {
		return have
	}
	out, _ := exec.Command("dpkg-query", append([]string{"-W", "-f=${Package} ${Status}\n"}, pkgs...)...).Output()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, status, _ := strings.Cut(sc.Text(), " ")
		if status == "install ok installed" {
			have[strings.SplitN(name, ":", 2)[0]] = true
		}
	}
	return have
}

// Host is the facts about this machine that decide what Continuum can do on it.
type Host struct {
	OS, Kernel string
	Cores      int
	MemoryMiB  int64
	Cgroup     string // "v2", "v1" or "none"
	Netem      bool   // the kernel's sch_netem is available (the fabric emulates links either way)
	Cache      string // the setup cache
	FreeBytes  int64  // free space where the cache is
	Go         string // the go on PATH, "" if none
	Node       string // node --version, "" if none
}

// HostFacts reads them.
func HostFacts(cache string) Host {
	h := Host{Cores: runtime.NumCPU(), Cache: cache, Cgroup: "none", OS: runtime.GOOS}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				h.OS = strings.Trim(v, `"`)
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemoryMiB = int64(si.Totalram) * int64(si.Unit) / mib
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		h.Cgroup = "v2"
	} else if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
		h.Cgroup = "v1 (hybrid: v2 mounted at /sys/fs/cgroup/unified)"
	} else if _, err := os.Stat("/sys/fs/cgroup/cpu"); err == nil {
		h.Cgroup = "v1"
	}
	h.Netem = netemAvailable(h.Kernel)
	for d := cache; d != "" && d != filepath.Dir(d); d = filepath.Dir(d) {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil {
			h.FreeBytes = int64(st.Bavail) * int64(st.Bsize)
			break
		}
	}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		h.Go = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		h.Node = strings.TrimSpace(string(out))
	}
	return h
}

// netemAvailable reports whether sch_netem is loaded, built in, or a module of this kernel.
func netemAvailable(kernel string) bool {
	if _, err := os.Stat("/sys/module/sch_netem"); err == nil {
		return true
	}
	for _, f := range []string{"modules.builtin", "modules.dep"} {
		b, err := os.ReadFile(filepath.Join("/lib/modules", kernel, f))
		if err == nil && bytes.Contains(b, []byte("/sch_netem.ko")) {
			return true
		}
	}
	return false
}
