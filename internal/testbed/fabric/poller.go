package fabric

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// pollable is a BatchEndpoint the poller thread serves: its file descriptor becomes readable
// when the node has sent packets, and readNow returns what is queued without blocking (0 when
// nothing is). AFPacket is one; endpoints that are not are read by a goroutine of their own.
type pollable interface {
	BatchEndpoint
	pollFD() int
	readNow(bufs [][]byte, sizes []int, stamps []int64) (int, error)
}

// poller is the fabric's data path: one OS thread, at real-time priority where allowed, waits in
// epoll for every pollable node's socket and the timerfd together, reads what the nodes sent,
// moves due packets on, and writes what is to be delivered, in one loop.
//
// Why one thread for everything: on the VMs this project runs on, a wake-up of a real-time thread
// costs several µs (an interrupt, a context switch, the Go runtime's exit from a system call), and
// with a reader thread per node plus a timer thread a round trip through a link woke four threads.
// One thread wakes once for whatever is ready (packets from several nodes, the timer), takes the
// scheduling lock without contention, and, under load, finds more work queued at each wake-up.
// The Go runtime also interferes less with one thread than with N+1 (see sysmonPriority).
type poller struct {
	epfd int
	stop int // eventfd written by close: wakes the thread to exit
	tfd  int // the timer's fd
	done chan struct{}
	quit atomic.Bool
}

// Tags of the epoll registrations that are not node sockets (those carry the node's index).
const (
	tagTimer = -1
	tagStop  = -2
)

func newPoller(tfd int) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fabric: epoll_create1: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("fabric: eventfd: %w", err)
	}
	p := &poller{epfd: epfd, stop: stop, tfd: tfd, done: make(chan struct{})}
	for _, r := range []struct{ fd, tag int }{{tfd, tagTimer}, {stop, tagStop}} {
		if err := p.add(r.fd, r.tag); err != nil {
			p.closeFDs()
			return nil, err
		}
	}
	return p, nil
}

// add registers fd for readability (level-triggered), reported with tag.
func (p *poller) add(fd, tag int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(tag)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("fabric: epoll_ctl add fd %d: %w", fd, err)
	}
	return nil
}

// close stops the thread and waits for it (New's caller started it).
func (p *poller) close() {
	p.quit.Store(true)
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(p.stop, one[:])
	<-p.done
	p.closeFDs()
}

func (p *poller) closeFDs() {
	unix.Close(p.stop)
	unix.Close(p.epfd)
}

// pollLoop is the poller thread. Each round: wait for readiness (after a coalescing pause when
// the last round found a backlog), read every ready node (a batch each), let the timer move what
// is due, and write the deliveries in one batch per node.
func (f *Fabric) pollLoop() {
	p := f.poll
	defer close(p.done)
	runtime.LockOSThread() // the thread's CPU is the fabric's (threadSet); it ends with the loop
	f.threads.add()
	// Timer slack would postpone the coalescing sleeps; keep it at the minimum.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)

	events := make([]unix.EpollEvent, len(f.nodes)+2)
	rb := newReadBufs(f)
	defer rb.release(f)
	w := newBatchWriter(f)
	var out []delivery
	var tbuf [8]byte
	pause := int64(0)
	for {
		if pause > 0 {
			ts := unix.NsecToTimespec(pause)
			_ = unix.Nanosleep(&ts, nil)
		}
		n, err := unix.EpollWait(p.epfd, events, -1)
		if p.quit.Load() {
			return
		}
		if err != nil {
			continue // EINTR
		}
		fired := false
		backlog, full := false, false
		for _, ev := range events[:n] {
			switch tag := int(ev.Fd); tag {
			case tagStop:
				return
			case tagTimer:
				// Readable means expired. Not read here: onTimer re-arms it when packets are
				// still in flight, which clears the expiry as a read would (one system call
				// fewer per wake-up); only an idle timer is read below.
				fired = true
			default:
				ep := f.nodes[tag].ep.(pollable)
				k, err := ep.readNow(rb.bufs, rb.sizes, rb.stamps)
				if err != nil {
					// The interface is gone (its namespace deleted): stop polling it, as a
					// reader would stop reading, rather than be woken for its error again.
					_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, ep.pollFD(), nil)
					continue
				}
				if k == 0 {
					continue // nothing after all
				}
				out = f.take(out, tag, rb, k)
				if k == len(rb.bufs) {
					full = true // more is queued: read again at once
				} else if k > 1 {
					backlog = true
				}
			}
		}
		if fired {
			out = f.onTimer(out, true)
			f.mu.Lock()
			idle := f.timer.armed == 0
			f.mu.Unlock()
			if idle {
				_, _ = unix.Read(p.tfd, tbuf[:]) // else level-triggered epoll would report it again
			}
		}
		w.write(out)
		clear(out) // drop packet references held by the reused slice
		out = out[:0]
		pause = 0
		if backlog && !full {
			pause = f.pollPause()
		}
	}
}

// pollPause is how long the poller waits before its next round after one that found a backlog:
// interrupt coalescing, as a NIC's rx-usecs, so that under load one wake-up takes many packets
// instead of the thread waking for each. Packets are scheduled from their send stamps, so a read
// that late costs no accuracy while every link is much longer than the wait (coalesceWait is 0
// where one is not); the pause also ends before the timer's next expiry, so deliveries are not
// held back by it.
func (f *Fabric) pollPause() int64 {
	w := f.coalesceAll.Load()
	if w <= 0 {
		return 0
	}
	now := f.clock.now()
	f.mu.Lock()
	next := f.timer.programmed
	f.mu.Unlock()
	if next != 0 {
		w = min(w, next-now)
	}
	return max(w, 0)
}
