package aggregator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/stream/aggregator"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestPipelineInvariant checks the pipeline's guarantee (the package doc's invariant) with
// random operations against the real bridge, Kafka broker and realtime database: records of
// random ids and sizes posted through the bridge, some of them refused by the database (a
// fault layer in front of it answers 400 to any write of a record marked "refuse"), transient failures (503 before or after the write), the two aggregators of one
// group started, stopped and crashed (closed without their last commit) at random (rebalances,
// restarts, redelivery), and the broker crashed (SIGKILL and restarted) once. Once every record is consumed, for each id:
//
//   - the database holds the newest acknowledged record of the id that is not a dead letter
//     (so no acknowledged record was superseded by one that was not stored, and no stale
//     record overwrote a newer one), with the content posted, or nothing if every record of
//     the id is a dead letter;
//   - every record the fault layer refuses is a dead letter or superseded by the stored one,
//     and every dead letter is a record that was posted, saying the database refused it.
//
// The choices are seeded: CONTINUUM_PIPELINE_SEED=<seed> replays them (the timing of the
// aggregators and the broker is not replayed). The operations are bounded (ops steps of at most
// 25 records each), so the test has a fixed budget.
func TestPipelineInvariant(t *testing.T) {
	if testing.Short() {
		t.Skip("a broker, a database and two aggregators for a minute")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CONTINUUM_PIPELINE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("CONTINUUM_PIPELINE_SEED=%q: want an integer", s)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: rerun with CONTINUUM_PIPELINE_SEED=%d", seed, seed)
		}
	})
	rng := rand.New(rand.NewPCG(uint64(seed), 41))
	const topic, ops, ids = "inv", 40, 10

	t0 := time.Now()
	p := startPipeline(t, baselines.KafkaTopic{Name: topic, Partitions: 3, Replication: 1})
	t.Logf("seed %d; broker, database and bridge started in %v", seed, time.Since(t0).Round(time.Millisecond))
	fault := startFaultLayer(t, p.rtdb, rng.Uint64())

	aggs := [2]*inprocAggregator{}
	start := func(i int) {
		cfg := aggregator.DefaultConfig()
		cfg.Brokers, cfg.Topics, cfg.Group, cfg.RTDB = []string{p.broker}, []string{topic}, "inv", fault.URL
		cfg.Path, cfg.DeadLetterPath, cfg.SessionTimeout = "/inv", "/inv-dead", 6*time.Second
		cfg.PollRecords, cfg.Parallel = 1+rng.IntN(60), 1+rng.IntN(4)
		cfg.RetryMin, cfg.RetryMax = 5*time.Millisecond, 100*time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		aggs[i] = startInproc(t, cfg)
	}
	stop := func(i int) {
		if aggs[i] != nil {
			aggs[i].stop()
			aggs[i] = nil
		}
	}
	// crash stops member i without its last commit: the next owner writes its last records
	// again (redelivery).
	crash := func(i int) {
		aggs[i].crash()
		aggs[i] = nil
	}
	defer stop(0)
	defer stop(1)

	posted := &oracle{byID: map[string][]posting{}}
	hc := &http.Client{Timeout: 30 * time.Second}
	seq := 0
	crashAt := 1 + rng.IntN(ops-2)
	var crashTook time.Duration
	for step := range ops {
		switch r := rng.IntN(10); {
		case r < 2:
			i := rng.IntN(2)
			switch {
			case aggs[i] == nil:
				start(i)
			case rng.IntN(2) == 0:
				crash(i)
			default:
				stop(i)
			}
		default:
			n := 1 + rng.IntN(25)
			var recs []posting
			for range n {
				seq++
				recs = append(recs, newPosting(rng, fmt.Sprintf("k%d", rng.IntN(ids)), seq))
			}
			postAll(t, hc, p.bridge+"/topics/"+topic, recs)
			posted.add(recs)
		}
		if step == crashAt {
			c0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := p.kafka.Crash(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			crashTook = time.Since(c0)
		}
	}
	// The tail: with both aggregators stopped, one post whose records of an id are consumed
	// in one poll, ending each id at random in a valid record, a refused one, or a valid one
	// then a refused one (the refused record superseding an acknowledged one in its poll).
	stop(0)
	stop(1)
	var tail []posting
	for i := range ids {
		id := fmt.Sprintf("k%d", i)
		switch rng.IntN(4) {
		case 0:
			seq++
			tail = append(tail, newPosting(rng, id, seq))
		case 1, 2:
			seq++
			tail = append(tail, withRefuse(newPosting(rng, id, seq), false))
			if rng.IntN(3) > 0 {
				seq++
				tail = append(tail, withRefuse(newPosting(rng, id, seq), true))
			}
		}
	}
	if len(tail) > 0 {
		postAll(t, hc, p.bridge+"/topics/"+topic, tail)
		posted.add(tail)
	}
	start(rng.IntN(2))
	// Every record consumed: the group's committed offsets reach the end of every partition
	// (an aggregator commits only what it has written).
	adm, err := kgo.NewClient(kgo.SeedBrokers(p.broker))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	testenv.EventuallyNoError(t, 3*time.Minute, "the group's lag at 0", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		lags, err := kadm.NewClient(adm).Lag(ctx, "inv")
		if err != nil {
			return err
		}
		l, ok := lags["inv"]
		if !ok || l.Error() != nil {
			return fmt.Errorf("lag of group inv: %v", l.Error())
		}
		if total := l.Lag.Total(); total != 0 || len(l.Lag) == 0 {
			return fmt.Errorf("lag %d", total)
		}
		return nil
	})
	posted.check(t, p.rtdb)
	t.Logf("%d records of %d ids posted in %d steps; %d writes refused by the fault layer, %d transient faults; broker crash and restart took %v; %v in all",
		seq, ids, ops, fault.refused.Load(), fault.transient.Load(), crashTook.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
}

