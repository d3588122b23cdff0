package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Mix is one schedule (one rate, or one set of closed-loop clients) whose requests are of
// several operation types, each recorded as its own series: a YCSB workload's reads, updates
// and inserts share the arrival process but get separate histograms. The proportions are the
// Mix's, since Next chooses each request's type.
type Mix interface {
	// Ops names the operation types in the order Next indexes them; they are the series names.
	Ops() []string
	// Next returns the next request: its operation (an index into Ops) and what performs it.
	// ok == false means the mix is exhausted (YCSB's operationcount): its schedule ends, and
	// Run ends early, with status "ok", once every schedule has. Next is called by the open-loop
	// scheduler and by every closed-loop client, so it must be safe for concurrent use.
	Next() (op int, do Target, ok bool)
}

// schedule is what one Series drives: one recorder per output series (one for a Target, one
// per operation for a Mix).
type schedule struct {
	target    Target
	mix       Mix
	recs      []*recorder
	exhausted atomic.Bool
}

func newSchedule(s Series, t0 time.Time, cfg Config) *schedule {
	sc := &schedule{target: s.Target, mix: mixOf(s)}
	if sc.mix == nil {
		sc.recs = []*recorder{newRecorder(s.Name, t0, cfg)}
		return sc
	}
	for _, op := range sc.mix.Ops() {
		sc.recs = append(sc.recs, newRecorder(op, t0, cfg))
	}
	return sc
}

// next picks the recorder and target of the next request.
func (sc *schedule) next() (*recorder, Target, bool) {
	if sc.mix == nil {
		return sc.recs[0], sc.target, true
	}
	op, t, ok := sc.mix.Next()
	if !ok {
		sc.exhausted.Store(true)
		return nil, nil, false
	}
	if op < 0 || op >= len(sc.recs) || t == nil {
		// A broken Mix is a programming error; ending its schedule keeps the run's outputs valid.
		sc.exhausted.Store(true)
		return nil, nil, false
	}
	return sc.recs[op], t, true
}

// advance moves every recorder's watermark (see recorder.watermark).
func (sc *schedule) advance(next time.Duration) {
	for _, r := range sc.recs {
		r.advance(next)
	}
}

// outputNames lists the series names a Series produces.
func (s Series) outputNames() []string {
	if m := mixOf(s); m != nil {
		return m.Ops()
	}
	return []string{s.Name}
}

// validateOutputs checks names across all series, Mix operations included.
func validateOutputs(series []Series) error {
	seen := map[string]bool{}
	for _, s := range series {
		if m := mixOf(s); m != nil && len(m.Ops()) == 0 {
			return fmt.Errorf("series %q: the mix has no operations", s.Name)
		}
		for _, n := range s.outputNames() {
			if err := CheckSeriesName(n); err != nil {
				return fmt.Errorf("series %q: %w", s.Name, err)
			}
			if seen[n] {
				return fmt.Errorf("series name %q: used twice", n)
			}
			seen[n] = true
		}
	}
	return nil
}

// allExhausted returns a channel closed when every schedule's goroutines have returned and
// each schedule ran out of requests (as opposed to reaching the duration or being stopped).
func allExhausted(wg *sync.WaitGroup, scheds []*schedule) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		wg.Wait()
		for _, sc := range scheds {
			if !sc.exhausted.Load() {
				return
			}
		}
		close(ch)
	}()
	return ch
}

// MixTarget makes m the Target of a Series: Run then records one series per operation, named
// by m.Ops() (the Series' Name only names the schedule in errors).
func MixTarget(m Mix) Target { return mixTarget{m} }

type mixTarget struct{ Mix }

// Do is never called by Run, which asks the Mix for each request instead.
func (mixTarget) Do(context.Context) error {
	return errors.New("loadgen: a MixTarget is scheduled by Run, not called")
}

// mixOf returns the Mix of a series, or nil.
func mixOf(s Series) Mix {
	if mt, ok := s.Target.(mixTarget); ok {
		return mt.Mix
	}
	return nil
}
