package loadgen

import (
	"context"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// runState is shared by the executors of one Run.
type runState struct {
	cfg Config
	t0  time.Time
	// stop is the user's context: cancelling it stops scheduling at once.
	stop context.Context
	// reqBase parents every request's context. It is not cancelled by stop, so requests in
	// flight at a stop can finish within their timeout; giveUp cancels it when that wait ends.
	reqBase context.Context
	giveUp  context.CancelFunc
	work    sync.WaitGroup // schedulers, closed-loop clients and open-loop requests
	sched   sync.WaitGroup // schedulers and closed-loop clients only
}

// openLoop schedules request i at t0 + i/rate until the duration ends, the run stops or a
// Mix runs out.
func (st *runState) openLoop(sc *schedule) {
	defer st.work.Done()
	defer st.sched.Done()
	cfg := st.cfg
	slots := make(chan struct{}, cfg.MaxInflight)
	// idle is unbuffered: a send succeeds only when a worker is waiting for work; otherwise a
	// new worker starts, so at most MaxInflight workers exist (each holds a slot while busy).
	idle := make(chan openRequest)
	defer close(idle)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	at := func(i int64) time.Duration { return time.Duration(float64(i) * float64(time.Second) / cfg.Rate) }

	for i := int64(0); ; i++ {
		intended := at(i)
		if intended >= cfg.Duration {
			sc.advance(intended) // lets the closer finish the last second
			return
		}
		// Behind schedule (a slow slot or a GC pause) means no sleep: the backlog is sent at
		// once, each request keeping its own intended time.
		if wait := intended - time.Since(st.t0); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-st.stop.Done():
				return
			}
		}
		rec, target, ok := sc.next()
		if !ok {
			sc.advance(intended)
			return
		}
		next := at(i + 1)
		// A Mix's other recorders see no request now; their watermark only needs to pass each
		// second's end for it to close, so it moves once per second instead of per request.
		if len(sc.recs) > 1 && next/time.Second != intended/time.Second {
			sc.advance(next)
		}
		deadline := intended + cfg.Timeout
		select {
		case slots <- struct{}{}:
		default:
			timer.Reset(max(deadline-time.Since(st.t0), 0))
			select {
			case slots <- struct{}{}:
				timer.Stop() // go >= 1.23 timers: no stale value to drain before the next Reset
			case <-timer.C:
				rec.dispatch(intended, next)
				rec.record(intended, 0, ErrTimeout, unsentInstance(target))
				continue
			case <-st.stop.Done():
				return
			}
		}
		rec.dispatch(intended, next)
		req := openRequest{target: target, rec: rec, intended: intended, deadline: deadline}
		select {
		case idle <- req:
		default:
			st.work.Add(1)
			go st.openWorker(req, idle, slots)
		}
	}
}

// openRequest is one scheduled request of an open loop, handed to a worker goroutine.
type openRequest struct {
	target             Target
	rec                *recorder
	intended, deadline time.Duration
}

// openWorker sends req, then waits on idle for the next request until the loop ends. Reusing
// workers instead of starting a goroutine per request keeps the generator's own CPU cost down
// (a fresh goroutine grows its stack through the client library on every request, ~10% of the
// generator's CPU at 8000 requests/s), and that CPU is shared with the server being measured.
func (st *runState) openWorker(req openRequest, idle <-chan openRequest, slots <-chan struct{}) {
	defer st.work.Done()
	for ok := true; ok; req, ok = <-idle {
		st.do(req.target, req.rec, req.intended, req.deadline)
		<-slots
	}
}

// closedLoop runs one client: send, wait for the answer, think, repeat.
func (st *runState) closedLoop(sc *schedule) {
	defer st.work.Done()
	defer st.sched.Done()
	cfg := st.cfg
	var timer *time.Timer
	for st.stop.Err() == nil {
		rec, target, ok := sc.next()
		if !ok {
			return
		}
		intended, ok := rec.begin(cfg.Duration)
		if !ok {
			return
		}
		st.do(target, rec, intended, intended+cfg.Timeout)
		if cfg.ThinkTime > 0 {
			if timer == nil {
				timer = time.NewTimer(cfg.ThinkTime)
				defer timer.Stop()
			} else {
				timer.Reset(cfg.ThinkTime)
			}
			select {
			case <-timer.C:
			case <-st.stop.Done():
				return
			}
		}
	}
}

// do performs one request and records it; latency runs from the intended time.
func (st *runState) do(t Target, rec *recorder, intended, deadline time.Duration) {
	ctx, cancel := context.WithDeadline(st.reqBase, st.t0.Add(deadline))
	var err error
	var instance string
	if it, ok := t.(InstanceTarget); ok {
		if instance, err = it.DoInstance(ctx); instance == "" {
			instance = results.NoInstance
		}
	} else {
		err = t.Do(ctx)
	}
	latency := time.Since(st.t0) - intended
	cancel()
	errType := ClassifyError(err)
	// A target that ignores its deadline still cannot report a success past it.
	if errType == "" && latency > st.cfg.Timeout {
		errType = ErrTimeout
	}
	rec.record(intended, latency, errType, instance)
}

// unsentInstance labels a request that was never sent: NoInstance for an InstanceTarget, so
// the instance counts still add up to every request, "" otherwise.
func unsentInstance(t Target) string {
	if _, ok := t.(InstanceTarget); ok {
		return results.NoInstance
	}
	return ""
}
