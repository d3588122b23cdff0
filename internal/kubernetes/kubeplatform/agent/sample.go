package agent

import (
	"bufio"
	"bytes"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/continuum-project/continuum/internal/procstat"
)

func (s *server) handleSample(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, s.sample())
}

// proc is one process as /proc describes it.
type proc struct {
	pgrp int
	cpu  float64 // its own CPU time and that of the children it reaped
	rss  int64
}

// processes reads every process of the pod's PID namespace.
func processes() map[int]proc {
	out := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		pgrp, ok := statPgrp(b)
		if !ok {
			continue
		}
		cpu, _ := procstat.Parse(b, true)
		rss, _ := procstat.RSS(pid)
		out[pid] = proc{pgrp: pgrp, cpu: cpu, rss: rss}
	}
	return out
}

// statPgrp reads the process group (field 5) of /proc/PID/stat's text.
func statPgrp(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, false
	}
	n, err := strconv.Atoi(f[2])
	return n, err == nil
}

func (s *server) sample() Sample {
	procs := processes()
	byGroup := map[int]proc{}
	var all proc
	for _, p := range procs {
		g := byGroup[p.pgrp]
		g.cpu += p.cpu
		g.rss += p.rss
		byGroup[p.pgrp] = g
		all.cpu += p.cpu
		all.rss += p.rss
	}
	var out Sample
	s.mu.Lock()
	for name, in := range s.insts {
		rn := in.runs[len(in.runs)-1]
		is := InstanceSample{Name: name, Run: rn.n, Running: !rn.exited(), CPUSeconds: in.cpuExited}
		if is.Running {
			g := byGroup[rn.pgid]
			rn.cpuMax = max(rn.cpuMax, g.cpu)
			is.CPUSeconds += rn.cpuMax
			is.RSS = g.rss
		}
		is.Disk = diskUsage(in.req.DataDirs)
		out.Instances = append(out.Instances, is)
	}
	s.mu.Unlock()
	sort.Slice(out.Instances, func(i, j int) bool { return out.Instances[i].Name < out.Instances[j].Name })
	out.CPUSeconds, out.RSS = all.cpu, all.rss
	if cpu, ok := cgroupCPU(); ok {
		out.CPUSeconds = cpu
	}
	if rss, ok := cgroupMemory(); ok {
		out.RSS = rss
	}
	out.RxBytes, out.TxBytes, out.RxPackets, out.TxPackets = netCounters()
	return out
}

// diskUsage is the space allocated under dirs.
func diskUsage(dirs []string) int64 {
	var n int64
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := e.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
			return nil
		})
	}
	return n
}

// cgroupCPU is the pod container's CPU time from its cgroup: cgroup v1 mounts the container's
// own cgroup at /sys/fs/cgroup/<controller>, v2 at /sys/fs/cgroup.
func cgroupCPU() (float64, bool) {
	for _, p := range []string{"/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage"} {
		if b, err := os.ReadFile(p); err == nil {
			if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return float64(ns) / 1e9, true
			}
		}
	}
	if v, ok := statField("/sys/fs/cgroup/cpu.stat", "usage_usec"); ok {
		return float64(v) / 1e6, true
	}
	return 0, false
}

// cgroupMemory is the container's anonymous resident memory (page cache left out, as in the
// testbed's figures).
func cgroupMemory() (int64, bool) {
	if v, ok := statField("/sys/fs/cgroup/memory/memory.stat", "total_rss"); ok {
		return v, true
	}
	if v, ok := statField("/sys/fs/cgroup/memory.stat", "anon"); ok {
		return v, true
	}
	return 0, false
}

// statField reads "key value" from a cgroup stat file.
func statField(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// netCounters sums /proc/net/dev over every interface but loopback.
func netCounters() (rxB, txB, rxP, txP uint64) {
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		return
	}
	return parseNetDev(b)
}

func parseNetDev(b []byte) (rxB, txB, rxP, txP uint64) {
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 10 {
			continue
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
		rxB, rxP, txB, txP = rxB+n(0), rxP+n(1), txB+n(8), txP+n(9)
	}
	return
}
