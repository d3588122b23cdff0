// Package discoverytest runs a discovery.Source under test: it collects the source's snapshots,
// checks the Source contract (update never called concurrently; Run returns nil promptly once its
// context is cancelled) and offers the helpers every source's tests need. For tests only.
package discoverytest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/testenv"
)

// Running is a source under test.
type Running struct {
	t       testing.TB
	timeout time.Duration
	snaps   chan discovery.Snapshot
	logs    fmt.Stringer
	// Last is the last snapshot Next or WaitFor returned.
	Last discovery.Snapshot
}

// Run runs src until the test ends. timeout bounds every wait (Next, WaitFor, the return of Run
// after cancel); logs, if not nil, is shown when a wait fails.
func Run(t testing.TB, src discovery.Source, logs fmt.Stringer, timeout time.Duration) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{t: t, timeout: timeout, snaps: make(chan discovery.Snapshot), logs: logs}
	done := make(chan error, 1)
	var inUpdate sync.Mutex
	go func() {
		done <- src.Run(ctx, func(s discovery.Snapshot) {
			if !inUpdate.TryLock() {
				t.Error("update called concurrently")
				return
			}
			defer inUpdate.Unlock()
			select {
			case r.snaps <- s:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after cancel, want nil", err)
			}
		case <-time.After(timeout):
			t.Errorf("Run did not return within %v of cancel", timeout)
		}
	})
	return r
}

// Next returns the next snapshot.
func (r *Running) Next() discovery.Snapshot {
	r.t.Helper()
	select {
	case s := <-r.snaps:
		r.Last = s
		return s
	case <-time.After(r.timeout):
		r.t.Fatalf("no snapshot within %v%s", r.timeout, r.logText())
	}
	return discovery.Snapshot{}
}

// Pending returns a snapshot the source is delivering right now, if any, without waiting.
func (r *Running) Pending() (discovery.Snapshot, bool) {
	select {
	case s := <-r.snaps:
		r.Last = s
		return s, true
	default:
		return discovery.Snapshot{}, false
	}
}

// WaitFor reads snapshots until ok holds for one, and returns it.
func (r *Running) WaitFor(what string, ok func(discovery.Snapshot) bool) discovery.Snapshot {
	r.t.Helper()
	deadline := time.After(r.timeout)
	for {
		select {
		case s := <-r.snaps:
			r.Last = s
			if ok(s) {
				return s
			}
		case <-deadline:
			r.t.Fatalf("no snapshot with %s within %v; last:%s%s", what, r.timeout, Dump(r.Last), r.logText())
		}
	}
}

func (r *Running) logText() string {
	if r.logs == nil {
		return ""
	}
	return "\nlogs:\n" + r.logs.String()
}

// Dump renders a snapshot for failure messages.
func Dump(s discovery.Snapshot) string {
	var b strings.Builder
	for _, in := range s.Instances {
		fmt.Fprintf(&b, "\n  %s/%s %s node=%s ready=%v attrs=%v", in.Service, in.ID, in.URL, in.Node, in.Ready, in.Attributes)
	}
	fmt.Fprintf(&b, "\n  nodes=%v", s.Nodes)
	return b.String()
}

// Find returns the instance of service with id in s.
func Find(s discovery.Snapshot, service, id string) (discovery.Instance, bool) {
	for _, in := range s.Instances {
		if in.Service == service && in.ID == id {
			return in, true
		}
	}
	return discovery.Instance{}, false
}

// SyncBuffer is a log sink that tests read while the source writes.
type SyncBuffer = testenv.SyncBuffer

// WaitLog waits until logs contain want, for up to timeout.
func WaitLog(t testing.TB, logs fmt.Stringer, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q within %v; logs:\n%s", want, timeout, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Logger logs at debug level to buf.
func Logger(buf *SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
