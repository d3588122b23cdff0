package aggregator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/deathsig"
	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
	"github.com/continuum-project/continuum/internal/testenv"
)

// The continuum binary the aggregator runs as (a separate process, so that it can be killed
// with SIGKILL): $CONTINUUM_BIN or built once per test process.
var continuum struct {
	once    sync.Once
	path    string
	cleanup func()
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if continuum.cleanup != nil {
		continuum.cleanup()
	}
	kafka.Stop()
	testenv.ExitUnlessLeaked(code, "stream/bridge.", "stream/aggregator.", "franz-go/pkg/kgo.")
}

func buildContinuum() { continuum.path, continuum.cleanup, continuum.err = testenv.Binary() }

func continuumBinary(t *testing.T) string {
	t.Helper()
	continuum.once.Do(buildContinuum)
	if continuum.err != nil {
		t.Fatal(continuum.err)
	}
	return continuum.path
}

// pipeline is a real Kafka broker, a continuum kv and a realtime database in this process, and
// a bridge in this process in front of the broker.
type pipeline struct {
	kafka  *baselines.Server
	broker string
	rtdb   string // the database's base URL
	bridge string // the bridge's base URL
}

// The exactly-once and invariant pipelines share one broker (a JVM start took a minute in make
// test's parallel pass), with every topic they use. TestStaleWriteWindow, which times a
// rebalance, keeps a broker of its own (startPipelineOn).
var kafka = baselinetest.SharedKafka{Topics: []baselines.KafkaTopic{
	{Name: "eo-aggkill", Partitions: 3, Replication: 1}, {Name: "eo-partition", Partitions: 3, Replication: 1},
	{Name: "eo-brokerkill", Partitions: 3, Replication: 1}, {Name: "eo-poison", Partitions: 1, Replication: 1}, // TestExactlyOnce
	{Name: "inv", Partitions: 3, Replication: 1}, // TestPipelineInvariant
}}

// startPipeline is a pipeline on the package's shared broker.
func startPipeline(t *testing.T, topics ...baselines.KafkaTopic) *pipeline {
	t.Helper()
	return startPipelineOn(t, kafka.Broker(t, topics...))
}

// startPipelineOn is a pipeline on broker k.
func startPipelineOn(t *testing.T, k *baselines.Server) *pipeline {
	t.Helper()
	kcfg := server.DefaultConfig()
	kcfg.Name = "eo"
	kcfg.DataDir = t.TempDir()
	kcfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	kvs, err := server.Start(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kvs.Close() })
	rcfg := rtdb.DefaultConfig()
	rcfg.KVEndpoints = kvs.ClientURLs()
	db, err := rtdb.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	dbs := httptest.NewServer(db)
	t.Cleanup(func() { dbs.Close(); db.Close() })
	bcfg := bridge.DefaultConfig()
	bcfg.Brokers = k.Target.Endpoints
	bcfg.AckTimeout = 5 * time.Second
	br, err := bridge.New(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	brs := httptest.NewServer(br)
	t.Cleanup(func() { brs.Close(); br.Close() })
	return &pipeline{kafka: k, broker: k.Target.Endpoints[0], rtdb: dbs.URL, bridge: brs.URL}
}

// aggregatorProc is `continuum stream aggregator` as a child process.
type aggregatorProc struct {
	t    *testing.T
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startAggregator(t *testing.T, args ...string) *aggregatorProc {
	t.Helper()
	a := &aggregatorProc{t: t, args: append([]string{continuumBinary(t), "stream", "aggregator"}, args...),
		log: filepath.Join(t.TempDir(), "aggregator.log")}
	a.start()
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			b, _ := os.ReadFile(a.log)
			t.Logf("aggregator log:\n%s", lastLines(string(b), 40))
		}
	})
	return a
}

