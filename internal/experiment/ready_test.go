package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
)

// runningInstance is an instance that runs until the test ends.
type runningInstance struct{ done chan struct{} }

func (r runningInstance) Done() <-chan struct{}    { return r.done }
func (r runningInstance) Exit() platform.Exit      { return platform.Exit{} }
func (r runningInstance) Stop(time.Duration) error { return nil }

// TestWaitReadyCountsRetriesAfterStartPeriod: with retries, failures inside the start period do
// not count (Docker's health checks), the retries-th failure after it ends the wait without a
// time bound, tries are an interval apart (start interval within the start period), and a
// success ends it at once.
func TestWaitReadyCountsRetriesAfterStartPeriod(t *testing.T) {
	ex := &execution{dir: t.TempDir()}
	inst := Instance{Name: "web", Node: "n1"}
	p := runningInstance{done: make(chan struct{})}
	var tries []time.Time
	failing := &readyProbe{what: "exec check", every: time.Hour, check: func(context.Context) error {
		tries = append(tries, time.Now())
		return errors.New("exit 1")
	}}
	r := &kind.Ready{Interval: 40 * time.Millisecond, StartInterval: 5 * time.Millisecond, StartPeriod: 150 * time.Millisecond, Retries: 3}
	start := time.Now()
	err := ex.waitReady(context.Background(), inst, p, r, failing)
	if err == nil || !strings.Contains(err.Error(), "3 tries in a row failed after its start period") {
		t.Fatalf("err %v", err)
	}
	var inStart, after int
	for _, at := range tries {
		if at.Sub(start) < r.StartPeriod {
			inStart++
		} else {
			after++
		}
	}
	if after != 3 {
		t.Errorf("%d tries after the start period, want 3 (retries)", after)
	}
	// Tries within the start period come at the start interval: a slow machine makes fewer,
	// never more than the period allows.
	if inStart < 1 || inStart > 31 {
		t.Errorf("%d tries in the start period of 150ms at 5ms", inStart)
	}
	for i := len(tries) - 2; i < len(tries); i++ {
		if gap := tries[i].Sub(tries[i-1]); gap < r.Interval {
			t.Errorf("tries %d and %d %v apart, want at least the interval %v", i-1, i, gap, r.Interval)
		}
	}

	n := 0
	succeeds := &readyProbe{what: "exec check", every: time.Hour, check: func(context.Context) error {
		if n++; n < 3 {
			return errors.New("exit 1")
		}
		return nil
	}}
	if err := ex.waitReady(context.Background(), inst, p, &kind.Ready{Interval: time.Millisecond, Retries: 3}, succeeds); err != nil || n != 3 {
		t.Errorf("ready after %d tries: %v", n, err)
	}
	// Without retries the timeout bounds the wait, as before.
	tries = nil
	err = ex.waitReady(context.Background(), inst, p, &kind.Ready{Interval: 5 * time.Millisecond, Timeout: 50 * time.Millisecond}, failing)
	if err == nil || !strings.Contains(err.Error(), "after 50ms") || len(tries) < 2 {
		t.Errorf("err %v after %d tries", err, len(tries))
	}
}
