package pool

import (
	"sync"
	"time"
)

// slowTimer reports an exchange that has waited longer than the latency limit (observeSlow).
// The exchange arms it when it has its connection and disarms it when the answer's headers
// arrive; disarm says whether it fired, i.e. whether the wait was already recorded.
type slowTimer struct {
	t  *time.Timer
	mu sync.Mutex
	// armed: an exchange is waiting; fired: the timer reported it.
	armed, fired bool
	s            *Service
	in           *Instance
	epoch        uint64
	since        time.Time
	limit        time.Duration
}

func (st *slowTimer) fire() {
	st.mu.Lock()
	if !st.armed || time.Since(st.since) < st.limit {
		// The answer came first; or this is a late run of the previous exchange's timer,
		// the connection having been re-armed for the next one meanwhile.
		st.mu.Unlock()
		return
	}
	st.armed, st.fired = false, true
	s, in, epoch, since := st.s, st.in, st.epoch, st.since
	st.mu.Unlock()
	s.observeSlow(in, epoch, time.Since(since))
}

func (st *slowTimer) Arm(s *Service, in *Instance, epoch uint64, since time.Time, limit time.Duration) {
	st.mu.Lock()
	st.armed, st.fired, st.s, st.in, st.epoch, st.since, st.limit = true, false, s, in, epoch, since, limit
	st.mu.Unlock()
	// since may be in the past (an exchange whose body was sent first): the timer runs for
	// what is left of limit.
	d := max(limit-time.Since(since), 0)
	if st.t == nil {
		st.t = time.AfterFunc(d, st.fire)
	} else {
		st.t.Reset(d)
	}
}

// Disarm stops the timer and reports whether it fired for this exchange.
func (st *slowTimer) Disarm() bool {
	if st.t == nil {
		return false
	}
	st.t.Stop()
	st.mu.Lock()
	fired := st.fired
	st.armed, st.fired, st.s, st.in = false, false, nil, nil
	st.mu.Unlock()
	return fired
}
