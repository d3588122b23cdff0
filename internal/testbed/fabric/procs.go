package fabric

import (
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The fabric's threads are locked OS threads that block in system calls (recvmmsg, the timerfd
// read). A Go thread returning from a blocking call needs a P to run Go code again; when every P
// is held by the hosting process's other goroutines, the fabric's real-time thread waits for
// them, and a busy process would stretch every link's delay. Raising GOMAXPROCS by the number of
// fabric threads keeps a P free for each. The extra Ps do not add CPU: the OS still schedules the
// threads on the cores there are, the fabric's first.
//
// The runtime's monitor thread (sysmon) is raised above the fabric's threads, for the reason
// given at sysmonPriority.
var gomaxprocs struct {
	sync.Mutex
	base   int // GOMAXPROCS before the first fabric raised it
	extra  int // fabric threads running in this process
	active int // fabrics running
	sysmon int // the monitor thread's id while it runs at sysmonPriority, else 0
}

// reserveProcs adds n Ps for a fabric's threads; releaseProcs gives them back.
func reserveProcs(n int) {
	gomaxprocs.Lock()
	defer gomaxprocs.Unlock()
	if gomaxprocs.active == 0 {
		gomaxprocs.base = runtime.GOMAXPROCS(0)
		gomaxprocs.sysmon = raiseSysmon()
	}
	gomaxprocs.active++
	gomaxprocs.extra += n
	runtime.GOMAXPROCS(gomaxprocs.base + gomaxprocs.extra)
}

func releaseProcs(n int) {
	gomaxprocs.Lock()
	defer gomaxprocs.Unlock()
	gomaxprocs.active--
	gomaxprocs.extra -= n
	runtime.GOMAXPROCS(gomaxprocs.base + gomaxprocs.extra)
	if gomaxprocs.active == 0 && gomaxprocs.sysmon != 0 {
		_ = unix.SchedSetAttr(gomaxprocs.sysmon, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0)
		gomaxprocs.sysmon = 0
	}
}

// sysmonPriority is the SCHED_FIFO priority given to the Go runtime's monitor thread (sysmon)
// while a fabric runs: one above the fabric's threads (rtPriority).
//
// Why: every few tens of µs to 10 ms, sysmon looks at each P whose goroutine is in a system
// call, and to do so (Go 1.26, setBlockOnExitSyscall) it holds that goroutine's scan bit for a
// moment; a thread returning from the call meanwhile spins in exitsyscall until sysmon lets go.
// The fabric's threads spend their idle time in exactly such calls, and their wake-ups (a timerfd
// expiry, a packet) come as interrupts on whatever CPU is at hand, often sysmon's own: the woken
// real-time thread then preempts sysmon, spins waiting for it, and sysmon, an ordinary thread,
// cannot run on that CPU until the scheduler migrates it to the other one. Traced on a 2-core
// machine (sched_switch events and perf call stacks): the timer thread (before the poller) spun in
// exitsyscall/casgstatus for 25–53 ms, a few times per 10 s at 1k packets/s, which was the
// p99.9 of tens of ms at low rates. Above the fabric's threads, sysmon is never preempted by
// them and its hold lasts the few µs it is meant to.
const sysmonPriority = rtPriority + 1

// raiseSysmon moves the runtime's monitor thread to sysmonPriority and returns its thread id, or
// 0 when it cannot be found or the process may not use real-time scheduling.
func raiseSysmon() int {
	tid := sysmonTID()
	if tid == 0 {
		return 0
	}
	// Threads sysmon creates (it starts Ms to run handed-off Ps) must not inherit its priority:
	// they run ordinary goroutines.
	attr := &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: sysmonPriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		return 0
	}
	return tid
}

// sysmonTID finds the runtime's monitor thread: the first thread the runtime creates (runtime.main
// starts it before any package's init runs), so the first thread id allocated after the process's
// own, in the kernel's allocation order (ids wrap at pid_max). It is checked to be asleep in the
// runtime as sysmon always is between its rounds (nanosleep or futex) and to have started with
// the process; 0 when no thread fits.
func sysmonTID() int {
	pid := os.Getpid()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	pidMax := 1 << 22
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			pidMax = v
		}
	}
	var tids []int
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil && t != pid {
			tids = append(tids, t)
		}
	}
	if len(tids) == 0 {
		return 0
	}
	after := func(t int) int { return ((t-pid)%pidMax + pidMax) % pidMax }
	sort.Slice(tids, func(i, j int) bool { return after(tids[i]) < after(tids[j]) })
	tid := tids[0]
	if start, ok := taskStart(pid); !ok {
		return 0
	} else if s, ok := taskStart(tid); !ok || s-start > 100 { // clock ticks: started within a second
		return 0
	}
	// It may be caught running or waiting for a CPU (the file then says "running"): it runs for
	// µs at a time, but on a busy machine may wait for a CPU for a few ms.
	for i := range 200 {
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
		if err != nil {
			return 0
		}
		switch strings.SplitN(strings.TrimSpace(string(b)), " ", 2)[0] {
		case strconv.Itoa(unix.SYS_NANOSLEEP), strconv.Itoa(unix.SYS_FUTEX):
			return tid
		case "running":
			continue
		}
		return 0
	}
	return 0
}

// taskStart is when thread tid of this process started (clock ticks after boot, stat field 22).
func taskStart(tid int) (int64, bool) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(f[19], 10, 64) // field 22; f[0] is field 3
	return v, err == nil
}
