package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/results"
)

// requestCounter follows the workloads' progress lines (see package loadgen) so the runner can
// fire after_requests events (the live line is the kinds' own: workProgress).
type requestCounter struct {
	mu      sync.Mutex
	last    map[string]loadgen.ProgressLine
	clocks  map[string]sendClock
	changed chan struct{}
}

// sendClock is when a workload's last progress line arrived and its send rate before it, so
// that the count between lines can be estimated.
type sendClock struct {
	at   time.Time
	rate float64 // requests sent per second between the last two lines
}

// maxExtrapolation bounds how far past its last progress line a workload's count is
// extrapolated (lines come every second; a stalled workload must not look busy).
const maxExtrapolation = 1500 * time.Millisecond

func newRequestCounter() *requestCounter {
	return &requestCounter{last: map[string]loadgen.ProgressLine{}, clocks: map[string]sendClock{}, changed: make(chan struct{}, 1)}
}

// writer returns the stdout sink of workload name: it splits lines and keeps the latest.
func (c *requestCounter) writer(name string) io.Writer {
	return &lineParser{onLine: func(line []byte) {
		var pl loadgen.ProgressLine
		if json.Unmarshal(line, &pl) != nil || (pl.Type != "progress" && pl.Type != "done") {
			return
		}
		c.mu.Lock()
		clk := sendClock{at: time.Now()}
		prev, seen := c.last[name]
		switch {
		case pl.Type != "progress":
		case seen && pl.TS > prev.TS && pl.Sent >= prev.Sent:
			clk.rate = float64(pl.Sent-prev.Sent) / (pl.TS - prev.TS)
		case !seen && pl.TS > 0:
			clk.rate = float64(pl.Sent) / pl.TS // the first line: the rate since the start
		}
		c.last[name], c.clocks[name] = pl, clk
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}}
}

// sentBy estimates how many requests the workloads have sent by now: each one's last count
// plus its send rate since that line (at most maxExtrapolation of it), so that after_requests
// events fire within a few requests of their count rather than at the next progress line. It
// also returns the summed send rate, to predict when a count will be reached.
func (c *requestCounter) sentBy(now time.Time) (sent int64, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, pl := range c.last {
		sent += pl.Sent
		if pl.Type == "done" {
			continue
		}
		clk := c.clocks[name]
		if d := now.Sub(clk.at); d > 0 && clk.rate > 0 {
			sent += int64(clk.rate * min(d, maxExtrapolation).Seconds())
			if d < maxExtrapolation {
				rate += clk.rate
			}
		}
	}
	return sent, rate
}

type lineParser struct {
	buf    []byte
	onLine func([]byte)
}

func (p *lineParser) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.onLine(p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 1<<20 { // a line this long is not a progress line
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// eventLog writes events.csv.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
	w  *csv.Writer
}

func newEventLog(path string) (*eventLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	_ = w.Write(results.EventsHeader)
	w.Flush()
	return &eventLog{f: f, w: w}, nil
}

func (l *eventLog) write(t time.Duration, action, target, detail, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.Write([]string{fmt.Sprintf("%.3f", t.Seconds()), action, target, detail, status})
	l.w.Flush()
}

func (l *eventLog) close() { l.w.Flush(); l.f.Close() }

// scheduler fires the scenario's events: `at` events on time, `after_requests` events once the
// workloads together have sent that many requests. Events run one at a time, in timeline order
// for equal triggers, so a heal never overtakes the partition it follows.
type scheduler struct {
	ex      *execution
	t0      time.Time
	log     *eventLog
	counter *requestCounter
}

func (s *scheduler) run(ctx context.Context) {
	var timed, counted []Event
	for _, ev := range s.ex.sc.Events {
		if ev.At != nil {
			timed = append(timed, ev)
		} else {
			counted = append(counted, ev)
		}
	}
	sort.SliceStable(timed, func(i, j int) bool { return timed[i].At.Duration < timed[j].At.Duration })
	sort.SliceStable(counted, func(i, j int) bool { return counted[i].AfterRequests < counted[j].AfterRequests })
	for len(timed) > 0 || len(counted) > 0 {
		sent, rate := s.counter.sentBy(time.Now())
		for len(counted) > 0 && sent >= counted[0].AfterRequests {
			s.fire(ctx, counted[0])
			counted = counted[1:]
		}
		var wait <-chan time.Time
		var timer *time.Timer
		next := time.Duration(-1) // until the next check; -1: only on a progress line
		if len(timed) > 0 {
			d := time.Until(s.t0.Add(timed[0].At.Duration))
			if d <= 0 {
				s.fire(ctx, timed[0])
				timed = timed[1:]
				continue
			}
			next = d
		}
		if len(counted) > 0 && rate > 0 {
			// Wake when the count should be reached; a late estimate is corrected by the next check.
			d := time.Duration(float64(counted[0].AfterRequests-sent)/rate*float64(time.Second)) + time.Millisecond
			if next < 0 || d < next {
				next = d
			}
		}
		if next >= 0 {
			timer = time.NewTimer(next)
			wait = timer.C
		}
		select {
		case <-ctx.Done():
		case <-wait:
		case <-s.counter.changed:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (s *scheduler) fire(ctx context.Context, ev Event) {
	t := time.Since(s.t0)
	target := eventTarget(ev)
	var detail string
	var err error
	switch ev.Action {
	case ActionStart:
		detail = "started"
		err = s.startDeferred(ctx, ev.Component)
	case ActionSet:
		ex := s.ex
		detail = "config changed"
		if k := ex.kinds[ev.Component]; k == nil || k.Set == nil {
			err = fmt.Errorf("component %q cannot be changed at run time", ev.Component)
		} else {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = k.Set(cctx, ex.envs[ev.Component], ex.cfgs[ev.Component], &ev.Config)
			cancel()
		}
	default:
		f := ev.Fault
		f.Action = ev.Action
		detail, err = s.ex.pf.Apply(ctx, f)
	}
	status := "ok"
	if err != nil {
		status = "error: " + trimErr(err)
	}
	s.log.write(t, ev.Action, target, detail, status)
	s.ex.pr.note(fmt.Sprintf("%6.1fs  %s %s  %s", t.Seconds(), ev.Action, target, status))
}

// startDeferred starts a deferred component and waits until it is ready, like the components
// started with the run.
func (s *scheduler) startDeferred(ctx context.Context, name string) error {
	for _, c := range s.ex.sc.Components {
		if c.Name == name {
			_, err := s.ex.start(ctx, c, nil)
			return err
		}
	}
	return fmt.Errorf("no component %q", name)
}

func eventTarget(ev Event) string {
	switch {
	case ev.Component != "":
		return ev.Component
	case ev.Node != "":
		return ev.Node
	case len(ev.Link) > 0:
		return strings.Join(ev.Link, "-")
	case len(ev.Groups) > 0:
		var g []string
		for _, grp := range ev.Groups {
			g = append(g, strings.Join(grp, ","))
		}
		return strings.Join(g, "|")
	}
	return ""
}
