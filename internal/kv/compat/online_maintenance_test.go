package compat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type sample struct {
	start, end time.Time
	err        error
}

// TestMaintenanceUnderLoad runs Compact (physical) and Defragment while paced clients write
// and read, and measures every request overlapping each call. No request may fail on any
// target. On continuum kv requests must also keep completing while each call runs: etcd's
// defragmentation blocks the member for the whole rewrite, so none completes inside it there.
// How long requests stall is a figure, logged here and measured by `continuum bench kv
// --maintenance` (docs/benchmarks/kv-maintenance.md), not a wall-clock bar: this package runs
// beside others in make test's parallel pass.
func TestMaintenanceUnderLoad(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		c := s.client(t)
		m := measureMaintenance(t, s, c)
		if len(m.errs) > 0 {
			t.Errorf("%d of %d requests failed under maintenance, first: %v", len(m.errs), m.requests, m.errs[0])
		}
		if tg != kvTarget {
			return
		}
		for _, w := range m.windows {
			// Four clients pace 1000 requests/s between them, so completions come about a
			// millisecond apart. A call that blocks the member leaves a gap as long as most of
			// the call; noise from other processes leaves gaps like those clear of maintenance.
			// Only a call of 100 ms or more can tell the two apart.
			if w.took >= 100*time.Millisecond && w.gap > w.took/2 && w.gap > 3*m.outside {
				t.Errorf("no request completed for %v of the %v %s took (slowest request clear of maintenance %v): it blocked the member",
					w.gap, w.took, w.name, m.outside)
			}
		}
	})
}

type maintenanceFigures struct {
	requests int
	errs     []error
	outside  time.Duration // slowest request clear of every call: the machine's noise
	windows  []windowFigures
}

// windowFigures describes one maintenance call and the requests around it.
type windowFigures struct {
	name   string
	took   time.Duration
	worst  time.Duration // slowest request overlapping the call
	inside int           // requests that started and ended while the call ran
	gap    time.Duration // longest time during the call with no request completing
}

// measureMaintenance builds history, then compacts and defragments under a paced load.
func measureMaintenance(t *testing.T, s *server, c *clientv3.Client) maintenanceFigures {
	ctx := testCtx(t, 2*time.Minute)
	// History worth compacting and free pages worth defragmenting: 16000 keys (4000 with
	// -short) of 1 KiB written twice, in txns of 100 puts, half of them deleted.
	nkeys, batch := 16000, 100
	if testing.Short() {
		nkeys = 4000
	}
	val := strings.Repeat("v", 1024)
	parallel(t, 4, 2*nkeys/batch, func(b int) error {
		var ops []clientv3.Op
		for i := range batch {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("load/%05d", (b*batch+i)%nkeys), val))
		}
		_, err := c.Txn(ctx).Then(ops...).Commit()
		return err
	})
	res(c.Delete(ctx, "load/00000", clientv3.WithRange(fmt.Sprintf("load/%05d", nkeys/2)))).must(t)
	before := res(c.Status(ctx, s.endpoint)).must(t)

	stop := make(chan struct{})
	var (
		mu      sync.Mutex
		samples []sample
		wg      sync.WaitGroup
	)
	// Four clients at 250 requests/s each, alternating put and get: a steady load that
	// leaves CPU to spare, so stalls come from the store and not from the machine.
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(4 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				key := fmt.Sprintf("load/%05d", (w*7919+i*31)%nkeys)
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				var err error
				if i%2 == 0 {
					_, err = c.Put(rctx, key, val)
				} else {
					_, err = c.Get(rctx, key)
				}
				end := time.Now()
				cancel()
				mu.Lock()
				samples = append(samples, sample{start, end, err})
				mu.Unlock()
			}
		}()
	}
	pause := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	type window struct {
		name       string
		start, end time.Time
	}
	var windows []window
	maintain := func(name string, f func() error) {
		w := window{name: name, start: time.Now()}
		if err := f(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		w.end = time.Now()
		windows = append(windows, w)
	}
	pause(500 * time.Millisecond)
	maintain("compact", func() error {
		_, err := c.Compact(ctx, res(c.Get(ctx, "health")).must(t).Header.Revision, clientv3.WithCompactPhysical())
		return err
	})
	pause(300 * time.Millisecond)
	maintain("defragment", func() error { _, err := c.Defragment(ctx, s.endpoint); return err })
	pause(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	after := res(c.Status(ctx, s.endpoint)).must(t)

	m := maintenanceFigures{requests: len(samples)}
	var all []time.Duration
	for _, sm := range samples {
		if sm.err != nil {
			m.errs = append(m.errs, sm.err)
		}
		all = append(all, sm.end.Sub(sm.start))
		clear := true
		for _, w := range windows {
			if sm.start.Before(w.end) && sm.end.After(w.start) {
				clear = false
			}
		}
		if clear {
			m.outside = max(m.outside, sm.end.Sub(sm.start).Round(10*time.Microsecond))
		}
	}
	slices.Sort(all)
	t.Logf("%s: %d requests, p50 %v, p99 %v, max %v; db size %d -> %d bytes",
		s.tg.name, len(all), pct(all, 0.5), pct(all, 0.99), pct(all, 1), before.DbSize, after.DbSize)
	for _, w := range windows {
		var overlapping []time.Duration
		inside := 0
		completions := []time.Time{w.start, w.end}
		for _, sm := range samples {
			if sm.start.Before(w.end) && sm.end.After(w.start) {
				overlapping = append(overlapping, sm.end.Sub(sm.start))
			}
			if sm.err == nil && sm.end.After(w.start) && sm.end.Before(w.end) {
				completions = append(completions, sm.end)
			}
			if sm.err == nil && sm.start.After(w.start) && sm.end.Before(w.end) {
				inside++
			}
		}
		slices.Sort(overlapping)
		wf := windowFigures{name: w.name, took: w.end.Sub(w.start), worst: pct(overlapping, 1), inside: inside}
		slices.SortFunc(completions, time.Time.Compare)
		for i := 1; i < len(completions); i++ {
			wf.gap = max(wf.gap, completions[i].Sub(completions[i-1]))
		}
		t.Logf("%s: %s took %v; %d requests overlapped it, %d inside it, slowest %v, longest with none completing %v (slowest clear of maintenance %v)",
			s.tg.name, w.name, wf.took.Round(time.Microsecond), len(overlapping), inside, wf.worst, wf.gap.Round(10*time.Microsecond), m.outside)
		m.windows = append(m.windows, wf)
	}
	return m
}

// parallel runs f(0..n-1) on workers goroutines and fails t on the first error.
func parallel(t *testing.T, workers, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errc:
			close(next)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// pct returns the q-quantile of sorted durations (q=1: the maximum).
func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i].Round(10 * time.Microsecond)
}
