// Package procstat reads what Linux's /proc says about a process (its CPU time, its resident
// memory) and about the host (the load average, the CPU model, the kernel), for the benchmarks,
// the baselines' servers and the watchdog, which account for processes they started. It is
// the one place that parses these files; it does not judge what it reads (that is
// internal/benchkit's job for the benchmarks).
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times; 100 on every Linux platform Go
// runs on (it is fixed by the kernel ABI, not by CONFIG_HZ).
const clockTicks = 100

// CPUSeconds is the CPU time (user + system) process pid used so far; with children, also
// that of the children it has waited for (cutime + cstime).
func CPUSeconds(pid int, children bool) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return Parse(b, children)
}

// Parse reads the CPU seconds from the text of /proc/PID/stat.
func Parse(b []byte, children bool) (float64, error) {
	// The command name (field 2) is in parentheses and may contain spaces: fields are
	// counted after its closing parenthesis. utime, stime, cutime, cstime are fields 14-17.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	n := 2
	if children {
		n = 4
	}
	if len(f) < 11+n {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	var ticks int64
	for _, x := range f[11 : 11+n] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: time field %q", x)
		}
		ticks += v
	}
	return float64(ticks) / clockTicks, nil
}

// SelfCPU is the CPU time (user + system) this process used so far, from getrusage: finer
// than /proc/self/stat's 10 ms ticks, for measuring short spells of the process's own work.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ThreadCPUSeconds is the CPU time process pid's live threads have run, summed from each
// thread's /proc/PID/task/TID/schedstat (nanoseconds, where /proc/PID/stat counts 10 ms ticks):
// the figure for short measurements of a long-lived server, whose threads outlive them. Time of
// threads that exited is not in it.
func ThreadCPUSeconds(pid int) (float64, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), f[0])
		}
		ns += v
	}
	return float64(ns) / 1e9, nil
}
