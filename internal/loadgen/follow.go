package loadgen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
)

// Follower keeps the latest progress line (see the package doc) of each of several workload
// instances, fed their stdout a line at a time, and sums them up. A workload kind whose
// command runs a Session builds its progress text on one (the kind SDK's Progress: Line, Text).
// Safe for concurrent use.
type Follower struct {
	text func(total ProgressLine) string

	mu   sync.Mutex
	last map[string]ProgressLine // guarded by mu
}

// Follow returns a Follower whose Text is text applied to the instances' summed progress
// (Total), or "" until an instance has written a progress line.
func Follow(text func(total ProgressLine) string) *Follower {
	return &Follower{text: text, last: map[string]ProgressLine{}}
}

// Line takes one line of instance's stdout; lines other than progress and done lines are
// ignored.
func (f *Follower) Line(instance string, line []byte) {
	var pl ProgressLine
	if json.Unmarshal(line, &pl) != nil || (pl.Type != "progress" && pl.Type != "done") {
		return
	}
	f.mu.Lock()
	f.last[instance] = pl
	f.mu.Unlock()
}

// Total sums the latest line of every instance: counters and throughputs add up, per series
// too, and a series' p50 and p99 are the largest of the instances' (the worst seen), so that
// a lagging instance shows. ok is false until a line has arrived. A done line counts with its
// final counters and its post-warm-up throughput, as the package doc says.
func (f *Follower) Total() (total ProgressLine, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	total = ProgressLine{Type: "progress", Series: map[string]SeriesProgress{}}
	names := make([]string, 0, len(f.last))
	for n := range f.last {
		names = append(names, n)
	}
	sort.Strings(names) // sums of floats in one order: the same text for the same lines
	for _, n := range names {
		pl := f.last[n]
		total.TS = max(total.TS, pl.TS)
		total.Sent += pl.Sent
		total.OK += pl.OK
		total.Errors += pl.Errors
		total.ThroughputRPS += pl.ThroughputRPS
		for name, s := range pl.Series {
			t := total.Series[name]
			t.Sent += s.Sent
			t.OK += s.OK
			t.Errors += s.Errors
			t.ThroughputRPS += s.ThroughputRPS
			t.P50, t.P99 = max(t.P50, s.P50), max(t.P99, s.P99)
			total.Series[name] = t
		}
	}
	return total, len(names) > 0
}

// Latest is each instance's latest line (a copy), for a text that weighs instances
// differently (readings per request).
func (f *Follower) Latest() map[string]ProgressLine {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]ProgressLine, len(f.last))
	for n, pl := range f.last {
		out[n] = pl
	}
	return out
}

// Text is the follower's text of Total, or "" before the first progress line.
func (f *Follower) Text() string {
	total, ok := f.Total()
	if !ok {
		return ""
	}
	return f.text(total)
}

// CountsText is the usual progress of a load: "120 req/s  sent 1200, none failed" for unit
// "req"; failures as "N failed" with their share, never "errors N", which reads like an HTTP
// status ("errors 503").
func CountsText(rate float64, sent, failed int64, unit string) string {
	line := fmt.Sprintf("%.0f %s/s  sent %d", rate, unit, sent)
	if failed == 0 {
		return line + ", none failed"
	}
	share := 100.0
	if sent > 0 {
		share = 100 * float64(failed) / float64(sent)
	}
	return fmt.Sprintf("%s, %d failed (%.1f%%)", line, failed, share)
}

// MsText writes a latency in ms for a progress line: "1.25", "35.1", "1234".
func MsText(ms float64) string {
	if ms >= 100 {
		return fmt.Sprintf("%.0f", ms)
	}
	return strconv.FormatFloat(ms, 'g', 3, 64)
}
