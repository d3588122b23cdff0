package qos

import (
	"math"
	"slices"
	"time"
)

// The latency estimate of an instance is a windowed quantile: the requirement's percentile
// (nearest rank) of the last Window response times not older than MaxAge.
//
// Why not QEdgeProxy's EWMA (weight 0.2): a requirement such as "p95 <= 80 ms" is about the
// tail, and a mean hides it. An instance answering 90% of requests in 10 ms and 10% in 200 ms
// has an EWMA around 30 ms and would stay in the pool while one request in ten misses the
// limit; its windowed p95 is 200 ms. The quantile also reacts in a bounded number of samples:
// with fewer than 1/(1-p) samples the p-quantile is the maximum, so after being cleared (see
// package pool) one slow answer is enough to act on, and in a full window of 32 the p95 moves past
// the limit after two slow answers, where an EWMA from 10 ms needs six answers of 110 ms to
// cross 80 ms. MaxAge keeps an idle instance's estimate from freezing on old traffic: once its
// samples age out the estimate falls back to the latest probe.
//
// Probes are not traffic: a TCP connect time is the network round trip only, so it is kept
// apart (rtt) and used only when there are no fresh samples. HTTP probes (ProbeConfig.Path)
// measure a full response and are added as samples.
//
// A sample is the time from the request having a connection to its response headers:
// connection set-up is a cost of the proxy's connection pool, paid once per connection, and
// would otherwise evict an instance just as it starts to take traffic (the pool's preconnect).

// sample is one observed response.
type sample struct {
	at  time.Time
	lat time.Duration
}

// Window is a ring of the latest latency samples and of the latest outcomes.
type Window struct {
	lat  []sample
	next int
	n    int
	// outcomes is a ring of request outcomes (true: failed) for the success rate; it is longer
	// than lat when the minimum success rate needs more requests to be told apart from luck.
	fail     []bool
	fnext    int
	fn       int
	failures int
	scratch  []time.Duration
}

func NewWindow(size, outcomes int) Window {
	return Window{lat: make([]sample, size), fail: make([]bool, outcomes), scratch: make([]time.Duration, 0, size)}
}

// OutcomeWindow is how many outcomes the success rate is computed over: enough that a rate
// just under the minimum shows up as several failures (10 / (1-min)), at least the latency
// window, at most 4096.
func OutcomeWindow(latWindow int, minSuccess float64) int {
	n := latWindow
	if minSuccess > 0 && minSuccess < 1 {
		n = max(n, int(math.Ceil(10/(1-minSuccess)-1e-9)))
	}
	return min(max(n, 1), 4096)
}

func (w *Window) AddLatency(at time.Time, lat time.Duration) {
	w.lat[w.next] = sample{at, lat}
	w.next = (w.next + 1) % len(w.lat)
	w.n = min(w.n+1, len(w.lat))
}

func (w *Window) AddOutcome(failed bool) {
	if w.fn == len(w.fail) && w.fail[w.fnext] {
		w.failures--
	}
	w.fail[w.fnext] = failed
	if failed {
		w.failures++
	}
	w.fnext = (w.fnext + 1) % len(w.fail)
	w.fn = min(w.fn+1, len(w.fail))
}

func (w *Window) Clear() {
	w.n, w.next = 0, 0
	w.fn, w.fnext, w.failures = 0, 0, 0
	clear(w.fail)
}

// Quantile returns the p-th percentile (0 < p <= 100, nearest rank) of the samples taken after
// since, and how many there were. It runs on every answer, so for the tail percentiles
// requirements use (the rank-th smallest being among the few largest: 2nd largest for p95 of
// 32) it keeps the largest few in a small sorted array instead of sorting the window.
func (w *Window) Quantile(p float64, since time.Time) (time.Duration, int) {
	n := 0
	for i := 0; i < w.n; i++ {
		if w.lat[i].at.After(since) {
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	rank := min(max(int(math.Ceil(p/100*float64(n))), 1), n)
	if k := n - rank + 1; k <= len(topK{}) {
		var top topK // top[0] >= top[1] >= ... : the k largest so far
		m := 0
		for i := 0; i < w.n; i++ {
			smp := w.lat[i]
			if !smp.at.After(since) {
				continue
			}
			if m < k {
				m++
			} else if smp.lat <= top[k-1] {
				continue
			}
			j := m - 1
			for ; j > 0 && top[j-1] < smp.lat; j-- {
				top[j] = top[j-1]
			}
			top[j] = smp.lat
		}
		return top[k-1], n
	}
	s := w.scratch[:0]
	for i := 0; i < w.n; i++ {
		if smp := w.lat[i]; smp.at.After(since) {
			s = append(s, smp.lat)
		}
	}
	w.scratch = s
	slices.Sort(s)
	return s[rank-1], n
}

// topK holds the largest samples for quantile's tail shortcut.
type topK [8]time.Duration

// LastAt is when the newest sample was taken (zero if none).
func (w *Window) LastAt() time.Time {
	if w.n == 0 {
		return time.Time{}
	}
	return w.lat[(w.next-1+len(w.lat))%len(w.lat)].at
}

// SuccessRate is the share of recorded outcomes that did not fail, and their number.
func (w *Window) SuccessRate() (float64, int) {
	if w.fn == 0 {
		return 1, 0
	}
	return 1 - float64(w.failures)/float64(w.fn), w.fn
}

// EWMA folds v into avg with weight alpha; the first value is taken as is.
func EWMA(avg, v time.Duration, alpha float64, first bool) time.Duration {
	if first {
		return v
	}
	return time.Duration(alpha*float64(v) + (1-alpha)*float64(avg))
}
