package rtdb

import (
	"context"
	"errors"
	"sync"
)

// ErrSubscriptionClosed is what Next returns after Close.
var ErrSubscriptionClosed = errors.New("subscription closed")

// Subscription is one listener's queue of events. The hub appends to it without ever waiting for
// the reader; Next takes everything queued at once, so a reader that writes to a network
// connection sends a burst in one write.
type Subscription struct {
	h     *Hub
	t     *topic // set under Hub.mu; the topic's state is guarded by it
	limit int
	wake  chan struct{} // capacity 1: a pending wake-up is never lost, never blocks the hub

	mu        sync.Mutex
	q         []*Event // guarded by mu
	qBytes    int      // guarded by mu
	overflows int      // guarded by mu
	ended     bool     // guarded by mu
	err       error    // guarded by mu
}

// push queues ev; the caller holds Hub.mu (so the topic's snapshot is the state after ev).
// A queue over its byte limit is replaced by one full put of the current value: the listener
// skips intermediate states but ends up right, and its memory stays bounded.
func (s *Subscription) push(ev *Event) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	if len(s.q) > 0 && s.qBytes+len(ev.Data) > s.limit {
		snap := s.t.snapshot()
		clear(s.q)
		s.q = append(s.q[:0], snap)
		s.qBytes = len(snap.Data)
		s.overflows++
	} else {
		s.q = append(s.q, ev)
		s.qBytes += len(ev.Data)
	}
	s.mu.Unlock()
	s.signal()
}

// drop forgets the queued events (a resync's full put follows).
func (s *Subscription) drop() {
	s.mu.Lock()
	clear(s.q)
	s.q, s.qBytes = s.q[:0], 0
	s.mu.Unlock()
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end stops the subscription with err once the queued events have been read.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	if !s.ended {
		s.ended, s.err = true, err
	}
	s.mu.Unlock()
	s.signal()
}

// Next waits for events and returns all those queued, oldest first. After the hub closed (or
// Close) it returns the events still queued, then the reason (ErrHubClosed,
// ErrSubscriptionClosed); ctx's error when ctx ends first.
func (s *Subscription) Next(ctx context.Context) ([]*Event, error) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			evs := s.q
			s.q, s.qBytes = nil, 0
			s.mu.Unlock()
			return evs, nil
		}
		if s.ended {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ready is signalled when events (or the end) may be waiting: a reader that also waits for other
// things (timers, its connection) selects on it, then calls TryNext.
func (s *Subscription) Ready() <-chan struct{} { return s.wake }

// TryNext is Next without waiting: the queued events, or the end's reason, or neither (nil, nil).
func (s *Subscription) TryNext() ([]*Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) > 0 {
		evs := s.q
		s.q, s.qBytes = nil, 0
		return evs, nil
	}
	if s.ended {
		return nil, s.err
	}
	return nil, nil
}

// Overflows is how many times the queue outgrew its limit and was replaced by a full put.
func (s *Subscription) Overflows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overflows
}

// Close unsubscribes; the hub stops its cache when it was the path's last listener.
func (s *Subscription) Close() {
	s.h.unsubscribe(s)
	s.end(ErrSubscriptionClosed)
}
