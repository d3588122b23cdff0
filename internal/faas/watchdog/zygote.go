package watchdog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// spawnFromZygote asks the zygote listening on socket for an instance serving on addr
// (host:port), in this process's cgroups so the instance is limited and accounted as this
// watchdog's (continuum_functions.zygote).
func spawnFromZygote(socket, addr string, execTimeout time.Duration) (*process, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("upstream port %q: %w", port, err)
	}
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("zygote %s: %w", socket, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	req := map[string]any{"host": host, "port": n, "cgroups": ownCgroupProcs(), "exec_timeout": execTimeout.Seconds()}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, fmt.Errorf("zygote %s: %w", socket, err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("zygote %s: no answer: %w", socket, err)
	}
	var ans struct {
		PID   int    `json:"pid"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &ans); err != nil || (ans.PID == 0 && ans.Error == "") {
		return nil, fmt.Errorf("zygote %s: bad answer %q", socket, line)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("zygote %s: %s", socket, ans.Error)
	}
	p := &process{pid: ans.PID, exited: make(chan error, 1)}
	go func() {
		// Not our child: poll until it is gone (the zygote reaps it).
		for syscall.Kill(p.pid, 0) == nil {
			time.Sleep(100 * time.Millisecond)
		}
		p.exited <- errors.New("exited")
	}()
	return p, nil
}

// ownCgroupProcs lists the cgroup.procs files of this process's cgroups (v2: one; v1: one per
// mounted hierarchy), for a forked instance to join.
func ownCgroupProcs() []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var p string
		switch {
		case f[1] == "" && f[0] == "0":
			p = filepath.Join("/sys/fs/cgroup", f[2], "cgroup.procs")
		case f[1] != "" && !strings.HasPrefix(f[1], "name="):
			p = filepath.Join("/sys/fs/cgroup", f[1], f[2], "cgroup.procs")
		default:
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
