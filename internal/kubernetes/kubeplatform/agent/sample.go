package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/continuum-project/continuum/internal/httpjson"
	"github.com/continuum-project/continuum/internal/procstat"
)

// cgroupRoot is where the pod's own cgroup shows (a container sees its cgroup as the root).
const cgroupRoot = "/sys/fs/cgroup"

func (s *server) handleSample(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, s.sample())
}

// sample measures the pod now.
func (s *server) sample() Sample {
	type inst struct {
		name     string
		run      *run
		cpuDone  float64
		dataDirs []string
	}
	s.mu.Lock()
	var ins []inst
	for name, in := range s.instances {
		if l := in.last(); l != nil {
			ins = append(ins, inst{name, l, in.cpuDone, in.dataDirs})
		}
	}
	s.mu.Unlock()

	groups := processGroups()
	out := Sample{Instances: make([]InstanceSample, 0, len(ins))}
	var cpuSum float64
	var rssSum int64
	for _, in := range ins {
		is := InstanceSample{Name: in.name, Run: in.run.n, Running: !in.run.exited(), CPUSeconds: in.cpuDone}
		if is.Running {
			for _, pid := range groups[in.run.pgid] {
				if c, err := procstat.CPUSeconds(pid, true); err == nil {
					is.CPUSeconds += c
				}
				// Anonymous memory, as the testbed's cgroup figure (and the pod's below):
				// mapped files, the binary's code above all, are shared page cache.
				if m, err := procstat.ReadMemory(pid); err == nil {
					is.RSS += m.RssAnon
				}
			}
		}
		for _, d := range in.dataDirs {
			is.Disk += diskUsage(d)
		}
		cpuSum += is.CPUSeconds
		rssSum += is.RSS
		out.Instances = append(out.Instances, is)
	}
	if c, ok := cgroupCPU(cgroupRoot); ok {
		out.CPUSeconds = c
	} else {
		self, _ := procstat.CPUSeconds(os.Getpid(), false)
		out.CPUSeconds = self + cpuSum
	}
	if m, ok := cgroupMemory(cgroupRoot); ok {
		out.RSS = m
	} else {
		self, _ := procstat.ReadMemory(os.Getpid())
		out.RSS = self.RssAnon + rssSum
	}
	if b, err := os.ReadFile("/proc/net/dev"); err == nil {
		if nd, err := parseNetDev(b); err == nil {
			out.RxBytes, out.TxBytes, out.RxPackets, out.TxPackets = nd.rxBytes, nd.txBytes, nd.rxPackets, nd.txPackets
		}
	}
	return out
}

// processGroups maps each process group id to the pids in it, from /proc.
func processGroups() map[int][]int {
	groups := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return groups
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		if pgrp, err := parsePgrp(b); err == nil {
			groups[pgrp] = append(groups[pgrp], pid)
		}
	}
	return groups
}

// parsePgrp reads the process group (field 5) from the text of /proc/PID/stat. The command
// name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
func parsePgrp(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	return strconv.Atoi(f[2])
}

// diskUsage is the space allocated to the files under dir (st_blocks*512), 0 if it is missing.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed while walking, an unreadable directory: count the rest
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// cgroupCPU reads the CPU seconds of the cgroup at root: v2 cpu.stat usage_usec, else v1
// cpuacct.usage (nanoseconds).
func cgroupCPU(root string) (float64, bool) {
	if b, err := os.ReadFile(filepath.Join(root, "cpu.stat")); err == nil {
		if v, ok := keyValue(b, "usage_usec"); ok {
			return float64(v) / 1e6, true
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "cpuacct", "cpuacct.usage")); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return float64(v) / 1e9, true
		}
	}
	return 0, false
}

// cgroupMemory reads the memory of the cgroup at root: v2 memory.current, else v1
// memory.usage_in_bytes minus the page cache (memory.stat total_cache, or cache).
func cgroupMemory(root string) (int64, bool) {
	if b, err := os.ReadFile(filepath.Join(root, "memory.current")); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return v, true
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "memory", "memory.usage_in_bytes"))
	if err != nil {
		return 0, false
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false
	}
	if st, err := os.ReadFile(filepath.Join(root, "memory", "memory.stat")); err == nil {
		cache, ok := keyValue(st, "total_cache")
		if !ok {
			cache, _ = keyValue(st, "cache")
		}
		if int64(cache) <= usage {
			usage -= int64(cache)
		}
	}
	return usage, true
}

// keyValue finds "key value" in a cgroup stat file.
func keyValue(b []byte, key string) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			v, err := strconv.ParseUint(f[1], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

type netDev struct{ rxBytes, rxPackets, txBytes, txPackets uint64 }

// parseNetDev sums the counters of every interface but lo in the text of /proc/net/dev: after
// two header lines, "iface: rx_bytes rx_packets errs drop fifo frame compressed multicast
// tx_bytes tx_packets ...".
func parseNetDev(b []byte) (netDev, error) {
	var nd netDev
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], "bytes") {
		return nd, errors.New("net/dev: no header")
	}
	for _, line := range lines[2:] {
		iface, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if strings.TrimSpace(iface) == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 10 {
			return nd, fmt.Errorf("net/dev: interface %s: %d fields", strings.TrimSpace(iface), len(f))
		}
		var v [4]uint64
		for i, idx := range []int{0, 1, 8, 9} {
			x, err := strconv.ParseUint(f[idx], 10, 64)
			if err != nil {
				return nd, fmt.Errorf("net/dev: interface %s: %q", strings.TrimSpace(iface), f[idx])
			}
			v[i] = x
		}
		nd.rxBytes += v[0]
		nd.rxPackets += v[1]
		nd.txBytes += v[2]
		nd.txPackets += v[3]
	}
	return nd, nil
}
