package testenv

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records a failure instead of ending the test, so the failing path can be checked.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
	for _, a := range args {
		f.failed += " " + toString(a)
	}
}

func toString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case error:
		return v.Error()
	case time.Duration:
		return v.String()
	}
	return ""
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	Eventually(t, time.Minute, "the third call", func() bool { return calls.Add(1) >= 3 })
	if calls.Load() != 3 {
		t.Errorf("cond called %d times, want 3", calls.Load())
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("took %v for three polls", time.Since(start))
	}
}

func TestEventuallyFailsNamingWhatAndTheLastError(t *testing.T) {
	ft := &fakeT{}
	Eventually(ft, 20*time.Millisecond, "never", func() bool { return false })
	if !strings.Contains(ft.failed, "never") {
		t.Errorf("failure %q does not name what was awaited", ft.failed)
	}
	ft = &fakeT{}
	n := 0
	EventuallyNoError(ft, 20*time.Millisecond, "a value", func() error { n++; return errors.New("value is 7") })
	if !strings.Contains(ft.failed, "value is 7") || n < 2 {
		t.Errorf("failure %q after %d calls: want the last error, and a call at the deadline", ft.failed, n)
	}
}
