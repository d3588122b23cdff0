package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
	fold      *folded  // guarded by mu; non-nil while the queue is folded (it is empty then)
}

// folded is an overflowed queue: what the listener missed, as the children of its node that
// the missed events touched, or whole when one of them replaced the node itself (or the topic
// has a query, whose result is re-sent whole). Its size is bounded by the node's width and,
// past ListenerBufferBytes of key names, it turns whole.
type folded struct {
	whole bool
	kids  map[string]bool
	bytes int // the key names' bytes plus a per-entry overhead
}

// foldedKeyCost approximates a map entry's overhead beyond its key's bytes, so the set's
// accounted bytes track its memory.
const foldedKeyCost = 48

// add folds ev into f; limit bounds f's accounted bytes (past it, f turns whole).
func (f *folded) add(ev *Event, query bool, limit int) {
	if f.whole {
		return
	}
	var names []string
	switch {
	case query, ev.Path == "/" && ev.Type != "patch":
		f.whole = true
	case ev.Path == "/":
		names = ev.kids
		if names == nil { // not from the hub's diff: the names are the patch's keys
			var m map[string]json.RawMessage
			if json.Unmarshal(ev.Data, &m) != nil {
				f.whole = true
			}
			for k := range m {
				names = append(names, k)
			}
		}
	default:
		name, _, _ := strings.Cut(ev.Path[1:], "/")
		names = []string{name}
	}
	for _, k := range names {
		if f.kids[k] {
			continue
		}
		if f.kids == nil {
			f.kids = map[string]bool{}
		}
		f.kids[k] = true
		f.bytes += len(k) + foldedKeyCost
	}
	if f.bytes > limit {
		f.whole, f.kids = true, nil
	}
}

// push queues ev; the caller holds Hub.mu (so the topic's cache is the state after ev).
//
// A queue that would pass its byte limit is folded: its events, and every later one until the
// reader takes them, become the set of the listened node's children they touched (folded). The
// reader then gets one patch at "/" of those children's current values from the topic's cache
// (null for a child deleted since), or one full put when an event replaced the node itself or
// the topic has a query (its result is re-sent whole). Firebase listeners are promised the
// latest state, not every intermediate one; so the listener skips intermediate states, ends
// right, and receives what changed rather than the whole node — a slow listener on a large,
// growing list is sent the new records, not the list again. Memory stays bounded by the buffer
// plus the folded set (itself bounded, see folded).
func (s *Subscription) push(ev *Event) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	query := s.t.q != nil
	switch {
	case s.fold != nil:
		s.fold.add(ev, query, s.limit)
	case len(s.q) > 0 && s.qBytes+len(ev.Data) > s.limit:
		f := &folded{}
		for _, e := range s.q {
			f.add(e, query, s.limit)
		}
		f.add(ev, query, s.limit)
		clear(s.q)
		s.q, s.qBytes, s.fold = s.q[:0], 0, f
		s.overflows++
	default:
		s.q = append(s.q, ev)
		s.qBytes += len(ev.Data)
	}
	s.mu.Unlock()
	s.signal()
}

// unfold turns the folded queue into the event that brings the reader to the topic's current
// state; the caller holds Hub.mu and s.mu. It returns nil while the topic reloads (a resync's
// full put follows).
func (s *Subscription) unfold() *Event {
	f, t := s.fold, s.t
	s.fold = nil
	if t.loading {
		return nil
	}
	m, isMap := t.view.(map[string]any)
	if f.whole || t.q != nil || !isMap {
		return t.snapshot()
	}
	return &Event{Type: "patch", Path: "/", Data: encodeChildren(m, f.kids), Rev: t.rev}
}

// take removes and returns the queued events (after unfolding a folded queue), or the end's
// reason when there are none and the subscription ended.
func (s *Subscription) take() ([]*Event, error) {
	s.mu.Lock()
	if s.fold != nil { // unfolding reads the topic's cache: take Hub.mu first, as push's callers do
		s.mu.Unlock()
		s.h.mu.Lock()
		defer s.h.mu.Unlock()
		s.mu.Lock()
		if s.fold != nil {
			if ev := s.unfold(); ev != nil {
				s.q = append(s.q, ev)
				s.qBytes += len(ev.Data)
			}
		}
	}
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

// drop forgets the queued events (a resync's full put follows).
func (s *Subscription) drop() {
	s.mu.Lock()
	clear(s.q)
	s.q, s.qBytes, s.fold = s.q[:0], 0, nil
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
// Close) it returns the events still queued, then the reason (ErrClosed,
// ErrSubscriptionClosed); ctx's error when ctx ends first.
func (s *Subscription) Next(ctx context.Context) ([]*Event, error) {
	for {
		evs, err := s.take()
		if evs != nil || err != nil {
			return evs, err
		}
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
func (s *Subscription) TryNext() ([]*Event, error) { return s.take() }

// Overflows is how many times the queue outgrew its limit and was folded (see push).
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
