package gateway

import (
	"context"
	"fmt"
	"math"
	"time"
)

// scalerState is what an autoscaler remembers of a function between ticks.
type scalerState struct {
	aboveSince time.Time // rps: since when the rate has been above the threshold (zero: it is not)
	firing     bool      // rps: the threshold has held for a window (OpenFaaS' alert fires)
	lastUp     time.Time // rps: the last scale-up, so it adds one step per window
	first      time.Time // the first tick: a function never called is idle since then

	// cpu: the last reading per instance, and since when the mean has been above the
	// threshold (or below half of it).
	cpuLast            map[string]cpuReading
	cpuAbove, cpuBelow time.Time
	cpuLastChange      time.Time
	// concurrency: requests under way per tick, and when the panic mode ends.
	inflight   []sample
	panicUntil time.Time

	// asleep: the idle timeout scaled the function to zero when the last request had begun at
	// asleepReq (Unix ns). Until a request begins after it, no scaler may scale up: their
	// windows still hold the busy spell before the idle one, and acting on it would bring an
	// instance back every other tick only for idle to remove it again.
	asleep    bool
	asleepReq int64
}

type cpuReading struct {
	at  time.Time
	cpu float64
}

type sample struct {
	at time.Time
	v  float64
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
// idle time.
func (fs *fnState) rate(now time.Time, window time.Duration) (rps float64, wanted int, idle time.Duration, busy bool) {
	secs := int64(math.Max(1, math.Round(window.Seconds())))
	cur := now.Unix()
	var n int64
	for s := cur - secs; s < cur; s++ {
		n += fs.perSecond.count(s)
	}
	idle = -1
	if last := fs.lastReq.Load(); last != 0 {
		idle = now.Sub(time.Unix(0, last))
	}
	fs.mu.Lock()
	wanted = fs.wanted
	fs.mu.Unlock()
	return float64(n) / float64(secs), wanted, idle, fs.inflight.Load() > 0
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
	if st.asleep {
		if wanted == 0 && !busy && fs.lastReq.Load() == st.asleepReq {
			return // scaled to zero and no traffic since: nothing to decide
		}
		st.asleep = false
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
	switch f.Scaler {
	case ScalerCPU:
		fs.tickCPU(now, st, wanted)
	case ScalerConcurrency:
		fs.tickConcurrency(now, st, wanted)
	}
	// Scale to zero: no request under way and none begun for the idle timeout.
	if f.IdleTimeout > 0 && wanted > 0 && !busy && idle >= f.IdleTimeout {
		fs.setWanted(0, "idle")
		st.asleep, st.asleepReq = true, fs.lastReq.Load()
		// The windows' samples belong to the spell before the idle one.
		st.inflight = nil
		st.aboveSince, st.firing = time.Time{}, false
		st.cpuAbove, st.cpuBelow = time.Time{}, time.Time{}
	}
}

// cpuSource is a Provider that can tell an instance's CPU time.
type cpuSource interface {
	CPUSeconds(ctx context.Context, inst Instance) (float64, error)
}

// meanCPU is the ready instances' mean CPU use since the last tick, as a share of their limit;
// ok is false until every instance has two readings.
func (fs *fnState) meanCPU(now time.Time, st *scalerState) (float64, bool) {
	src, ok := fs.g.cfg.Provider.(cpuSource)
	if !ok {
		return 0, false
	}
	fs.mu.Lock()
	ready := append([]*instance(nil), fs.ready...)
	fs.mu.Unlock()
	if st.cpuLast == nil {
		st.cpuLast = map[string]cpuReading{}
	}
	seen := map[string]bool{}
	var sum float64
	n := 0
	complete := len(ready) > 0
	for _, in := range ready {
		seen[in.ID] = true
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		cpu, err := src.CPUSeconds(ctx, in.Instance)
		cancel()
		if err != nil {
			complete = false
			continue
		}
		last, had := st.cpuLast[in.ID]
		st.cpuLast[in.ID] = cpuReading{now, cpu}
		if !had || !now.After(last.at) {
			complete = false
			continue
		}
		sum += (cpu - last.cpu) / now.Sub(last.at).Seconds() / fs.fn.CPULimit
		n++
	}
	for id := range st.cpuLast {
		if !seen[id] {
			delete(st.cpuLast, id)
		}
	}
	if !complete || n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func (fs *fnState) tickCPU(now time.Time, st *scalerState, wanted int) {
	f := fs.fn
	u, ok := fs.meanCPU(now, st)
	if !ok {
		return
	}
	fs.mu.Lock()
	ready := len(fs.ready)
	fs.mu.Unlock()
	switch {
	case u > f.CPUThreshold:
		st.cpuBelow = time.Time{}
		if st.cpuAbove.IsZero() {
			st.cpuAbove = now
		}
		// One step per window, and only once the last step's instances are all up.
		if now.Sub(st.cpuAbove) >= f.CPUWindow && now.Sub(st.cpuLastChange) >= f.CPUWindow && ready >= wanted {
			fs.setWanted(wanted+f.CPUStep, fmt.Sprintf("cpu %.0f%% above %.0f%% for %v", u*100, f.CPUThreshold*100, f.CPUWindow))
			st.cpuLastChange = now
		}
	case u < f.CPUThreshold/2:
		st.cpuAbove = time.Time{}
		if st.cpuBelow.IsZero() {
			st.cpuBelow = now
		}
		if now.Sub(st.cpuBelow) >= f.CPUWindow && now.Sub(st.cpuLastChange) >= f.CPUWindow && wanted > max(f.MinReplicas, 1) {
			// What the same work needs at the threshold.
			n := int(math.Ceil(u * float64(ready) / f.CPUThreshold))
			fs.setWanted(max(n, 1), fmt.Sprintf("cpu %.0f%% below %.0f%% for %v", u*100, f.CPUThreshold*50, f.CPUWindow))
			st.cpuLastChange = now
		}
	default:
		st.cpuAbove, st.cpuBelow = time.Time{}, time.Time{}
	}
}

// tickConcurrency is Knative's KPA on the requests under way, sampled every tick.
func (fs *fnState) tickConcurrency(now time.Time, st *scalerState, wanted int) {
	f := fs.fn
	st.inflight = append(st.inflight, sample{now, float64(fs.inflight.Load())})
	for len(st.inflight) > 0 && now.Sub(st.inflight[0].at) > f.StableWindow {
		st.inflight = st.inflight[1:]
	}
	mean := func(window time.Duration) float64 {
		var sum float64
		n := 0
		for _, s := range st.inflight {
			if now.Sub(s.at) <= window {
				sum += s.v
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	const utilization = 0.7 // Knative's target utilization
	per := f.TargetConcurrency * utilization
	stable := int(math.Ceil(mean(f.StableWindow) / per))
	panicWant := int(math.Ceil(mean(f.PanicWindow) / per))
	fs.mu.Lock()
	ready := len(fs.ready)
	fs.mu.Unlock()
	if panicWant >= 2*max(ready, 1) && panicWant > wanted {
		st.panicUntil = now.Add(f.StableWindow)
		fs.setWanted(panicWant, fmt.Sprintf("panic: %d wanted over %v", panicWant, f.PanicWindow))
		return
	}
	target := stable
	if now.Before(st.panicUntil) {
		target = max(target, wanted) // no scaling down while panicking
	}
	// With min 0, scaling to zero is the idle timeout's, not the scaler's.
	target = max(target, min(1, wanted))
	if target != wanted {
		fs.setWanted(target, fmt.Sprintf("concurrency %.1f over %v", mean(f.StableWindow), f.StableWindow))
	}
}
