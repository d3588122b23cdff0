package bridgebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/procstat"
)

// Config is the bench's configuration.
type Config struct {
	Binary      string        `json:"-"`            // the continuum binary whose stream-bridge is measured
	RecordBytes int           `json:"record_bytes"` // size of one record's JSON (default 1024)
	Batch       []int         `json:"batch"`        // records per post, one series each (default 100 and 1)
	Clients     int           `json:"clients"`      // concurrent posting clients (default 16)
	Duration    time.Duration `json:"duration_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	Repeats     int           `json:"repeats"`
	// PerfRecords is how many records each ProducerPerformance run sends.
	PerfRecords int `json:"perf_records"`
	// LatencyRate and LatencyDuration are the publish->consume latency run's (10k msg/s).
	LatencyRate     int           `json:"latency_rate"`
	LatencyDuration time.Duration `json:"latency_duration_ns"`
	Partitions      int           `json:"partitions"` // of the bench topic (default 1)
	Dir             string        `json:"-"`
	Command         string        `json:"-"`
	Log             io.Writer     `json:"-"`
}

// DefaultConfig is the documented run (quick: one short repeat, for a smoke test).
func DefaultConfig(quick bool) Config {
	c := Config{RecordBytes: 1024, Batch: []int{100, 1}, Clients: 16, Duration: 10 * time.Second, Warmup: 2 * time.Second,
		Repeats: 3, PerfRecords: 1_000_000, LatencyRate: 10000, LatencyDuration: 10 * time.Second, Partitions: 1}
	if quick {
		c.Duration, c.Warmup, c.Repeats, c.PerfRecords, c.LatencyDuration = 3*time.Second, time.Second, 1, 200_000, 3*time.Second
	}
	return c
}

// Result is what the bench measured.
type Result struct {
	benchkit.Header
	Config    Config          `json:"config"`
	PinnedCPU int             `json:"pinned_cpu"` // the CPU the bridge and the perf tool ran on; -1: not pinned
	Bridge    []BridgeRun     `json:"bridge"`
	Perf      []PerfRun       `json:"producer_perf"`
	Latency   []LatencyRun    `json:"latency"`
	Goals     []benchkit.Goal `json:"goals"`
}

// BridgeRun is one closed-loop run against the bridge.
type BridgeRun struct {
	Batch   int     `json:"batch"`
	Repeat  int     `json:"repeat"`
	Records float64 `json:"records_per_s"`
	Cores   float64 `json:"bridge_cores"`       // the bridge's CPU use (cores) during the run
	PerCore float64 `json:"records_per_core_s"` // records per CPU-second of the bridge
	P50ms   float64 `json:"post_p50_ms"`
	P99ms   float64 `json:"post_p99_ms"`
	Errors  int64   `json:"errors"`
}

// PerfRun is one ProducerPerformance run.
type PerfRun struct {
	Repeat  int     `json:"repeat"`
	Records float64 `json:"records_per_s"`
	AvgMs   float64 `json:"avg_latency_ms"`
	P99ms   float64 `json:"p99_ms"`
	Line    string  `json:"line"`
}

// LatencyRun is one fixed-rate publish->consume run.
type LatencyRun struct {
	Repeat int     `json:"repeat"`
	Rate   float64 `json:"achieved_per_s"`
	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	Count  int     `json:"count"`
}

const topic = "bench"

// Run starts a broker, runs the three measurements Repeats times (bridge and perf tool
// alternating which goes first) and judges the goals.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.RecordBytes < 64 || cfg.Clients < 1 || cfg.Repeats < 1 || len(cfg.Batch) == 0 || cfg.Partitions < 1 {
		return nil, errors.New("record bytes >= 64, clients, repeats, partitions >= 1 and at least one batch size are required")
	}
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg, PinnedCPU: -1}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "bench-stream-bridge-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	benchkit.Logf(cfg.Log, "starting a kafka broker")
	k, err := baselines.StartKafka(ctx, baselines.KafkaConfig{Config: baselines.Config{Dir: filepath.Join(dir, "kafka")},
		Topics: []baselines.KafkaTopic{{Name: topic, Partitions: cfg.Partitions, Replication: 1}, {Name: "latency", Partitions: 1, Replication: 1}}})
	if err != nil {
		return nil, err
	}
	defer k.Stop()
	broker := k.Target.Endpoints[0]

	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	for rep := range cfg.Repeats {
		for _, which := range benchkit.Order(rep, 2) {
			if which == 0 {
				for _, b := range cfg.Batch {
					r, err := bridgeRun(ctx, cfg, broker, k.PID(), cpus, b)
					if err != nil {
						return nil, err
					}
					r.Repeat = rep
					res.Bridge = append(res.Bridge, r)
					benchkit.Logf(cfg.Log, "bridge batch %d repeat %d: %.0f records/s, %.2f cores, %.0f records per core-second", b, rep, r.Records, r.Cores, r.PerCore)
				}
			} else {
				r, err := perfRun(ctx, cfg, broker, k.PID(), cpus)
				if err != nil {
					return nil, err
				}
				r.Repeat = rep
				res.Perf = append(res.Perf, r)
				benchkit.Logf(cfg.Log, "producer perf repeat %d: %s", rep, r.Line)
			}
			res.SampleLoad()
		}
		l, err := latencyRun(ctx, cfg, broker)
		if err != nil {
			return nil, err
		}
		l.Repeat = rep
		res.Latency = append(res.Latency, l)
		benchkit.Logf(cfg.Log, "latency repeat %d: %.0f msg/s p50 %.2f ms p99 %.2f ms", rep, l.Rate, l.P50ms, l.P99ms)
		res.SampleLoad()
	}
	if len(cpus) >= 2 {
		res.PinnedCPU = cpus[1]
	}
	res.Finish()
	res.Goals = goals(res)
	return res, nil
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// pin confines this process and the broker (every thread of both) to cpus[0], leaving cpus[1]
// to the process measured, and returns the taskset prefix for it and how to undo the pinning.
// With one CPU (or no taskset) nothing is pinned.
func pin(brokerPID int, cpus []int) (prefix []string, undo func(), err error) {
	if len(cpus) < 2 {
		return nil, func() {}, nil
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return nil, func() {}, nil
	}
	all := make([]string, len(cpus))
	for i, c := range cpus {
		all[i] = strconv.Itoa(c)
	}
	other := strconv.Itoa(cpus[0])
	set := func(list string) error {
		for _, pid := range []int{os.Getpid(), brokerPID} {
			if out, err := exec.Command("taskset", "-a", "-p", "-c", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
				return fmt.Errorf("taskset %d: %v: %s", pid, err, out)
			}
		}
		return nil
	}
	if err := set(other); err != nil {
		return nil, func() {}, err
	}
	return []string{"taskset", "-c", strconv.Itoa(cpus[1])}, func() { _ = set(strings.Join(all, ",")) }, nil
}

// record is a 1 KB record shaped as the experiments' ({"id","user","seq","sent_us","pad"}).
func record(size, client, seq int) []byte {
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("b-u%d-%d", client, seq), "user": client, "seq": seq, "sent_us": time.Now().UnixMicro(), "pad": ""})
	pad := max(0, size-len(b))
	b, _ = json.Marshal(map[string]any{"id": fmt.Sprintf("b-u%d-%d", client, seq), "user": client, "seq": seq, "sent_us": time.Now().UnixMicro(), "pad": strings.Repeat("x", pad)})
	return b
}

// bridgeRun starts `continuum stream bridge` with GOMAXPROCS=1 on its own CPU and measures
// closed-loop posts of batch records for Warmup+Duration.
func bridgeRun(ctx context.Context, cfg Config, broker string, brokerPID int, cpus []int, batch int) (BridgeRun, error) {
	prefix, undo, err := pin(brokerPID, cpus)
	if err != nil {
		return BridgeRun{}, err
	}
	defer undo()
	addr, err := freeport.Addr()
	if err != nil {
		return BridgeRun{}, err
	}
	// Loopback only, so no token: the bench measures the producer path.
	args := append(prefix, cfg.Binary, "stream", "bridge", "--listen", addr, "--brokers", broker, "--auth=false")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	var logb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		return BridgeRun{}, fmt.Errorf("start the bridge: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return BridgeRun{}, fmt.Errorf("the bridge was not healthy within a minute: %v\n%s", err, logb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Each client cycles over 16 bodies built beforehand, so the load generator spends its CPU
	// on HTTP, not on JSON.
	bodies := make([][][]byte, cfg.Clients)
	for c := range bodies {
		for i := range 16 {
			recs := make([][]byte, batch)
			for j := range recs {
				recs[j] = record(cfg.RecordBytes, c, i*batch+j)
			}
			body := recs[0]
			if batch > 1 {
				body = append(append([]byte{'['}, bytes.Join(recs, []byte{','})...), ']')
			}
			bodies[c] = append(bodies[c], body)
		}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var counting atomic.Bool
	var records, errs atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Go(func() {
			var mine []time.Duration
			for i := 0; rctx.Err() == nil; i++ {
				t0 := time.Now()
				resp, err := hc.Post(base+"/topics/"+topic, "application/json", bytes.NewReader(bodies[c][i%16]))
				if err != nil {
					if rctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if !counting.Load() {
					continue
				}
				if resp.StatusCode != 200 {
					errs.Add(1)
					continue
				}
				records.Add(int64(batch))
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	time.Sleep(cfg.Warmup)
	cpu0, _ := procstat.CPUSeconds(cmd.Process.Pid, false)
	t0 := time.Now()
	counting.Store(true)
	time.Sleep(cfg.Duration)
	counting.Store(false)
	el := time.Since(t0).Seconds()
	cpu1, _ := procstat.CPUSeconds(cmd.Process.Pid, false)
	n := records.Load()
	cancel()
	wg.Wait()
	r := BridgeRun{Batch: batch, Records: float64(n) / el, Cores: (cpu1 - cpu0) / el, Errors: errs.Load()}
	if cpu1 > cpu0 {
		r.PerCore = float64(n) / (cpu1 - cpu0)
	}
	r.P50ms, r.P99ms = quantileMs(lat, 0.5), quantileMs(lat, 0.99)
	return r, nil
}

func quantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = float64(x) / 1e6
	}
	return benchkit.NearestRank(v, q)
}

var perfLine = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec .*?, ([\d.]+) ms avg latency.*?([\d.]+) ms 99th`)

