package gateway

import (
	"context"
	"math"
	"time"
)

// scalerState is what an autoscaler remembers of a function between ticks.
type scalerState struct {
	aboveSince time.Time // rps: since when the rate has been above the threshold (zero: it is not)
	firing     bool      // rps: the threshold has held for a window (OpenFaaS' alert fires)
	lastUp     time.Time // rps: the last scale-up, so it adds one step per window
	first      time.Time // the first tick: a function never called is idle since then
}

// autoscale runs every function's autoscaler and idle check each tick until ctx ends.
func (g *Gateway) autoscale(ctx context.Context) {
	t := time.NewTicker(g.cfg.Tick)
	defer t.Stop()
	states := map[string]*scalerState{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := g.clock()
		for name, fs := range g.fns {
			st := states[name]
			if st == nil {
				st = &scalerState{}
				states[name] = st
			}
			fs.tick(now, st)
		}
	}
}

// rate is the requests per second begun over the whole seconds of the last window, and the
// idle time; it also forgets seconds older than a minute.
func (fs *fnState) rate(now time.Time, window time.Duration) (rps float64, wanted int, idle time.Duration, busy bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	secs := int64(math.Max(1, math.Round(window.Seconds())))
	cur := now.Unix()
	var n int64
	for s := cur - secs; s < cur; s++ {
		n += fs.perSecond[s]
	}
	for s := range fs.perSecond {
		if s < cur-60 {
			delete(fs.perSecond, s)
		}
	}
	idle = -1
	if !fs.lastReq.IsZero() {
		idle = now.Sub(fs.lastReq)
	}
	return float64(n) / float64(secs), fs.wanted, idle, fs.inflight.Load() > 0
}

func (fs *fnState) tick(now time.Time, st *scalerState) {
	f := fs.fn
	if st.first.IsZero() {
		st.first = now
	}
	rps, wanted, idle, busy := fs.rate(now, f.RPSWindow)
	if idle < 0 {
		idle = now.Sub(st.first)
	}
	if f.Scaler == ScalerRPS {
		switch {
		case rps > f.RPSThreshold:
			if st.aboveSince.IsZero() {
				st.aboveSince = now
			}
			if now.Sub(st.aboveSince) >= f.RPSWindow {
				st.firing = true
			}
			// OpenFaaS CE: each time the alert fires, add 20% of the maximum.
			if st.firing && now.Sub(st.lastUp) >= f.RPSWindow && wanted < f.MaxReplicas {
				step := int(math.Ceil(0.2 * float64(f.MaxReplicas)))
				fs.setWanted(wanted+step, "rps above threshold")
				st.lastUp = now
			}
		default:
			st.aboveSince = time.Time{}
			if st.firing {
				st.firing = false
				fs.setWanted(max(f.MinReplicas, 1), "rps back below threshold")
			}
		}
	}
	// Scale to zero: no request under way and none begun for the idle timeout.
	if f.IdleTimeout > 0 && wanted > 0 && !busy && idle >= f.IdleTimeout {
		fs.setWanted(0, "idle")
	}
}
