package mvcc

import (
	"fmt"
	"sync"
	"time"
)

// Timestamp is a hybrid logical clock reading: physical wall time in nanoseconds since the Unix
// epoch plus a logical counter that orders events sharing (or running ahead of) a wall time.
// Timestamps compare by (Wall, Logical); the zero Timestamp is before every reading.
type Timestamp struct {
	Wall    int64
	Logical uint32
}

// Less reports whether t orders strictly before u.
func (t Timestamp) Less(u Timestamp) bool {
	return t.Wall < u.Wall || (t.Wall == u.Wall && t.Logical < u.Logical)
}

// IsZero reports whether t is the zero Timestamp.
func (t Timestamp) IsZero() bool { return t == Timestamp{} }

func (t Timestamp) String() string {
	return fmt.Sprintf("%s+%d", time.Unix(0, t.Wall).UTC().Format(time.RFC3339Nano), t.Logical)
}

// Clock is a hybrid logical clock (Kulkarni et al., "Logical Physical Clocks", 2014).
//
// Invariants, which replication relies on:
//   - Now returns strictly increasing Timestamps, also across Observe calls: every reading is
//     greater than every Timestamp this clock returned or observed before (causality: a change
//     made after seeing a peer's change orders after it, even when the peer's wall clock runs
//     ahead of ours).
//   - Wall never runs behind the physical clock at the time of the reading, so readings stay close
//     to real time; it only runs ahead of it while the clock has observed a timestamp from the
//     future, and then the logical counter, not the wall part, advances.
//   - A restarted store restores the clock from its last change (Observe), so a physical clock
//     stepped backwards across a restart cannot reorder changes of one origin.
//
// The logical counter is 32 bits; it resets whenever physical time passes Wall, so it overflows
// only if ~4e9 readings share one nanosecond, which Now reports by panicking rather than
// silently reordering.
type Clock struct {
	mu   sync.Mutex
	now  func() int64 // physical clock, ns since the epoch
	last Timestamp
}

// NewClock returns a clock reading physical time from now (nil: time.Now).
func NewClock(now func() int64) *Clock {
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	return &Clock{now: now}
}

// Now returns a new Timestamp, greater than every one returned or observed before.
func (c *Clock) Now() Timestamp {
	pt := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if pt > c.last.Wall {
		c.last = Timestamp{Wall: pt}
	} else {
		c.bumpLogical()
	}
	return c.last
}

// Observe merges a timestamp seen elsewhere (a peer's change, or this store's last change on
// restart), so that later readings order after it.
func (c *Clock) Observe(ts Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.Less(ts) {
		c.last = ts
	}
}

// Last returns the latest Timestamp returned or observed.
func (c *Clock) Last() Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *Clock) bumpLogical() {
	if c.last.Logical == ^uint32(0) {
		panic("hlc: logical counter overflow")
	}
	c.last.Logical++
}
