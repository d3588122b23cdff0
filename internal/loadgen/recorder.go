package loadgen

import (
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/results"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms hold nanoseconds (the HdrHistogram log convention, whose interval max is written
// in ms = ns/1e6) with 1 µs resolution up to maxLatency and 3 significant digits.
func newHistogram() *hdr.Histogram {
	return hdr.New(int64(time.Microsecond), int64(maxLatency), 3)
}

// interval accumulates the requests intended in one second of one series.
type interval struct {
	sent, done   int64 // done = ok + errors; the interval is final once done == sent
	mSent, mDone int64 // the same for requests intended after the warm-up
	ok, errs     int64
	within       int64 // successes within the QoS latency (Config.QoSLatency)
	hist         *hdr.Histogram
	inst         map[string]*instCount // by serving instance (InstanceTarget)
}

// row is one closed second of one series (a timeseries.csv row without its throughput, which
// counts completions and is only final at the end).
type row struct {
	sec           int
	sent, ok, err int64
	within        int64
	p50, p99, max float64 // ms; meaningless unless ok > 0
	inst          map[string]*instCount
}

// recorder is the measurement state of one series. Requests report through dispatch/begin and
// record under mu; the closer (the progress loop, then finish) turns finished seconds into rows
// and log lines. rows and hlog are touched only by the closer, which runs on one goroutine at a
// time, so encoding happens outside mu and never stalls the request path.
type recorder struct {
	name       string
	t0         time.Time
	warmup     time.Duration
	duration   time.Duration
	closedLoop bool
	qos        time.Duration // 0: no QoS latency

	mu sync.Mutex
	// watermark: every request intended before it has been dispatched (open loop). A second is
	// closable once the watermark passed its end and all its requests are done.
	watermark time.Duration
	final     bool // after finish: late results are dropped
	open      map[int]*interval
	nextClose int
	okBySec   []int64 // successful completions by completion second
	total     *hdr.Histogram
	recent    *hdr.Histogram
	recentOK  int64
	sent, ok  int64
	errs      int64
	mSent     int64
	mOK       int64
	mErrs     int64
	errTypes  map[string]int64 // after the warm-up
	spare     []*hdr.Histogram
	// After the warm-up: successes within the QoS latency, and within each latency bound.
	mWithin int64
	bounds  []time.Duration
	mBelow  []int64
	mInst   map[string]*instCount
	anyInst bool // some request (warm-up included) named its instance

	rows []row
	hlog []string // one HdrHistogram log line per closed second, in order
}

func newRecorder(name string, t0 time.Time, cfg Config) *recorder {
	return &recorder{
		name:       name,
		t0:         t0,
		warmup:     cfg.Warmup,
		duration:   cfg.Duration,
		closedLoop: cfg.Clients > 0,
		qos:        cfg.QoSLatency,
		bounds:     cfg.LatencyBounds,
		mBelow:     make([]int64, len(cfg.LatencyBounds)),
		open:       map[int]*interval{},
		total:      newHistogram(),
		recent:     newHistogram(),
		errTypes:   map[string]int64{},
	}
}

// intervalLocked returns the interval of second sec, creating it. Caller holds mu.
func (r *recorder) intervalLocked(sec int) *interval {
	iv := r.open[sec]
	if iv == nil {
		iv = &interval{}
		if n := len(r.spare); n > 0 {
			iv.hist, r.spare = r.spare[n-1], r.spare[:n-1]
		} else {
			iv.hist = newHistogram()
		}
		r.open[sec] = iv
	}
	return iv
}

func (r *recorder) countSentLocked(intended time.Duration) {
	iv := r.intervalLocked(int(intended / time.Second))
	iv.sent++
	r.sent++
	if intended >= r.warmup {
		iv.mSent++
		r.mSent++
	}
}

// dispatch counts an open-loop request intended at intended; next is the intended time of the
// following one, which becomes the watermark.
func (r *recorder) dispatch(intended, next time.Duration) {
	r.mu.Lock()
	r.countSentLocked(intended)
	r.watermark = next
	r.mu.Unlock()
}

// advance moves the watermark without a request (the scheduler is done).
func (r *recorder) advance(next time.Duration) {
	r.mu.Lock()
	r.watermark = next
	r.mu.Unlock()
}

// begin starts a closed-loop request now, unless now is at or past limit or the run is over.
// The intended time is read under mu so that a second the closer saw as passed can never
// receive a new request.
func (r *recorder) begin(limit time.Duration) (time.Duration, bool) {
	return r.beginAt(limit, time.Since(r.t0))
}

// beginAt is begin for an operation intended at `at` (from t0): it counts if it was due
// before the limit, however late it starts.
func (r *recorder) beginAt(limit, at time.Duration) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.final || at >= limit {
		return 0, false
	}
	r.countSentLocked(at)
	return at, true
}

