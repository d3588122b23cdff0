// Package gcfloor keeps the Go garbage collector's heap goal from falling below a floor.
//
// A server whose live heap is small but whose request path allocates a lot (gRPC's per-request
// headers and buffers dominate continuum kv's allocations) otherwise collects several times a
// second with GOGC=100, and each cycle takes a quarter of the CPUs plus mark assists from the
// goroutines serving requests, which is what shows up in tail latency on a 2-CPU machine. Raising
// the goal only while the live heap is small trades a bounded amount of memory (at most the
// floor) for far fewer cycles; once the live heap exceeds half the floor, GOGC is back at its
// default and memory grows as it would without this package.
//
// It is process-wide state (debug.SetGCPercent), so only a command's main function starts it,
// and not at all when the user set GOGC or GOMEMLIMIT: their explicit choice wins.
package gcfloor

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// defaultPercent is GOGC's default.
const defaultPercent = 100

// Percent is the GOGC value that makes the heap goal live*(1+GOGC/100) reach floor, never below
// the default, and never above max (a live heap of a few bytes would ask for an absurd value).
func Percent(live, floor uint64) int {
	const max = 10000
	if live == 0 || live*2 >= floor {
		return defaultPercent
	}
	p := (floor - live) * 100 / live
	if p > max {
		return max
	}
	return int(p)
}

// UserTuned reports whether the environment already sets the collector's policy.
func UserTuned() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}

// Run adjusts GOGC every interval until ctx is done, then restores the default. floor is the
// smallest heap goal in bytes (0 disables).
func Run(ctx context.Context, floor uint64, interval time.Duration) {
	if floor == 0 {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := debug.SetGCPercent(defaultPercent)
	defer debug.SetGCPercent(current)
	current = defaultPercent
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			// Only a change of more than a tenth is applied: SetGCPercent briefly stops the
			// world, and the live heap moves a little with every cycle.
			if p := Percent(sample[0].Value.Uint64(), floor); p*10 > current*11 || p*10 < current*9 {
				debug.SetGCPercent(p)
				current = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
