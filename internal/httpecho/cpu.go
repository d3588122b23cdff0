package httpecho

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

var burnSink atomic.Uint64

// burnCPU spins until the calling thread has used d of CPU time. The goroutine is locked to its
// thread so the thread's CPU clock measures exactly this work; under a CFS quota the wall time
// grows while the CPU time stays d, which is what CPU-limit experiments need to see.
func burnCPU(d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock, ok := threadCPU()
	if !ok {
		clock = func() time.Duration { return time.Duration(time.Now().UnixNano()) }
	}
	start := clock()
	x := uint64(1)
	for clock()-start < d {
		for range 2000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	burnSink.Store(x)
}

func threadCPU() (func() time.Duration, bool) {
	read := func() time.Duration {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
		return time.Duration(ts.Nano())
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return nil, false
	}
	return read, true
}
