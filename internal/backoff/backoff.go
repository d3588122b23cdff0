// Package backoff is the one growing wait between retries of this module's reconnect and
// retry loops: a first delay, doubled after each attempt up to a cap, drawn at random within a
// band below the delay (jitter) and reset to the first delay once an attempt succeeded.
//
// Jitter is why it exists as one piece: without it, every client of a server that restarts
// retries at the same instants (the proxies of a cluster against kv, the replicas of a store
// against a returning peer) and hits it in step. It owns the delays only; what counts as
// success, and what to log, stay with the loop.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is a retry loop's wait. The zero value of the state is ready to use once Min and Max
// are set; a Backoff is not safe for concurrent use (one per loop).
type Backoff struct {
	// Min is the first delay and the delay after Reset; Max caps the doubling (Max < Min: Min).
	Min, Max time.Duration
	// Jitter is the share of each delay that is drawn at random: a wait is uniform in
	// [(1-Jitter)·d, d]. 0 waits exactly d; 0.5 waits 50..100 % of it ("equal jitter"); 1 waits
	// anything up to it ("full jitter").
	Jitter float64

	cur time.Duration // the next delay; 0: Min
}

// Next is the delay the next wait is drawn below (before jitter), for logging.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		return b.Min
	}
	return b.cur
}

// Delay draws the next wait and doubles the delay (up to Max): for loops that wait on something
// other than a context.
func (b *Backoff) Delay() time.Duration {
	d := b.Next()
	b.cur = min(2*d, max(b.Max, b.Min))
	if j := min(max(b.Jitter, 0), 1); j > 0 {
		fixed := time.Duration(float64(d) * (1 - j))
		d = fixed + rand.N(d-fixed+1)
	}
	return d
}

// Wait sleeps for Delay; false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Reset starts again from Min: call it when an attempt succeeded (or made progress), so that the
// next failure, however much later, is retried quickly.
func (b *Backoff) Reset() { b.cur = 0 }
