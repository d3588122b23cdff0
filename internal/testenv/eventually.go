package testenv

import (
	"testing"
	"time"
)

// Eventually waits until cond holds, polling with a backoff from 1 ms up to 50 ms, and fails the
// test (naming what it waited for) if timeout passes first. Timeouts can be generous because
// Eventually returns as soon as cond holds: they bound a broken test, not a slow machine.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// EventuallyNoError waits until check returns nil, and on timeout fails the test with the last
// error, which usually says more than "timed out" (the value seen, the request that failed).
func EventuallyNoError(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	var last error
	if !Poll(timeout, func() bool { last = check(); return last == nil }) {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, last)
	}
}

// Poll calls cond until it holds (true) or timeout passes (false); cond is always called at
// least once, and once more at the deadline.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(wait, left))
		wait = min(wait*2, 50*time.Millisecond)
	}
}