// perfRun runs Kafka's ProducerPerformance on the bridge's CPU at the bridge's producer
// settings: acks=all, idempotence, linger 0, 1 MiB batches, no compression.
func perfRun(ctx context.Context, cfg Config, broker string, brokerPID int, cpus []int) (PerfRun, error) {
	java, err := baselines.JavaBinary("")
	if err != nil {
		return PerfRun{}, err
	}
	home, err := baselines.KafkaHome("")
	if err != nil {
		return PerfRun{}, err
	}
	if m, _ := filepath.Glob(filepath.Join(home, "libs", "kafka-tools-*.jar")); len(m) == 0 {
		return PerfRun{}, fmt.Errorf("kafka-tools is not in %s/libs: run `continuum setup stream` (tools/kafka/pom.xml lists it)", home)
	}
	prefix, undo, err := pin(brokerPID, cpus)
	if err != nil {
		return PerfRun{}, err
	}
	defer undo()
	args := append(prefix, baselines.KafkaJavaArgs(java, home, "org.apache.kafka.tools.ProducerPerformance",
		"--topic", topic, "--num-records", strconv.Itoa(cfg.PerfRecords), "--record-size", strconv.Itoa(cfg.RecordBytes),
		"--throughput", "-1", "--producer-props", "bootstrap.servers="+broker, "acks=all", "enable.idempotence=true",
		"linger.ms=0", "batch.size=1048576", "compression.type=none")...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return PerfRun{}, fmt.Errorf("ProducerPerformance: %v\n%s", err, tailOf(out))
	}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if perfLine.MatchString(sc.Text()) {
			last = sc.Text()
		}
	}
	m := perfLine.FindStringSubmatch(last)
	if m == nil {
		return PerfRun{}, fmt.Errorf("ProducerPerformance printed no summary:\n%s", tailOf(out))
	}
	r := PerfRun{Line: strings.TrimSpace(last)}
	r.Records, _ = strconv.ParseFloat(m[2], 64)
	r.AvgMs, _ = strconv.ParseFloat(m[3], 64)
	r.P99ms, _ = strconv.ParseFloat(m[4], 64)
	return r, nil
}

