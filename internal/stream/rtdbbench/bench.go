package rtdbbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

// Config is what one run measures.
type Config struct {
	Listeners int           // SSE listeners (and raw kv watches) on one path
	Rate      float64       // writes/s of the latency phases
	Duration  time.Duration // of each latency phase (after Warmup)
	Warmup    time.Duration
	// Repeats of the two latency phases, alternating which goes first (the host's load moves).
	Repeats int
	// ThroughputWriters closed-loop writers for ThroughputDuration, with ThroughputListeners
	// listening to the written path.
	ThroughputWriters   int
	ThroughputDuration  time.Duration
	ThroughputListeners int
	// ReconnectBackoff is the largest first delay of a reconnecting client (uniform jitter in
	// [0, it)); later attempts double it, up to 4x.
	ReconnectBackoff time.Duration
	Command          string    `json:"-"`
	Log              io.Writer `json:"-"`
}

// DefaultConfig is the setting: 1000 listeners.
func DefaultConfig() Config {
	return Config{Listeners: 1000, Rate: 100, Duration: 10 * time.Second, Warmup: 2 * time.Second, Repeats: 3,
		ThroughputWriters: 64, ThroughputDuration: 5 * time.Second, ThroughputListeners: 1,
		ReconnectBackoff: time.Second}
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if c.Listeners < 1 || c.Listeners > 20000 {
		errs = append(errs, fmt.Errorf("listeners %d: want 1..20000", c.Listeners))
	}
	if c.Rate <= 0 {
		errs = append(errs, fmt.Errorf("rate %g: want > 0 writes/s", c.Rate))
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.ThroughputDuration <= 0 {
		errs = append(errs, errors.New("duration and throughput duration must be > 0, warmup >= 0"))
	}
	if c.Repeats < 1 {
		errs = append(errs, fmt.Errorf("repeats %d: want >= 1", c.Repeats))
	}
	if c.ThroughputWriters < 1 || c.ThroughputListeners < 0 {
		errs = append(errs, errors.New("throughput writers must be >= 1, throughput listeners >= 0"))
	}
	return errors.Join(errs...)
}

// Latency is one latency phase's result (ms).
type Latency struct {
	Writes    int     `json:"writes"`
	Expected  int64   `json:"expected_deliveries"`
	Delivered int64   `json:"delivered"`
	P50       float64 `json:"p50_ms"`
	P90       float64 `json:"p90_ms"`
	P99       float64 `json:"p99_ms"`
	P999      float64 `json:"p999_ms"`
	Max       float64 `json:"max_ms"`
	Errors    int64   `json:"write_errors"`
	// WriteP50 and WriteP99: from a write's intended send time to its answer (the writer's
	// view; part of the listeners' latency).
	WriteP50 float64 `json:"write_p50_ms"`
	WriteP99 float64 `json:"write_p99_ms"`
	// AfterAnswerP50 and AfterAnswerP99: each delivery's latency less its write's answer time,
	// the notification path alone (negative when a listener heard before the writer's answer).
	AfterAnswerP50 float64 `json:"after_answer_p50_ms"`
	AfterAnswerP99 float64 `json:"after_answer_p99_ms"`
}

// Throughput is one closed-loop phase's result.
type Throughput struct {
	Writes     int64   `json:"writes"`
	PerSecond  float64 `json:"writes_per_s"`
	Errors     int64   `json:"errors"`
	ListenerOK bool    `json:"listeners_saw_last_write,omitempty"`
}

// Result is a whole run.
type Result struct {
	benchkit.Header
	Config        Config     `json:"config"`
	SSE           []Latency  `json:"sse"`          // one per repeat
	RawWatch      []Latency  `json:"raw_kv_watch"` // one per repeat
	SSEWrites     Throughput `json:"rest_writes"`
	RawPuts       Throughput `json:"raw_kv_puts"`
	ReconnectSecs float64    `json:"reconnect_s"`
	Reconnected   int        `json:"reconnected"`
}

// Run measures; progress goes to cfg.Log.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	logf := func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) }
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg}
	cfg.Log = nil

	kvURL, stopKV, err := startKV()
	if err != nil {
		return nil, err
	}
	defer stopKV()

	rs, err := startRTDB(kvURL, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer func() { rs.stop() }()
	base := "http://" + rs.addr
	tr := &http.Transport{MaxIdleConnsPerHost: 4 * cfg.Listeners, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	for r := 0; r < cfg.Repeats; r++ {
		for _, alt := range benchkit.Order(r, 2) {
			if alt == 0 {
				logf("repeat %d: raw kv watch: %d watches, %g writes/s for %v", r+1, cfg.Listeners, cfg.Rate, cfg.Warmup+cfg.Duration)
				l, err := rawWatchLatency(ctx, cfg, kvURL, r)
				if err != nil {
					return nil, fmt.Errorf("raw watch phase: %w", err)
				}
				res.RawWatch = append(res.RawWatch, l)
				logf("  p50 %.2f ms p99 %.2f ms, %d/%d delivered", l.P50, l.P99, l.Delivered, l.Expected)
			} else {
				logf("repeat %d: SSE: %d listeners, %g writes/s for %v", r+1, cfg.Listeners, cfg.Rate, cfg.Warmup+cfg.Duration)
				l, err := sseLatency(ctx, cfg, hc, base, r)
				if err != nil {
					return nil, fmt.Errorf("SSE phase: %w", err)
				}
				res.SSE = append(res.SSE, l)
				logf("  p50 %.2f ms p99 %.2f ms, %d/%d delivered", l.P50, l.P99, l.Delivered, l.Expected)
			}
			res.SampleLoad()
		}
	}

	logf("throughput: %d closed-loop writers for %v", cfg.ThroughputWriters, cfg.ThroughputDuration)
	if res.RawPuts, err = rawPutThroughput(ctx, cfg, kvURL); err != nil {
		return nil, err
	}
	if res.SSEWrites, err = restThroughput(ctx, cfg, hc, base); err != nil {
		return nil, err
	}
	res.SampleLoad()
	logf("  raw kv puts %.0f/s, REST writes %.0f/s", res.RawPuts.PerSecond, res.SSEWrites.PerSecond)

	logf("reconnect: %d listeners, realtime database restart", cfg.Listeners)
	secs, n, err := reconnect(ctx, cfg, hc, &rs, kvURL)
	if err != nil {
		return nil, err
	}
	res.ReconnectSecs, res.Reconnected = secs, n
	logf("  %d listeners back in %.2f s", n, secs)
	res.Finish()
	return res, nil
}

// startKV starts continuum kv in this process on a loopback port with a temporary data dir.
func startKV() (url string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "bench-stream-notify-")
	if err != nil {
		return "", nil, err
	}
	kcfg := server.DefaultConfig()
	kcfg.Name, kcfg.DataDir, kcfg.ListenClientURLs = "bench", dir, []string{"http://127.0.0.1:0"}
	ks, err := server.Start(kcfg)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start kv: %w", err)
	}
	return ks.ClientURLs()[0], func() { ks.Close(); os.RemoveAll(dir) }, nil
}