// posting is one posted record: its id, seq (unique across the run), whether the fault layer
// refuses it, and its JSON.
type posting struct {
	id     string
	seq    int
	refuse bool
	body   []byte
}

// newPosting is a record of id: mostly a few leaves; one in eight 60 to 100 leaves of names
// of its own (replacing another large one: before the realtime database stopped counting the
// leaves a write replaces, it refused that as over one kv transaction); one in eight marked for
// the fault layer to refuse.
func newPosting(rng *rand.Rand, id string, seq int) posting {
	v := map[string]any{"id": id, "seq": seq}
	refuse := rng.IntN(8) == 0
	if refuse {
		v["refuse"] = true
	}
	n := 1 + rng.IntN(4)
	if rng.IntN(8) == 0 {
		n = 60 + rng.IntN(41)
	}
	for i := range n {
		v[fmt.Sprintf("f%d_%d", seq, i)] = rng.IntN(1000)
	}
	b, _ := json.Marshal(v)
	return posting{id: id, seq: seq, refuse: refuse, body: b}
}

// withRefuse marks r for the fault layer to refuse, or not.
func withRefuse(r posting, refuse bool) posting {
	var v map[string]any
	_ = json.Unmarshal(r.body, &v)
	delete(v, "refuse")
	if refuse {
		v["refuse"] = true
	}
	r.body, _ = json.Marshal(v)
	r.refuse = refuse
	return r
}

// postAll posts recs as one array until the bridge answers 200 (what a client does: any other
// answer acknowledges nothing).
func postAll(t *testing.T, hc *http.Client, url string, recs []posting) {
	t.Helper()
	var bodies [][]byte
	for _, r := range recs {
		bodies = append(bodies, r.body)
	}
	body := append(append([]byte{'['}, bytes.Join(bodies, []byte{','})...), ']')
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			// Bad input is the test's fault; anything else (503 while the broker restarts, a
			// 404 while it reloads its topics) the client retries.
			if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized {
				t.Fatalf("post: %d %s", resp.StatusCode, b)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not acknowledge a post within 3 minutes (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond) // a client's back-off between retries
	}
}

type oracle struct {
	mu   sync.Mutex
	byID map[string][]posting // in posting order, which is each id's order in Kafka
}

func (o *oracle) add(recs []posting) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range recs {
		o.byID[r.id] = append(o.byID[r.id], r)
	}
}

