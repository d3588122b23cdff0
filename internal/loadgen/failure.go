package loadgen

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// StatusFailed is a run that got nothing through in its measured time: every request failed,
// or none was sent. A run that ends that way is not a measurement of the target but of its
// absence, so commands exit non-zero (ExitNothingThrough) rather than report numbers.
const StatusFailed = "failed"

// ExitNothingThrough is the exit code of a workload command whose run ended StatusFailed.
// The scenario runner tells it from other failures: a workload that declares
// expect_failures (a partition experiment) may end this way without failing the run.
const ExitNothingThrough = 3

// NothingThroughError is Result.Failure's error: it says what failed and how often.
type NothingThroughError struct {
	Sent     int64
	ByType   map[string]int64
	Interval string // what "nothing" covers, e.g. "in the measured 30s"
}

func (e *NothingThroughError) Error() string {
	if e.Sent == 0 {
		return fmt.Sprintf("nothing got through: no requests were sent %s: is the target up and reachable?", e.Interval)
	}
	var types []string
	for _, k := range slices.Sorted(maps.Keys(e.ByType)) {
		types = append(types, fmt.Sprintf("%s: %d", k, e.ByType[k]))
	}
	return fmt.Sprintf("nothing got through: all %d requests failed %s (%s): is the target up and reachable?",
		e.Sent, e.Interval, strings.Join(types, ", "))
}

// ExitStatus is the process exit code for this error (cmd/continuum honours it).
func (e *NothingThroughError) ExitStatus() int { return ExitNothingThrough }

// Failure is a *NothingThroughError when the run got nothing through (Stats.Status is
// StatusFailed), else nil. An interrupted run is not judged: it was stopped, not refused.
func (r *Result) Failure() error {
	if r == nil || r.Stats.Status != StatusFailed {
		return nil
	}
	measured := time.Duration(r.Stats.MeasuredS * float64(time.Second)).Round(100 * time.Millisecond)
	e := &NothingThroughError{ByType: map[string]int64{}, Interval: "in the measured " + measured.String()}
	for _, name := range counted(r.Stats, r.countSeries) {
		s := r.Stats.Series[name]
		e.Sent += s.Sent
		for k, v := range s.ErrorsByType {
			e.ByType[k] += v
		}
	}
	return e
}

// counted is the names of the series that count (Config.CountSeries), sorted.
func counted(st results.Stats, count []string) []string {
	set := countedSet(count)
	var names []string
	for name := range st.Series {
		if set == nil || set[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// judge turns StatusOK into StatusFailed when no counted series had a success.
func judge(st *results.Stats, count []string) {
	if st.Status != StatusOK {
		return
	}
	for _, name := range counted(*st, count) {
		if st.Series[name].OK > 0 {
			return
		}
	}
	st.Status = StatusFailed
}
