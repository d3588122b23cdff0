package aggregator_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/stream/aggregator"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestStaleWriteWindow shows the window the package doc leaves open (writes are not fenced by
// offset in the database): member A's write of x (v 0) is held on its way to the database;
// member B joins, and since A cannot rejoin while it writes, the group gives B the partition
// once A's rebalance timeout passes; B writes v 0 and then v 1, a newer record of x; then A's
// held write lands and x holds v 0 again, until x's next record (which may be A's own write of
// v 1, if A fetched it before it learnt of the rebalance: the test reads x as the held write
// lands, before A has its answer). If writes become fenced, this test fails: turn it into the
// check that x keeps v 1.
func TestStaleWriteWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("a broker and two aggregators")
	}
	const topic = "window"
	p := startPipelineOn(t, baselinetest.StartKafka(t, baselines.KafkaTopic{Name: topic, Partitions: 1, Replication: 1}))
	// A reaches the database through a relay that holds writes until released; B directly.
	target, _ := url.Parse(p.rtdb)
	rp := httputil.NewSingleHostReverseProxy(target)
	release := make(chan struct{})
	var held atomic.Int64
	// landed gets x's value read right after a held write of A's was applied, before A has the
	// answer: A may still hold x's newer record in its fetch buffer (fetched while it waited,
	// before it learnt it had lost the partition) and write it at once, which would close the
	// window again within milliseconds, too fast for a reader polling x to see it.
	landed := make(chan string, 16)
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPatch {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if !bytes.Contains(body, []byte(`"v":0`)) {
			rp.ServeHTTP(w, r)
			return
		}
		held.Add(1)
		<-release
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		if rec.Code < 300 {
			landed <- value(t, p.rtdb, "/win/x")
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	defer hold.Close()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	cfg := func(rtdbURL string) aggregator.Config {
		c := aggregator.DefaultConfig()
		c.Brokers, c.Topics, c.Group, c.RTDB = []string{p.broker}, []string{topic}, "window", rtdbURL
		c.Path, c.SessionTimeout, c.RebalanceTimeout = "/win", 6*time.Second, 2*time.Second
		// A's write is held beyond its timeout, and the retry is held too: at least one is in
		// flight when it is released.
		c.WriteTimeout, c.RetryMin, c.RetryMax = 30*time.Second, 10*time.Millisecond, 100*time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		return c
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	postAll(t, hc, p.bridge+"/topics/"+topic, []posting{{body: []byte(`{"id":"x","v":0}`)}})
	a := startInproc(t, cfg(hold.URL))
	defer a.stop()
	testenv.Eventually(t, 2*time.Minute, "A's write of v 0 held", func() bool { return held.Load() > 0 })
	b := startInproc(t, cfg(p.rtdb))
	defer b.stop()
	testenv.Eventually(t, 2*time.Minute, "B, given the partition, writes v 0", func() bool { return value(t, p.rtdb, "/win/x") == `{"id":"x","v":0}` })
	postAll(t, hc, p.bridge+"/topics/"+topic, []posting{{body: []byte(`{"id":"x","v":1}`)}})
	testenv.Eventually(t, 2*time.Minute, "B writes the newer v 1", func() bool { return value(t, p.rtdb, "/win/x") == `{"id":"x","v":1}` })
	close(release)
	released = true
	select {
	case v := <-landed:
		if v != `{"id":"x","v":0}` {
			t.Errorf("x right after A's held write landed = %s, want A's stale v 0 over B's v 1 (the window)", v)
		}
	case <-time.After(time.Minute):
		t.Fatal("A's held write of v 0 did not land within a minute of its release")
	}
}

func value(t *testing.T, base, path string) string {
	resp, err := http.Get(base + path + ".json")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}
