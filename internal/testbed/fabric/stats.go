package fabric

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Histogram is a distribution of durations in log buckets of 1/8 of a power of two (about ±6%
// around each bucket's middle), from 1 µs; values under 16 µs are exact to the µs. It is a value:
// copying is cheap (a fixed array), and two cumulative snapshots subtract to the interval between.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    int64 // µs, highest recorded ever (not subtracted)
}

const histBuckets = 16 + 8*44

func histBucket(us int64) int {
	if us < 16 {
		return int(max(us, 0))
	}
	n := bits.Len64(uint64(us))
	shift := n - 4
	b := 16 + (n-5)*8 + int(us>>shift) - 8
	return min(b, histBuckets-1)
}

// histValue is the middle of bucket b, µs.
func histValue(b int) int64 {
	if b < 16 {
		return int64(b)
	}
	n := (b-16)/8 + 5
	shift := n - 4
	mant := int64((b-16)%8 + 8)
	return mant<<shift + (int64(1)<<shift)/2
}

func (h *Histogram) record(d int64) {
	us := d / 1000
	h.counts[histBucket(us)]++
	h.n++
	h.max = max(h.max, us)
}

// Count is the number of values recorded.
func (h Histogram) Count() uint64 { return h.n }

// Quantile is the value at quantile q (0..1); 0 when empty.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(histValue(b), max(h.max, 0))) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

// Max is the highest value recorded since the fabric started.
func (h Histogram) Max() time.Duration { return time.Duration(h.max) * time.Microsecond }

// Sub is the distribution of what was recorded after prev (an earlier snapshot of the same
// histogram) was taken.
func (h Histogram) Sub(prev Histogram) Histogram {
	out := h
	for i := range out.counts {
		out.counts[i] -= min(prev.counts[i], out.counts[i])
	}
	out.n -= min(prev.n, out.n)
	return out
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// lateness wraps a Histogram recorded under the fabric's mu.
type lateness struct{ h Histogram }

func newLateness() *lateness { return &lateness{} }

func (l *lateness) record(d int64) { l.h.record(d) }

// LinkStats are one link direction's cumulative figures.
type LinkStats struct {
	Link     int    // index in the topology's links
	From, To string // node names: the direction
	Packets  uint64 // wire packets carried (a segmentation-offload super-packet counts its segments)
	Bytes    uint64 // IP bytes carried
	Drops    map[string]uint64
	// Late is, for packets whose last hop was this direction, how much later than its scheduled
	// time each was handed to the receiving node: the queueing the fabric itself added on top of
	// the configured delay, jitter and bandwidth. A reader that ran late shows here too, since
	// packets are scheduled from the kernel's send time.
	Late Histogram
}

// Stats are the fabric's cumulative figures: traffic and drops per link direction, how late it
// delivered, how long the nodes' packets waited to be read, and its own CPU time.
type Stats struct {
	Links    []LinkStats
	Drops    map[string]uint64 // by reason, over the whole fabric
	Late     Histogram         // all links together
	ReadLag  Histogram         // read time minus the kernel's send stamp, all nodes
	CPU      time.Duration     // CPU time of the fabric's threads (the poller, and readers of endpoints it cannot poll)
	Threads  int               // how many threads that is
	Realtime int               // how many of them run at real-time priority (0 when not allowed)
	At       time.Time         // when CPU was read: the time to divide CPU differences by
}

// Stats returns the cumulative figures. Callers wanting an interval subtract two snapshots.
func (f *Fabric) Stats() Stats {
	st := Stats{Drops: f.Drops()}
	st.CPU, st.Threads, st.Realtime = f.threads.cpu()
	st.At = time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range f.links {
		for d := range l.dir {
			ld := &l.dir[d]
			from, to := l.a, l.b
			if d == 1 {
				from, to = to, from
			}
			ls := LinkStats{Link: i, From: f.nodes[from].Name, To: f.nodes[to].Name, Packets: ld.packets, Bytes: ld.bytes,
				Drops: map[string]uint64{}, Late: ld.late.h}
			for j, r := range dropReasonsFixed {
				if ld.drops[j] > 0 {
					ls.Drops[r] = ld.drops[j]
				}
			}
			st.Late.Merge(ld.late.h)
			st.Links = append(st.Links, ls)
		}
	}
	for _, n := range f.nodes {
		st.ReadLag.Merge(n.lag.h)
	}
	return st
}

// threadSet records the fabric's OS threads so their CPU time can be read from /proc.
type threadSet struct {
	mu       sync.Mutex
	tids     []int
	realtime int // how many run at real-time priority
}

// rtPriority is the SCHED_FIFO priority of the fabric's threads: the lowest real-time one, above
// every ordinary process.
const rtPriority = 1

// add registers the calling thread (which must be locked to its goroutine) and, where allowed
// (root, a cgroup with real-time runtime), moves it to real-time scheduling. The fabric is the
// emulated network: the kernel runs its own network processing in softirq context, ahead of
// processes, and the fabric's threads must likewise not wait behind the workloads they carry,
// or a busy node would stretch every link's delay. They block when idle, and the kernel's
// real-time throttling (sched_rt_runtime_us) keeps a share of the CPU for everything else.
func (t *threadSet) add() {
	tid := unix.Gettid()
	// Reset on fork: a thread or process created from this one runs at ordinary priority.
	err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: rtPriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}, 0)
	t.mu.Lock()
	t.tids = append(t.tids, tid)
	if err == nil {
		t.realtime++
	}
	t.mu.Unlock()
}

// cpu sums the threads' CPU time (schedstat's first field, ns on CPU); threads that have
// exited count no more.
func (t *threadSet) cpu() (time.Duration, int, int) {
	t.mu.Lock()
	tids := append([]int(nil), t.tids...)
	rt := t.realtime
	t.mu.Unlock()
	var sum int64
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		v, _ := strconv.ParseInt(f[0], 10, 64)
		sum += v
	}
	return time.Duration(sum), len(tids), rt
}

// histogramJSON is a Histogram on the wire (the testbed's control socket): its non-empty
// buckets by index.
type histogramJSON struct {
	N       uint64            `json:"n"`
	Max     int64             `json:"max_us"`
	Buckets map[uint16]uint64 `json:"buckets,omitempty"`
}

// MarshalJSON writes the non-empty buckets, the count and the maximum.
func (h Histogram) MarshalJSON() ([]byte, error) {
	j := histogramJSON{N: h.n, Max: h.max, Buckets: map[uint16]uint64{}}
	for i, c := range h.counts {
		if c > 0 {
			j.Buckets[uint16(i)] = c
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote, refusing a bucket that does not exist or a count
// that is not the buckets' sum.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histogramJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var out Histogram
	var sum uint64
	for i, c := range j.Buckets {
		if int(i) >= histBuckets {
			return fmt.Errorf("histogram bucket %d: there are %d", i, histBuckets)
		}
		out.counts[i] = c
		if sum+c < sum {
			return fmt.Errorf("histogram counts overflow")
		}
		sum += c
	}
	if sum != j.N {
		return fmt.Errorf("histogram count %d, its buckets hold %d", j.N, sum)
	}
	if j.Max < 0 || j.Max > math.MaxInt64/int64(time.Microsecond) {
		return fmt.Errorf("histogram maximum %d µs: want 0 to %d", j.Max, math.MaxInt64/int64(time.Microsecond))
	}
	out.n, out.max = j.N, j.Max
	*h = out
	return nil
}
