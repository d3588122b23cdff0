package fabric

import (
	"fmt"
	"math"
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
// every wake-up would look early to the poller.
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

// timer wakes the poller thread at absolute CLOCK_MONOTONIC times; with fd -1 it only records
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
}

const (
	initialLead = 50_000  // ns
	maxLead     = 300_000 // ns; lateness beyond this is load, not timer latency: do not chase it
)

func newTimer() (*timer, error) {
	// Non-blocking: the poller reads it only when epoll says it expired, and a read that finds
	// nothing (it was re-armed meanwhile) must not block the thread.
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("fabric: timerfd_create: %w", err)
	}
	return &timer{fd: fd, lead: initialLead}, nil
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

// newClockRef reads CLOCK_MONOTONIC directly (for tests).
func newClockRef() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