func (a *aggregatorProc) start() {
	a.t.Helper()
	lf, err := os.OpenFile(a.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	cmd := exec.Command(a.args[0], a.args[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := deathsig.Start(cmd); err != nil {
		lf.Close()
		a.t.Fatal(err)
	}
	a.cmd, a.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); lf.Close(); close(a.done) }()
}

// kill sends SIGKILL (no shutdown: no leave, no last commit) and waits for the exit.
func (a *aggregatorProc) kill() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// load posts n records in batches from clients goroutines through the bridge, each client
// retrying a post until it is answered 200 (what a client of the bridge does: an answer other
// than 200 acknowledges nothing). It returns the records acknowledged, by id.
type load struct {
	mu    sync.Mutex
	acked map[string][]byte
	posts atomic.Int64 // answered 200
	fails atomic.Int64 // answered otherwise, or not at all
	done  chan struct{}
}

func startLoad(t *testing.T, ctx context.Context, url, run string, n, clients, batch int) *load {
	return startPacedLoad(t, ctx, url, run, n, clients, batch, 0)
}

// startPacedLoad is startLoad with each client pausing pace after each acknowledged post, so
// that the load lasts at least n/(clients*batch) paces.
func startPacedLoad(t *testing.T, ctx context.Context, url, run string, n, clients, batch int, pace time.Duration) *load {
	l := &load{acked: make(map[string][]byte, n), done: make(chan struct{})}
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for c := range clients {
		wg.Go(func() {
			for first := c * batch; first < n; first += clients * batch {
				var recs [][]byte
				for seq := first; seq < min(first+batch, n); seq++ {
					b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-u%d-%d", run, c, seq), "user": c, "seq": seq,
						"sent_us": time.Now().UnixMicro(), "pad": strings.Repeat("x", 200+seq%50)})
					recs = append(recs, b)
				}
				body := append(append([]byte{'['}, bytes.Join(recs, []byte{','})...), ']')
				for {
					if ctx.Err() != nil {
						return
					}
					resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == http.StatusOK {
							break
						}
					}
					l.fails.Add(1)
					select {
					case <-ctx.Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
				l.posts.Add(1)
				l.mu.Lock()
				for _, r := range recs {
					var id struct{ ID string }
					_ = json.Unmarshal(r, &id)
					l.acked[id.ID] = r
				}
				l.mu.Unlock()
				if pace > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(pace):
					}
				}
			}
		})
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

// merge adds o's records and counts (both loads finished) to l.
func (l *load) merge(o *load) {
	for id, r := range o.acked {
		l.acked[id] = r
	}
	l.posts.Add(o.posts.Load())
	l.fails.Add(o.fails.Load())
}

func (l *load) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(timeout):
		t.Fatalf("the load did not finish within %v (%d posts acknowledged, %d failed)", timeout, l.posts.Load(), l.fails.Load())
	}
}

// get reads path from the database as JSON.
func get(t *testing.T, base, path string, v any) error {
	t.Helper()
	resp, err := http.Get(base + path + ".json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, v)
}

// count is the number of children at path.
func count(base, path string) int {
	resp, err := http.Get(base + path + ".json?shallow=true")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var m map[string]any
	if json.NewDecoder(resp.Body).Decode(&m) != nil {
		return -1
	}
	return len(m)
}

// checkExactlyOnce checks that the database holds at path exactly the acknowledged records,
// each with the content posted, and that nothing went to the dead-letter path.
func checkExactlyOnce(t *testing.T, p *pipeline, path string, l *load) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Wait on the number of children (a shallow read: the kv's keys, not their values) before
	// reading the records: a full read of thousands of records, polled every 50 ms while the
	// aggregator catches up, cost this package several CPU-seconds under -race (a Pebble Get
	// per leaf) and slowed the aggregator it waits for.
	testenv.Eventually(t, 3*time.Minute, "as many records in the database as were acknowledged", func() bool {
		return count(p.rtdb, path) >= len(l.acked)
	})
	var got map[string]any
	testenv.EventuallyNoError(t, time.Minute, "every acknowledged record in the database", func() error {
		got = nil
		if err := get(t, p.rtdb, path, &got); err != nil {
			return err
		}
		if len(got) < len(l.acked) {
			return fmt.Errorf("%d of %d records", len(got), len(l.acked))
		}
		return nil
	})
	if len(got) != len(l.acked) {
		t.Errorf("the database holds %d records at %s, %d were acknowledged", len(got), path, len(l.acked))
	}
	bad := 0
	for id, raw := range l.acked {
		var want any
		_ = json.Unmarshal(raw, &want)
		if !reflect.DeepEqual(got[id], want) {
			if bad++; bad <= 3 {
				t.Errorf("record %s: database has %v, posted %s", id, got[id], raw)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d records differ", bad, len(l.acked))
	}
	var dead map[string]any
	if err := get(t, p.rtdb, "/dead-letters", &dead); err != nil || len(dead) != 0 {
		t.Errorf("dead letters: %v (err %v)", dead, err)
	}
}

// cutProxy forwards TCP to a target until cut: then it closes every connection and refuses new
// ones (a partition as the aggregator sees it), until healed.
type cutProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	cut     bool
	conns   map[net.Conn]bool
	refused atomic.Int64
	wg      sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.setCut(true); p.wg.Wait() })
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			p.refused.Add(1)
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

func mustAtoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n)
	return n
}

func del(t *testing.T, base, path string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+path+".json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