// record stores the outcome of a request dispatched at intended: latency for a success
// (errType == ""), otherwise the error type; instance is the instance that served it ("" when
// the target does not tell, see InstanceTarget).
func (r *recorder) record(intended, latency time.Duration, errType, instance string) {
	if latency < 0 {
		latency = 0
	} else if latency > maxLatency {
		latency = maxLatency
	}
	measured := intended >= r.warmup
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.final {
		return
	}
	iv := r.intervalLocked(int(intended / time.Second))
	iv.done++
	if measured {
		iv.mDone++
	}
	if instance != "" {
		r.anyInst = r.anyInst || instance != results.NoInstance
		ms := float64(latency) / 1e6
		countInstance(&iv.inst, instance, ms, errType != "")
		if measured {
			countInstance(&r.mInst, instance, ms, errType != "")
		}
	}
	if errType != "" {
		iv.errs++
		r.errs++
		if measured {
			r.mErrs++
			r.errTypes[errType]++
		}
		return
	}
	v := int64(latency)
	_ = iv.hist.RecordValue(v) // values are clamped into the trackable range above
	_ = r.recent.RecordValue(v)
	iv.ok++
	r.ok++
	r.recentOK++
	within := r.qos > 0 && latency <= r.qos
	if within {
		iv.within++
	}
	if measured {
		_ = r.total.RecordValue(v)
		r.mOK++
		if within {
			r.mWithin++
		}
		for i, b := range r.bounds {
			if latency <= b {
				r.mBelow[i]++
			}
		}
	}
	sec := int((intended + latency) / time.Second)
	for len(r.okBySec) <= sec {
		r.okBySec = append(r.okBySec, 0)
	}
	r.okBySec[sec]++
}

// seriesSnapshot is what a progress line shows of one series.
type seriesSnapshot struct {
	sent, ok, errs int64
	recentOK       int64
	p50, p99       float64
}

// snapshot returns cumulative counters and the successes since the previous snapshot.
func (r *recorder) snapshot() seriesSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := seriesSnapshot{sent: r.sent, ok: r.ok, errs: r.errs, recentOK: r.recentOK}
	if r.recent.TotalCount() > 0 {
		s.p50 = nsToMs(r.recent.ValueAtPercentile(50))
		s.p99 = nsToMs(r.recent.ValueAtPercentile(99))
	}
	r.recent.Reset()
	r.recentOK = 0
	return s
}

// closeReady closes, in order, the seconds that can no longer change.
func (r *recorder) closeReady() {
	var ready []*interval
	first := 0
	r.mu.Lock()
	limit := r.watermark
	if r.closedLoop {
		limit = time.Since(r.t0)
	}
	first = r.nextClose
	for s := r.nextClose; time.Duration(s)*time.Second < r.duration; s++ {
		if time.Duration(s+1)*time.Second > limit {
			break
		}
		iv := r.open[s]
		if iv != nil && iv.done < iv.sent {
			break
		}
		delete(r.open, s)
		ready = append(ready, iv) // nil: a second without requests
		r.nextClose = s + 1
	}
	r.mu.Unlock()
	r.emit(first, ready)
}

// finish closes every remaining second up to end (the run's stop time), counting requests that
// never completed as "canceled" errors, and drops results that arrive later.
func (r *recorder) finish(end time.Duration) {
	var ready []*interval
	r.mu.Lock()
	r.final = true
	last := int((end + time.Second - 1) / time.Second) // seconds [0, last) exist
	for s := range r.open {
		if s >= last {
			last = s + 1
		}
	}
	first := r.nextClose
	for s := r.nextClose; s < last; s++ {
		iv := r.open[s]
		if iv != nil {
			if pending := iv.sent - iv.done; pending > 0 {
				iv.errs += pending
				r.errs += pending
			}
			if pending := iv.mSent - iv.mDone; pending > 0 {
				r.mErrs += pending
				r.errTypes[ErrCanceled] += pending
			}
			delete(r.open, s)
		}
		ready = append(ready, iv)
	}
	r.nextClose = last
	r.mu.Unlock()
	r.emit(first, ready)
}

// emit turns closed intervals (seconds first, first+1, ...) into rows and log lines.
func (r *recorder) emit(first int, ready []*interval) {
	if len(ready) == 0 {
		return
	}
	var empty *hdr.Histogram
	var done []*hdr.Histogram
	for i, iv := range ready {
		sec := first + i
		rw := row{sec: sec}
		h := empty
		if iv != nil {
			rw.sent, rw.ok, rw.err, rw.within, rw.inst = iv.sent, iv.ok, iv.errs, iv.within, iv.inst
			h = iv.hist
			done = append(done, h)
			if h.TotalCount() > 0 {
				rw.p50 = nsToMs(h.ValueAtPercentile(50))
				rw.p99 = nsToMs(h.ValueAtPercentile(99))
				rw.max = nsToMs(h.Max())
			}
		} else if h == nil {
			empty = newHistogram()
			h = empty
		}
		r.rows = append(r.rows, rw)
		r.hlog = append(r.hlog, hlogLine(r.name, sec, h))
	}
	r.mu.Lock()
	for _, h := range done {
		h.Reset()
		r.spare = append(r.spare, h)
	}
	r.mu.Unlock()
}

// hlogLine encodes one interval histogram as an HdrHistogram log line, timestamps relative to
// t0 (the log's StartTime).
func hlogLine(tag string, sec int, h *hdr.Histogram) string {
	h.SetTag(tag)
	h.SetStartTimeMs(int64(sec) * 1000)
	h.SetEndTimeMs(int64(sec+1) * 1000)
	var b strings.Builder
	if err := hdr.NewHistogramLogWriter(&b).OutputIntervalHistogram(h); err != nil {
		return "#" + err.Error() + "\n" // unreachable: tags are validated, encoding cannot fail
	}
	return b.String()
}

func nsToMs(ns int64) float64 {
	return float64(ns/1000) / 1000 // µs precision is all the histogram resolves
}

func countInstance(m *map[string]*instCount, instance string, latencyMS float64, failed bool) {
	if *m == nil {
		*m = map[string]*instCount{}
	}
	c := (*m)[instance]
	if c == nil {
		c = &instCount{}
		(*m)[instance] = c
	}
	c.add(latencyMS, failed)
}
