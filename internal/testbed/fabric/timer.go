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
// mu, like every call here except run and close) is the expiry currently programmed, 0 if none;
// arm only ever moves it earlier, so the earliest pending event always has a wake-up.
type timer struct {
	fd    int
	armed int64
	stop  chan struct{}
	done  chan struct{}
}

func newTimer() (*timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fabric: timerfd_create: %w", err)
	}
	return &timer{fd: fd, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

func (t *timer) arm(at int64) {
	if t.armed != 0 && t.armed <= at {
		return
	}
	if at <= 0 {
		at = 1 // zero would disarm
	}
	t.armed = at
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	_ = unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

// fired records that the programmed expiry has passed.
func (t *timer) fired() { t.armed = 0 }

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
