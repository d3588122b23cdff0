package loadgen

import (
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// ProgressLine is one line of the progress stream (see the package doc for its meaning).
type ProgressLine struct {
	Type          string                    `json:"type"` // "progress" or "done"
	TS            float64                   `json:"t_s"`
	Sent          int64                     `json:"sent"`
	OK            int64                     `json:"ok"`
	Errors        int64                     `json:"errors"`
	ThroughputRPS float64                   `json:"throughput_rps"`
	Series        map[string]SeriesProgress `json:"series"`
	Status        string                    `json:"status,omitempty"`     // done line only
	StatsFile     string                    `json:"stats_file,omitempty"` // done line only
}

// SeriesProgress is one series of a progress line.
type SeriesProgress struct {
	Sent          int64   `json:"sent"`
	OK            int64   `json:"ok"`
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	P50           float64 `json:"p50_ms"`
	P99           float64 `json:"p99_ms"`
}

type progress struct {
	w    io.Writer // nil: lines are not written, but intervals are still closed
	recs []*recorder
	// counted says which series add to the top-level counters (nil: all).
	counted map[string]bool
	t0      time.Time
	last    time.Duration
}

func newProgress(w io.Writer, recs []*recorder, t0 time.Time, count []string) *progress {
	return &progress{w: w, recs: recs, t0: t0, counted: countedSet(count)}
}

func countedSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (p *progress) counts(series string) bool { return p.counted == nil || p.counted[series] }

// loop ticks on multiples of every since t0 (so t_s reads 1, 2, 3 ...) until stop is closed.
func (p *progress) loop(every time.Duration, stop <-chan struct{}) {
	timer := time.NewTimer(every)
	defer timer.Stop()
	for n := 2; ; n++ {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		p.tick()
		timer.Reset(max(time.Until(p.t0.Add(time.Duration(n)*every)), 0))
	}
}

func (p *progress) tick() {
	now := time.Since(p.t0)
	window := (now - p.last).Seconds()
	p.last = now
	line := ProgressLine{Type: "progress", TS: roundMs(now.Seconds()), Series: map[string]SeriesProgress{}}
	for _, r := range p.recs {
		r.closeReady()
		s := r.snapshot()
		sp := SeriesProgress{Sent: s.sent, OK: s.ok, Errors: s.errs, P50: s.p50, P99: s.p99}
		if window > 0 {
			sp.ThroughputRPS = roundMs(float64(s.recentOK) / window)
		}
		if p.counts(r.name) {
			line.Sent += s.sent
			line.OK += s.ok
			line.Errors += s.errs
			line.ThroughputRPS += sp.ThroughputRPS
		}
		line.Series[r.name] = sp
	}
	line.ThroughputRPS = roundMs(line.ThroughputRPS)
	p.write(line)
}

// done writes the final line: cumulative counters, and the post-warm-up statistics.
func (p *progress) done(st results.Stats, status, statsFile string) error {
	line := ProgressLine{Type: "done", TS: roundMs(time.Since(p.t0).Seconds()), Series: map[string]SeriesProgress{},
		Status: status, StatsFile: statsFile}
	for _, r := range p.recs {
		r.mu.Lock()
		sp := SeriesProgress{Sent: r.sent, OK: r.ok, Errors: r.errs}
		r.mu.Unlock()
		ss := st.Series[r.name]
		sp.ThroughputRPS, sp.P50, sp.P99 = ss.ThroughputRPS, ss.Latency.P50, ss.Latency.P99
		if p.counts(r.name) {
			line.Sent += sp.Sent
			line.OK += sp.OK
			line.Errors += sp.Errors
			line.ThroughputRPS += sp.ThroughputRPS
		}
		line.Series[r.name] = sp
	}
	line.ThroughputRPS = roundMs(line.ThroughputRPS)
	return p.write(line)
}

func (p *progress) write(line ProgressLine) error {
	if p.w == nil {
		return nil
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = p.w.Write(append(b, '\n'))
	return err
}

func roundMs(v float64) float64 { return math.Round(v*1000) / 1000 }
