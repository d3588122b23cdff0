package fabric

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The monitor thread is found, it is not a goroutine's thread, and while a fabric runs with
// real-time threads it runs one priority above them; the last fabric to close restores it.
func TestSysmonRunsAboveTheFabricWhileOneRuns(t *testing.T) {
	tid := sysmonTID()
	if tid == 0 {
		t.Fatal("sysmonTID found no monitor thread")
	}
	// A locked goroutine's thread is never the monitor (which runs no goroutine).
	got := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		got <- unix.Gettid()
	}()
	if g := <-got; g == tid {
		t.Fatalf("sysmonTID %d is a goroutine's thread", tid)
	}

	tn := newTestNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Delay: time.Millisecond}}})
	if st := tn.f.Stats(); st.Realtime == 0 {
		t.Skip("no real-time scheduling here (not root, or no real-time runtime in this cgroup)")
	}
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attr.Policy != unix.SCHED_FIFO || attr.Priority != sysmonPriority {
		t.Fatalf("while a fabric runs, the monitor thread has policy %d priority %d, want SCHED_FIFO %d",
			attr.Policy, attr.Priority, sysmonPriority)
	}
	// The fabric still carries packets (the monitor's rounds do not get in its way).
	tn.send(0, 1, 100, 1)
	if a := tn.eps[1].waitFor(t, 1, 30*time.Second); len(a) != 1 {
		t.Fatal("packet not delivered")
	}
	tn.f.Close()
	gomaxprocs.Lock()
	others := gomaxprocs.active
	gomaxprocs.Unlock()
	if others > 0 {
		return // another test's fabric still runs: the priority stays raised for it
	}
	if attr, err = unix.SchedGetAttr(tid, 0); err != nil {
		t.Fatal(err)
	}
	if attr.Policy != unix.SCHED_NORMAL {
		t.Fatalf("after the last fabric closed, the monitor thread has policy %d, want SCHED_NORMAL", attr.Policy)
	}
}
