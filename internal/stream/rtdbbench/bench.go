package rtdbbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

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
				benchkit.Logf(logw, "repeat %d: raw kv watch: %d watches, %g writes/s for %v", r+1, cfg.Listeners, cfg.Rate, cfg.Warmup+cfg.Duration)
				l, err := rawWatchLatency(ctx, cfg, kvURL, r)
				if err != nil {
					return nil, fmt.Errorf("raw watch phase: %w", err)
				}
				res.RawWatch = append(res.RawWatch, l)
				benchkit.Logf(logw, "  p50 %.2f ms p99 %.2f ms, %d/%d delivered", l.P50, l.P99, l.Delivered, l.Expected)
			} else {
				benchkit.Logf(logw, "repeat %d: SSE: %d listeners, %g writes/s for %v", r+1, cfg.Listeners, cfg.Rate, cfg.Warmup+cfg.Duration)
				l, err := sseLatency(ctx, cfg, hc, base, r)
				if err != nil {
					return nil, fmt.Errorf("SSE phase: %w", err)
				}
				res.SSE = append(res.SSE, l)
				benchkit.Logf(logw, "  p50 %.2f ms p99 %.2f ms, %d/%d delivered", l.P50, l.P99, l.Delivered, l.Expected)
			}
			res.SampleLoad()
		}
	}

	benchkit.Logf(logw, "throughput: %d closed-loop writers for %v", cfg.ThroughputWriters, cfg.ThroughputDuration)
	if res.RawPuts, err = rawPutThroughput(ctx, cfg, kvURL); err != nil {
		return nil, err
	}
	if res.SSEWrites, err = restThroughput(ctx, cfg, hc, base); err != nil {
		return nil, err
	}
	res.SampleLoad()
	benchkit.Logf(logw, "  raw kv puts %.0f/s, REST writes %.0f/s", res.RawPuts.PerSecond, res.SSEWrites.PerSecond)

	benchkit.Logf(logw, "reconnect: %d listeners, realtime database restart", cfg.Listeners)
	secs, n, err := reconnect(ctx, cfg, hc, &rs, kvURL)
	if err != nil {
		return nil, err
	}
	res.ReconnectSecs, res.Reconnected = secs, n
	benchkit.Logf(logw, "  %d listeners back in %.2f s", n, secs)
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

// rtdbServer is a realtime database served in this process, on a port that may be reused by the
// next one (the reconnect phase restarts it on the same address).
type rtdbServer struct {
	addr string
	srv  *rtdb.Server
	hs   *http.Server
}

// startRTDB serves a realtime database over kvURL on addr (":0" for any port).
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