// check reads the database and the dead letters and checks the invariant.
func (o *oracle) check(t *testing.T, base string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var stored map[string]map[string]any
	var dead map[string]map[string]any
	if err := get(t, base, "/inv", &stored); err != nil {
		t.Fatal(err)
	}
	if err := get(t, base, "/inv-dead", &dead); err != nil {
		t.Fatal(err)
	}
	deadSeq := map[int]bool{}
	byDB := 0 // refused by the database itself, not by the fault layer
	for k, d := range dead {
		raw, _ := d["value"].(string)
		var v struct {
			ID  string
			Seq int
		}
		if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Seq == 0 {
			t.Errorf("dead letter %s is not a posted record: %v", k, d)
			continue
		}
		deadSeq[v.Seq] = true
		e, _ := d["error"].(string)
		if !strings.Contains(e, "refused by the database") {
			t.Errorf("dead letter %s (seq %d) says %q, want that the database refused it", k, v.Seq, e)
		}
		if !strings.Contains(e, "fault layer") {
			byDB++
		}
	}
	bad := 0
	for id, recs := range o.byID {
		// The newest record of id that is not a dead letter is the one stored.
		// Every record before it is superseded by it, every one after it is a dead letter; a
		// record the fault layer refuses can only be superseded or dead.
		var want *posting
		for i := range recs {
			if r := &recs[i]; !deadSeq[r.seq] {
				want = r
			}
		}
		if want != nil && want.refuse {
			t.Errorf("id %s: seq %d, refused by the fault layer, is neither a dead letter nor superseded by a stored record", id, want.seq)
			continue
		}
		got, ok := stored[id]
		switch {
		case want == nil && ok:
			t.Errorf("id %s: every record is a dead letter, but the database holds seq %v", id, got["seq"])
		case want != nil && !ok:
			t.Errorf("id %s: the database holds nothing; seq %d was acknowledged and is not a dead letter", id, want.seq)
		case want != nil:
			var w map[string]any
			_ = json.Unmarshal(want.body, &w)
			// encoding/json reads numbers as float64 on both sides.
			if !reflect.DeepEqual(got, w) {
				bad++
				t.Errorf("id %s: the database holds seq %v; the newest acknowledged record not in the dead letters is seq %d (records of the id: %s)",
					id, got["seq"], want.seq, describe(recs, deadSeq))
			}
		}
	}
	for id := range stored {
		if _, ok := o.byID[id]; !ok {
			t.Errorf("the database holds id %s, never posted", id)
		}
	}
	t.Logf("%d ids stored, %d dead letters (%d refused by the database itself)", len(stored), len(dead), byDB)
}

func describe(recs []posting, dead map[int]bool) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, " %d", r.seq)
		if r.refuse {
			b.WriteString("(refuse)")
		}
		if dead[r.seq] {
			b.WriteString("(dead)")
		}
	}
	return b.String()
}

// faultLayer is a reverse proxy in front of the database that refuses (400) every write
// naming a record marked "refuse":true (a dead letter holds the record as an escaped string,
// so it is not refused), and answers one write in twenty 503 before forwarding it and one in
// twenty 503 after (the write landed, the answer was lost), so the aggregator retries.
type faultLayer struct {
	*httptest.Server
	mu                 sync.Mutex
	rng                *rand.Rand
	refused, transient atomic.Int64
}

func startFaultLayer(t *testing.T, target string, seed uint64) *faultLayer {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &faultLayer{rng: rand.New(rand.NewPCG(seed, 7))}
	rp := httputil.NewSingleHostReverseProxy(u)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPatch {
			rp.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if bytes.Contains(body, []byte(`"refuse":true`)) {
			f.refused.Add(1)
			http.Error(w, `{"error":"fault layer: a record marked refuse"}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		roll := f.rng.IntN(20)
		f.mu.Unlock()
		if roll == 0 {
			f.transient.Add(1)
			http.Error(w, `{"error":"fault layer: unavailable before the write"}`, http.StatusServiceUnavailable)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		if roll == 1 {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			f.transient.Add(1)
			http.Error(w, `{"error":"fault layer: the answer was lost"}`, http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Server.Close)
	return f
}

// inprocAggregator is an aggregator run in this process (a restart is a stop and a start: it
// leaves the group, so the other member takes its partitions in a rebalance).
type inprocAggregator struct {
	a      *aggregator.Aggregator
	cancel context.CancelFunc
	done   chan struct{}
}

func startInproc(t *testing.T, cfg aggregator.Config) *inprocAggregator {
	t.Helper()
	a, err := aggregator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ia := &inprocAggregator{a: a, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ia.done)
		_ = a.Run(ctx)
	}()
	return ia
}

func (ia *inprocAggregator) stop() {
	ia.cancel()
	<-ia.done
	ia.a.Close()
}

// crash closes the member's Kafka client under it, so that its last offsets are not committed
// (the closest an in-process member comes to kill -9; TestExactlyOnce kills a process).
func (ia *inprocAggregator) crash() {
	ia.a.Close()
	ia.cancel()
	<-ia.done
}
