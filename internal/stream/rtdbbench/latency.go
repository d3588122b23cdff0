package rtdbbench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/stream/rtdb/sse"
)

// recorder keeps the latencies of deliveries made after the warmup.
type recorder struct {
	mu        sync.Mutex
	lat       []float64
	seqs      []int32 // the write of each latency in lat
	delivered atomic.Int64
}

func (r *recorder) add(local []float64, seqs []int32) {
	r.mu.Lock()
	r.lat = append(r.lat, local...)
	r.seqs = append(r.seqs, seqs...)
	r.mu.Unlock()
}

// summarize is a phase's Latency from its deliveries and its writes' answer times.
func summarize(rec *recorder, writes, listeners int, errs int64, answered []float64, warm int) Latency {
	l := Latency{Writes: writes, Expected: int64(writes) * int64(listeners), Delivered: rec.delivered.Load(), Errors: errs}
	if w := answered[min(warm, len(answered)):]; len(w) > 0 {
		w = slices.Clone(w)
		slices.Sort(w)
		l.WriteP50, l.WriteP99 = benchkit.NearestRank(w, 0.5), benchkit.NearestRank(w, 0.99)
	}
	// Latencies are of the writes after the warmup; deliveries count every write.
	// What the listeners waited after the write was answered: the notification path alone.
	after := make([]float64, len(rec.lat))
	for i, lat := range rec.lat {
		after[i] = lat - answered[rec.seqs[i]]
	}
	slices.Sort(after)
	if len(after) > 0 {
		l.AfterAnswerP50, l.AfterAnswerP99 = benchkit.NearestRank(after, 0.5), benchkit.NearestRank(after, 0.99)
	}
	v := rec.lat
	slices.Sort(v) // once: NearestRank's own sort of sorted values is then linear
	if len(v) > 0 {
		l.P50, l.P90, l.P99 = benchkit.NearestRank(v, 0.5), benchkit.NearestRank(v, 0.9), benchkit.NearestRank(v, 0.99)
		l.P999, l.Max = benchkit.NearestRank(v, 0.999), benchkit.NearestRank(v, 1)
	}
	return l
}

// seqOf finds `"seq":N` in an event's data without decoding it all (1000 listeners parse every
// event on the benchmark's own CPU).
func seqOf(b []byte) (int, bool) {
	i := bytes.Index(b, []byte(`"seq":`))
	if i < 0 {
		return 0, false
	}
	b = b[i+6:]
	j := 0
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(string(b[:j]))
	return n, err == nil
}

func sseLatency(ctx context.Context, cfg Config, hc *http.Client, base string, repeat int) (Latency, error) {
	n := int(cfg.Rate * (cfg.Warmup + cfg.Duration).Seconds())
	warm := int(cfg.Rate * cfg.Warmup.Seconds())
	dir := fmt.Sprintf("/lat%d", repeat)
	url := base + dir + ".json?ns=bench"
	var intended atomic.Pointer[[]time.Time] // published before the first write
	rec := &recorder{}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	ready := make(chan error, cfg.Listeners)
	for i := 0; i < cfg.Listeners; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := openStream(lctx, hc, url)
			if err != nil {
				ready <- err
				return
			}
			defer body.Close()
			rd := sse.NewEventReader(body)
			if _, err := rd.Next(); err != nil { // the first put
				ready <- err
				return
			}
			ready <- nil
			var local []float64
			var seqs []int32
			defer func() { rec.add(local, seqs) }()
			got := 0
			for got < n {
				ev, err := rd.Next()
				if err != nil {
					return
				}
				now := time.Now()
				seq, ok := seqOf(ev.Data)
				if !ok || seq >= n {
					continue
				}
				got++
				rec.delivered.Add(1)
				if it := intended.Load(); it != nil && seq >= warm {
					local = append(local, float64(now.Sub((*it)[seq]))/1e6)
					seqs = append(seqs, int32(seq))
				}
			}
		}()
	}
	for i := 0; i < cfg.Listeners; i++ {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			return Latency{}, err
		}
	}
	answered, errs := scheduleWith(ctx, cfg.Rate, n, &intended, func(seq int) error {
		body := fmt.Sprintf(`{"seq":%d,"sent_us":%d}`, seq, time.Now().UnixMicro())
		return put(ctx, hc, fmt.Sprintf("%s%s/s%d.json?ns=bench&print=silent", base, dir, seq), body)
	})
	waitOrTimeout(&wg, 30*time.Second)
	cancel()
	wg.Wait()
	return summarize(rec, n, cfg.Listeners, errs, answered, warm), nil
}

// scheduleWith is the open-loop writer: write(seq) for seq 0..n-1 at their intended times, from
// a pool of goroutines so a slow write does not delay the next one's start. It publishes the
// intended times in p before the first write (latency is measured from them) and returns once
// every write returned.
func scheduleWith(ctx context.Context, rate float64, n int, p *atomic.Pointer[[]time.Time], write func(int) error) ([]float64, int64) {
	intended := make([]time.Time, n)
	start := time.Now().Add(50 * time.Millisecond)
	for i := range intended {
		intended[i] = start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
	}
	p.Store(&intended)
	answered := make([]float64, n) // ms; each index written by the one goroutine doing that write
	var errs atomic.Int64
	jobs := make(chan int, 1024)
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range jobs {
				if write(seq) != nil {
					errs.Add(1)
				}
				answered[seq] = float64(time.Since(intended[seq])) / 1e6
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(intended[i]))
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return answered, errs.Load()
}

func waitOrTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// rawWatchLatency: the same write rate as kv Puts of one key, cfg.Listeners watches on it (100
// per client connection, as a listener-serving process would multiplex them).
func rawWatchLatency(ctx context.Context, cfg Config, kvURL string, repeat int) (Latency, error) {
	n := int(cfg.Rate * (cfg.Warmup + cfg.Duration).Seconds())
	warm := int(cfg.Rate * cfg.Warmup.Seconds())
	var clients []*clientv3.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i < (cfg.Listeners+99)/100; i++ {
		c, err := kvClient(kvURL)
		if err != nil {
			return Latency{}, err
		}
		clients = append(clients, c)
	}
	key := fmt.Sprintf("/bench-raw/k%d", repeat)
	var intended atomic.Pointer[[]time.Time]
	rec := &recorder{}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var started sync.WaitGroup
	for i := 0; i < cfg.Listeners; i++ {
		wg.Add(1)
		started.Add(1)
		wch := clients[i/100].Watch(wctx, key, clientv3.WithCreatedNotify())
		go func() {
			defer wg.Done()
			var local []float64
			var seqs []int32
			defer func() { rec.add(local, seqs) }()
			first := true
			got := 0
			for resp := range wch {
				if first {
					first = false
					started.Done()
				}
				now := time.Now()
				for _, ev := range resp.Events {
					seq, err := strconv.Atoi(string(ev.Kv.Value))
					if err != nil || seq >= n {
						continue
					}
					got++
					rec.delivered.Add(1)
					if it := intended.Load(); it != nil && seq >= warm {
						local = append(local, float64(now.Sub((*it)[seq]))/1e6)
						seqs = append(seqs, int32(seq))
					}
				}
				if got >= n {
					return
				}
			}
		}()
	}
	started.Wait()
	answered, errs := scheduleWith(ctx, cfg.Rate, n, &intended, func(seq int) error {
		_, err := clients[seq%len(clients)].Put(ctx, key, strconv.Itoa(seq))
		return err
	})
	waitOrTimeout(&wg, 30*time.Second)
	cancel()
	wg.Wait()
	return summarize(rec, n, cfg.Listeners, errs, answered, warm), nil
}
