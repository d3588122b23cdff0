package fabric

import (
	"fmt"
	"math"
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

// newClock pairs a CLOCK_MONOTONIC reading with time.Now(). The pair is taken between two
// clock_gettime calls and the tightest of a few tries is kept: a pair read far apart (the
// goroutine preempted in between) would put the fabric's clock behind the timerfd's, so that
// every wake-up would look early to the timer thread.
func newClock() *clock {
	var best *clock
	bestGap := int64(math.MaxInt64)
	for range 8 {
		var a, b unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		now := time.Now()
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if gap := b.Nano() - a.Nano(); gap < bestGap {
			bestGap = gap
			best = &clock{base: now, mono0: a.Nano() + gap/2 - testClockSkew}
		}
	}
	return best
}

// testClockSkew puts new fabrics' clocks behind CLOCK_MONOTONIC by that many ns (tests only;
// set before New, so no goroutine reads it concurrently).
var testClockSkew int64

func (c *clock) now() int64 { return c.mono0 + int64(time.Since(c.base)) }

// timer wakes the timer thread at absolute CLOCK_MONOTONIC times; with fd -1 it only records
// what it was armed for (the scheduling tests' injected time). armed (guarded by the fabric's
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
	notBefore  int64 // no expiry is programmed earlier than this (see onTimer's minGap)
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
	t.programmed = max(at-t.lead, t.notBefore, 1)
	if t.fd < 0 {
		return // a recording timer (scheduling tests advance time themselves)
	}
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
// hrtimer's latency, where Go's runtime timers would round sub-millisecond waits up. onFire
// learns whether the read consumed an expiration: the programmed time has then passed, whatever
// the fabric's clock says, and the timer must be armed again for the next event.
func (t *timer) run(onFire func(expired bool), onStart func()) {
	runtime.LockOSThread()
	defer close(t.done)
	onStart()
	// Timer slack only applies to some sleeps, but keep this thread's at the minimum anyway.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var buf [8]byte
	for {
		n, err := unix.Read(t.fd, buf[:])
		select {
		case <-t.stop:
			return
		default:
		}
		if err != nil && err != unix.EINTR && err != unix.EAGAIN {
			return
		}
		onFire(err == nil && n == len(buf))
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

// newClockRef reads CLOCK_MONOTONIC directly (for tests).
func newClockRef() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
