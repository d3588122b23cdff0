package hub

import (
	"context"
	"fmt"
	"time"
)

// WaitApplied returns once the hub has applied revision rev: every event up to rev is queued
// on the subscriptions it concerns (a subscription whose path is being read again after a
// watch failure gets its full put when that read is in). rev must be one the kv store has
// reached: a write's revision, or the revision a read was made at.
//
// A write's revision holds a key under the prefix, so the watch brings it; a read's may hold
// none (or the watch may be idle), so the hub asks the kv store for a progress notification,
// which says the watch has been sent everything up to the store's current revision. It is
// asked again at every wake-up that leaves rev unreached (a notification from a member behind
// the one that served the write only moves applied part of the way), and after a growing pause
// without one: a request can go unanswered (etcd answers only while every watch of the stream
// is synced; a request sent while the watch is still being created reaches no watch).
//
// Before the first Subscribe there is no subscription to wait for: it returns at once.
func (h *Hub) WaitApplied(ctx context.Context, rev int64) error {
	h.startMu.Lock()
	started := h.started
	h.startMu.Unlock()
	if !started {
		return nil
	}
	pause := 20 * time.Millisecond
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return ErrClosed
		}
		if h.applied >= rev {
			h.mu.Unlock()
			return nil
		}
		if h.appliedCh == nil {
			h.appliedCh = make(chan struct{})
		}
		wake := h.appliedCh
		h.mu.Unlock()
		// The watch's gRPC stream is the one keyed by h.ctx's (absent) metadata: the request
		// must name the same context, or the client opens another stream and the
		// notification never reaches the hub's watch.
		if err := h.kv.RequestProgress(h.ctx); err != nil {
			if h.ctx.Err() != nil {
				return ErrClosed
			}
			return fmt.Errorf("kv progress request: %w", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-wake:
		case <-t.C:
			pause = min(2*pause, time.Second)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-h.ctx.Done():
			t.Stop()
			return ErrClosed
		}
		t.Stop()
	}
}

// progress records a progress notification at rev: the watch has delivered every revision up
// to it, and the watch loop dispatched each before reading the notification.
func (h *Hub) progress(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev > h.applied {
		h.setAppliedLocked(rev)
	}
}

// setAppliedLocked moves applied to rev and wakes the waiters of WaitApplied; the channel is
// read and replaced under mu, so no wake-up is lost. The caller holds mu.
func (h *Hub) setAppliedLocked(rev int64) {
	h.applied = rev
	if h.appliedCh != nil {
		close(h.appliedCh)
		h.appliedCh = nil
	}
}

// AppliedRev is the last revision the hub dispatched (or knows, by a progress notification,
// that it has been sent everything up to).
func (h *Hub) AppliedRev() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.applied
}