type rtdbServer struct {
	addr string
	srv  *rtdb.Server
	hs   *http.Server
}

func startRTDB(kvURL, addr string) (rtdbServer, error) {
	cfg := rtdb.DefaultConfig()
	cfg.KVEndpoints = []string{kvURL}
	cfg.ListenAddr = addr
	s, err := rtdb.New(cfg)
	if err != nil {
		return rtdbServer{}, err
	}
	var ln net.Listener
	for i := 0; ; i++ { // the old server's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil || i == 100 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.Close()
		return rtdbServer{}, err
	}
	hs := &http.Server{Handler: s}
	hs.RegisterOnShutdown(s.Hub().Close)
	go hs.Serve(ln)
	return rtdbServer{addr: ln.Addr().String(), srv: s, hs: hs}, nil
}

func (r rtdbServer) stop() {
	if r.hs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.hs.Shutdown(ctx)
	r.srv.Close()
}

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
			rd := rtdb.NewEventReader(body)
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

func openStream(ctx context.Context, hc *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, fmt.Errorf("listen: status %d", resp.StatusCode)
	}
	return resp.Body, nil
}

func put(ctx context.Context, hc *http.Client, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, "PUT", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT: status %d", resp.StatusCode)
	}
	return nil
}

func kvClient(kvURL string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{kvURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
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

// closedLoop runs cfg.ThroughputWriters writers calling write until the duration ends.
func closedLoop(ctx context.Context, cfg Config, write func(w, i int) error) Throughput {
	var ok, bad atomic.Int64
	end := time.Now().Add(cfg.ThroughputDuration)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < cfg.ThroughputWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				if write(w, i) != nil {
					bad.Add(1)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	return Throughput{Writes: ok.Load(), PerSecond: float64(ok.Load()) / el, Errors: bad.Load()}
}

func rawPutThroughput(ctx context.Context, cfg Config, kvURL string) (Throughput, error) {
	c, err := kvClient(kvURL)
	if err != nil {
		return Throughput{}, err
	}
	defer c.Close()
	return closedLoop(ctx, cfg, func(w, i int) error {
		_, err := c.Put(ctx, fmt.Sprintf("/bench-raw/t/w%d-%d", w, i), `{"seq":1}`)
		return err
	}), nil
}

// restThroughput: closed-loop REST PUTs of records under /tput, with ThroughputListeners
// listening there; they must have seen the last write afterwards.
func restThroughput(ctx context.Context, cfg Config, hc *http.Client, base string) (Throughput, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var readers []*rtdb.EventReader
	for i := 0; i < cfg.ThroughputListeners; i++ {
		body, err := openStream(lctx, hc, base+"/tput.json?ns=bench")
		if err != nil {
			return Throughput{}, err
		}
		defer body.Close()
		rd := rtdb.NewEventReader(body)
		if _, err := rd.Next(); err != nil {
			return Throughput{}, err
		}
		readers = append(readers, rd)
	}
	var drained sync.WaitGroup
	var sawLast atomic.Int64
	for _, rd := range readers {
		drained.Add(1)
		go func() {
			defer drained.Done()
			for {
				ev, err := rd.Next()
				if err != nil {
					return
				}
				if bytes.Contains(ev.Data, []byte(`/last"`)) {
					sawLast.Add(1)
					return
				}
			}
		}()
	}
	t := closedLoop(ctx, cfg, func(w, i int) error {
		return put(ctx, hc, fmt.Sprintf("%s/tput/w%d-%d.json?ns=bench&print=silent", base, w, i), fmt.Sprintf(`{"seq":%d}`, i))
	})
	if err := put(ctx, hc, base+"/tput/last.json?ns=bench&print=silent", `{"seq":-1}`); err != nil {
		return t, err
	}
	waitOrTimeout(&drained, 30*time.Second)
	t.ListenerOK = sawLast.Load() == int64(len(readers))
	cancel()
	drained.Wait()
	return t, nil
}

// reconnect: cfg.Listeners listeners on /lat0; the realtime database stops and starts again on
// the same address; each client, seeing its stream end, retries with jittered exponential
// backoff. The figure is the time from the stop until every client has its full put again.
func reconnect(ctx context.Context, cfg Config, hc *http.Client, rs *rtdbServer, kvURL string) (float64, int, error) {
	url := "http://" + rs.addr + "/lat0.json?ns=bench"
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var back sync.WaitGroup
	var backN atomic.Int64
	ready := make(chan error, cfg.Listeners)
	var wg sync.WaitGroup
	for i := 0; i < cfg.Listeners; i++ {
		wg.Add(1)
		back.Add(1)
		go func() {
			defer wg.Done()
			body, err := openStream(lctx, hc, url)
			if err != nil {
				ready <- err
				back.Done()
				return
			}
			rd := rtdb.NewEventReader(body)
			_, err = rd.Next()
			ready <- err
			for err == nil { // until the server goes
				_, err = rd.Next()
			}
			body.Close()
			delay := cfg.ReconnectBackoff
			for attempt := 0; lctx.Err() == nil; attempt++ {
				time.Sleep(time.Duration(rand.Int64N(int64(delay) + 1)))
				if body, err = openStream(lctx, hc, url); err == nil {
					rd = rtdb.NewEventReader(body)
					if _, err = rd.Next(); err == nil {
						backN.Add(1)
						back.Done()
						<-lctx.Done()
						body.Close()
						return
					}
					body.Close()
				}
				delay = min(2*delay, 4*cfg.ReconnectBackoff)
			}
			back.Done()
		}()
	}
	for i := 0; i < cfg.Listeners; i++ {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			return 0, 0, err
		}
	}
	t0 := time.Now()
	addr := rs.addr
	rs.stop()
	nrs, err := startRTDB(kvURL, addr)
	if err != nil {
		cancel()
		wg.Wait()
		return 0, 0, err
	}
	*rs = nrs
	waitOrTimeout(&back, 60*time.Second)
	el := time.Since(t0).Seconds()
	cancel()
	wg.Wait()
	return el, int(backN.Load()), nil
}