func tailOf(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// latencyRun produces 1 KB records at LatencyRate (open loop: each record stamped with its
// intended send time, linger 0, acks=all) and consumes them in this process; the latency is
// from the intended send time to the consumer's receipt, so a stalled producer counts.
func latencyRun(ctx context.Context, cfg Config, broker string) (LatencyRun, error) {
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("latency"), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return LatencyRun{}, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"latency": {0: kgo.NewOffset().AtEnd()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return LatencyRun{}, err
	}
	defer cons.Close()
	// Make sure the consumer has its position before the first record is sent.
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 8)}).FirstErr(); err != nil {
		return LatencyRun{}, err
	}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	for pctx.Err() == nil {
		if cons.PollFetches(pctx).NumRecords() > 0 {
			break
		}
	}
	pcancel()

	total := int(float64(cfg.LatencyRate) * (cfg.Warmup + cfg.LatencyDuration).Seconds())
	warm := int(float64(cfg.LatencyRate) * cfg.Warmup.Seconds())
	lat := make([]time.Duration, 0, total)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		cctx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.LatencyDuration+30*time.Second)
		defer cancel()
		for seen < total && cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < 16 {
					return
				}
				seq := int(int64(beUint64(r.Value[8:])))
				if seq >= warm {
					lat = append(lat, now.Sub(time.Unix(0, int64(beUint64(r.Value)))))
				}
				seen++
			})
		}
	}()
	payload := make([]byte, cfg.RecordBytes)
	start := time.Now()
	interval := time.Second / time.Duration(cfg.LatencyRate)
	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		v := slices.Clone(payload)
		putUint64(v, uint64(due.UnixNano()))
		putUint64(v[8:], uint64(i))
		prod.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	sent := time.Since(start)
	<-done
	r := LatencyRun{Rate: float64(total) / sent.Seconds(), Count: len(lat)}
	r.P50ms, r.P99ms = quantileMs(lat, 0.5), quantileMs(lat, 0.99)
	if len(lat) > 0 {
		r.MaxMs = float64(slices.Max(lat)) / 1e6
	}
	return r, nil
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

func beUint64(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v = v<<8 | uint64(b[i])
	}
	return v
}
