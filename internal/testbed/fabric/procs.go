package fabric

import (
	"runtime"
	"sync"
)

// The fabric's threads are locked OS threads that block in system calls (recvmmsg, the timerfd
// read). A Go thread returning from a blocking call needs a P to run Go code again; when every P
// is held by the hosting process's other goroutines, the fabric's real-time thread waits for
// them, and a busy process would stretch every link's delay. Raising GOMAXPROCS by the number of
// fabric threads keeps a P free for each. The extra Ps do not add CPU: the OS still schedules the
// threads on the cores there are, the fabric's first.
var gomaxprocs struct {
	sync.Mutex
	base   int // GOMAXPROCS before the first fabric raised it
	extra  int // fabric threads running in this process
	active int // fabrics running
}

// reserveProcs adds n Ps for a fabric's threads; releaseProcs gives them back.
func reserveProcs(n int) {
	gomaxprocs.Lock()
	defer gomaxprocs.Unlock()
	if gomaxprocs.active == 0 {
		gomaxprocs.base = runtime.GOMAXPROCS(0)
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
}
