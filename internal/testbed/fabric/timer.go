package fabric

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// clock is the fabric's time base: nanoseconds on CLOCK_MONOTONIC, the clock the timerfd uses.
// Reading it goes through Go's vDSO-backed monotonic clock (time.Since) instead of a syscall.
type clock struct {
	base  time.Time
	mono0 int64
}

func newClock() *clock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return &clock{base: time.Now(), mono0: ts.Nano()}
}

func (c *clock) now() int64 { return c.mono0 + int64(time.Since(c.base)) }

// timer wakes the timer thread at absolute CLOCK_MONOTONIC times. armed (guarded by the fabric's
// mu, like every call here except run and close) is the event time currently armed for, 0 if
// none; arm only ever moves it earlier, so the earliest pending event always has a wake-up.
//
// A wake-up from an hrtimer arrives late by a machine-dependent amount (tens to hundreds of µs on
// a VM), which would add to every hop's delay. The timer therefore fires `lead` early, where lead
// tracks the observed lateness (EWMA), and events due within lead/2 of a wake-up are taken with
// it: the error of a hop is centred near zero and bounded by about ±lead/2 plus the wake-up jitter.
// Spinning to the exact time was tried and rejected: on a 2-core machine the spinning thread holds
// a CPU the packet readers and the nodes' own processes need, and throughput collapsed.
type timer struct {
	fd         int
	armed      int64
	programmed int64 // the expiry actually set (armed - lead)
	lead       int64 // estimated wake-up lateness, ns
	stop       chan struct{}
	done       chan struct{}
}

const (
	initialLead = 50_000  // ns
	maxLead     = 300_000 // ns; lateness beyond this is load, not timer latency: do not chase it
)

func newTimer() (*timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fabric: timerfd_create: %w", err)
	}
	return &timer{fd: fd, lead: initialLead, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

func (t *timer) arm(at int64) {
	if t.armed != 0 && t.armed <= at {
		return
	}
	if at <= 0 {
		at = 1 // zero would disarm
	}
	t.armed = at
	t.programmed = max(at-t.lead, 1)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(t.programmed)}
	_ = unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

// fired records that the programmed expiry has passed (observed at now) and learns the lateness.
func (t *timer) fired(now int64) {
	if t.programmed > 0 {
		late := min(max(now-t.programmed, 0), maxLead)
		t.lead += (late - t.lead) / 16
	}
	t.armed, t.programmed = 0, 0
}

// run blocks in read(2) on the timerfd on its own OS thread: a blocking read wakes within the
// hrtimer's latency, where Go's runtime timers would round sub-millisecond waits up.
func (t *timer) run(onFire func()) {
	runtime.LockOSThread()
	defer close(t.done)
	// Timer slack only applies to some sleeps, but keep this thread's at the minimum anyway.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var buf [8]byte
	for {
		_, err := unix.Read(t.fd, buf[:])
		select {
		case <-t.stop:
			return
		default:
		}
		if err != nil && err != unix.EINTR && err != unix.EAGAIN {
			return
		}
		// onFire returns the time of an event due within the lead instead of arming the timer
		// for it; spin for it (releasing the fabric lock) rather than pay another late wake-up.
		onFire()
	}
}

// close wakes the thread (by firing the timer now) and waits for it to exit.
func (t *timer) close() {
	close(t.stop)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(1)}
	_ = unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
	<-t.done
	unix.Close(t.fd)
}
