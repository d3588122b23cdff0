package pool

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// connTimes follows an HTTP probe's connection through httptrace: when the connection was
// ready (GotConn) and how long the TCP connect took if one was made for it. Times are
// nanoseconds since base plus one (0: not yet); the dial reports from its own goroutine.
type connTimes struct {
	base      time.Time
	got       atomic.Int64
	dialStart atomic.Int64
	dialDone  atomic.Int64
	// onConn runs once when the connection is ready.
	onConn func()
}

func (ct *connTimes) mark() int64 { return int64(time.Since(ct.base)) + 1 }

func (ct *connTimes) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectStart: func(string, string) { ct.dialStart.CompareAndSwap(0, ct.mark()) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				ct.dialDone.CompareAndSwap(0, ct.mark())
			}
		},
		GotConn: func(httptrace.GotConnInfo) {
			if ct.got.CompareAndSwap(0, ct.mark()) && ct.onConn != nil {
				ct.onConn()
			}
		},
	})
}

// sinceConn is the time since the connection was ready, or since base if it never was (a
// failure to connect, which then took all that time).
func (ct *connTimes) sinceConn() time.Duration {
	d := time.Since(ct.base)
	if g := ct.got.Load(); g > 0 {
		d -= time.Duration(g - 1)
	}
	return max(d, 0)
}

// connect is the TCP connect time of a connection dialed for the request (0: none was).
func (ct *connTimes) connect() time.Duration {
	s, d := ct.dialStart.Load(), ct.dialDone.Load()
	if s == 0 || d < s {
		return 0
	}
	return max(time.Duration(d-s), time.Nanosecond)
}
