package streamload

import (
	"bufio"
	"compress/gzip"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

func TestMain(m *testing.M) { baselinetest.Main(m) }

// startRTDB starts continuum kv and a realtime database on it in this process.
func startRTDB(t *testing.T) string {
	t.Helper()
	kc := server.DefaultConfig()
	kc.Name = "test"
	kc.DataDir = t.TempDir()
	kc.ListenClientURLs = []string{"http://127.0.0.1:0"}
	ks, err := server.Start(kc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	cfg := rtdb.DefaultConfig()
	cfg.KVEndpoints = []string{ks.ClientURLs()[0]}
	s, err := rtdb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs.URL
}

// TestUsersREST runs users against a real realtime-db on kv (the cloud-only send path) and
// checks the records the database holds: every one there, byte for byte the record sent, the
// size asked for; then breaks the database's copy three ways and checks verify sees each.
func TestUsersREST(t *testing.T) {
	url := startRTDB(t)
	cfg := DefaultConfig()
	cfg.SendURL, cfg.SubscribeURL = url, url
	cfg.Users, cfg.Requests, cfg.Interval, cfg.IntervalSD, cfg.Payload = 4, 10, 20*time.Millisecond, 5*time.Millisecond, 10240
	cfg.Duration = time.Minute
	sess, err := loadgen.NewSession(loadgen.Config{Duration: cfg.Duration}, []string{SeriesAck})
	if err != nil {
		t.Fatal(err)
	}
	tl := newTally(cfg.Users, cfg.Requests)
	client := &http.Client{}
	for u := 0; u < cfg.Users; u++ {
		runUser(context.Background(), cfg, client, sess, tl, "r1", u, sess.T0())
	}
	res, _ := sess.Close(false)
	if ack := res.Stats.Series[SeriesAck]; ack.OK != 40 || ack.Errors != 0 {
		t.Fatalf("ack series %+v: want 40 answered", ack)
	}
	v := verify(context.Background(), client, cfg, tl, "r1")
	if *v != (Verify{Records: 40}) {
		t.Fatalf("verify %+v: want the 40 records as sent", v)
	}
	put := func(path, body string) {
		req, _ := http.NewRequest(http.MethodPut, url+path+".json", strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("PUT %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	put("/records/r1-u0-0", "null")            // lost
	put("/records/r1-u0-1/pad", `"short"`)     // changed
	put("/records/someone-else", `{"id":"x"}`) // not ours
	v = verify(context.Background(), client, cfg, tl, "r1")
	if *v != (Verify{Records: 40, Missing: 1, Mismatched: 1, Unexpected: 1}) {
		t.Errorf("verify %+v: want 1 missing, 1 mismatched, 1 unexpected", v)
	}
}

// TestUsersBridgeKafka is the edge-only path end to end with real Kafka: users POST to the
// stream bridge, the subscriber consumes the topic. Every record arrives once with its content;
// each user's records are spaced Normal(interval, sd) within loose bounds; a record produced
// twice behind the bridge's back counts as a duplicate.
func TestUsersBridgeKafka(t *testing.T) {
	k := baselinetest.StartKafka(t, baselines.KafkaTopic{Name: "records", Partitions: 2, Replication: 1})
	brokers := k.Target.Endpoints
	bc := bridge.DefaultConfig()
	bc.Brokers = brokers
	// The bridge needs its token, which the users read from its file (as in a run).
	tokenFile := filepath.Join(t.TempDir(), "token")
	bc.Token = "users-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(bc.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	br, err := bridge.New(bc)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(br)
	t.Cleanup(func() { hs.Close(); br.Close() })

	// A duplicate of the first record, as a producer retrying without idempotence would
	// write it, goes in as soon as the first one is there.
	dup := make(chan struct{})
	go func() {
		defer close(dup)
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("records"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for ctx.Err() == nil {
			var first *kgo.Record
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if first == nil && string(r.Key) == "t1-u0-0" {
					first = r
				}
			})
			if first != nil {
				_ = cl.ProduceSync(ctx, &kgo.Record{Topic: "records", Key: first.Key, Value: first.Value}).FirstErr()
				return
			}
		}
	}()

	out := t.TempDir()
	cfg := DefaultConfig()
	cfg.Send, cfg.SendURL, cfg.Subscribe, cfg.Brokers, cfg.Run = SendBridge, hs.URL, SubscribeKafka, brokers, "t1"
	cfg.SendTokenFile = tokenFile
	cfg.Users, cfg.Requests, cfg.Interval, cfg.IntervalSD, cfg.Payload = 20, 15, 40*time.Millisecond, 10*time.Millisecond, 1024
	cfg.Duration, cfg.Grace, cfg.OutDir = time.Minute, 20*time.Second, out
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-dup
	if st := mustStats(t, out); st.Series[SeriesAck].Errors > 0 {
		t.Fatalf("sends failed: %v", st.Series[SeriesAck].ErrorsByType)
	}
	if rep.Sent != 300 || rep.Acked != 300 || rep.Received != 300 || rep.Lost != 0 || rep.Mismatched != 0 || rep.Foreign != 0 {
		t.Errorf("report %+v: want 300 sent, acked and received as sent", rep)
	}
	if rep.Duplicated > 1 {
		t.Errorf("duplicated %d: want at most the one planted", rep.Duplicated)
	}
	st := mustStats(t, out)
	if e2e := st.Series[SeriesE2E]; e2e.OK != 300 || e2e.Errors != 0 || e2e.Latency.P50 <= 0 {
		t.Errorf("e2e series %+v", e2e)
	}
	// Spacing: from records.csv.gz, the gaps of each user's records.
	gaps := recordGaps(t, filepath.Join(out, RecordsFile), "t1")
	var sum, sq float64
	for _, g := range gaps {
		sum += g
		sq += g * g
	}
	n := float64(len(gaps))
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if len(gaps) != 20*14 || mean < 0.030 || mean > 0.050 || sd < 0.004 || sd > 0.020 {
		t.Errorf("%d gaps, mean %.4fs sd %.4fs: want 280 gaps, mean ~0.040 s, sd ~0.010 s", len(gaps), mean, sd)
	}
}

// recordGaps reads records.csv.gz and returns the gaps between consecutive due times of each
// user's records, in seconds.
func recordGaps(t *testing.T, path, run string) []float64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	due := map[int]map[int]float64{}
	sc := bufio.NewScanner(zr)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), ",")
		u, s, ok := parseID(run, cols[0])
		d, err := strconv.ParseFloat(cols[1], 64)
		if !ok || err != nil {
			t.Fatalf("records line %q", sc.Text())
		}
		if due[u] == nil {
			due[u] = map[int]float64{}
		}
		due[u][s] = d
	}
	var gaps []float64
	for _, m := range due {
		for s := 1; s < len(m); s++ {
			gaps = append(gaps, m[s]-m[s-1])
		}
	}
	return gaps
}

func mustStats(t *testing.T, dir string) results.Stats {
	t.Helper()
	var st results.Stats
	if err := results.ReadJSON(filepath.Join(dir, results.StatsFile), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestUsersCloudOnly is the cloud-only path end to end against a real realtime-db on kv: users
// PUT, a Firebase SSE listener on the same database receives; every record arrives once with
// its content, and the database holds exactly the records sent.
func TestUsersCloudOnly(t *testing.T) {
	url := startRTDB(t)
	out := t.TempDir()
	cfg := DefaultConfig()
	cfg.SendURL, cfg.SubscribeURL, cfg.Verify, cfg.Run = url, url, true, "c1"
	cfg.Users, cfg.Requests, cfg.Interval, cfg.IntervalSD, cfg.Payload = 20, 10, 40*time.Millisecond, 10*time.Millisecond, 1024
	cfg.Duration, cfg.Grace, cfg.OutDir = time.Minute, 20*time.Second, out
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := mustStats(t, out); st.Series[SeriesAck].Errors > 0 {
		t.Fatalf("sends failed: %v", st.Series[SeriesAck].ErrorsByType)
	}
	if rep.Sent != 200 || rep.Acked != 200 || rep.Received != 200 || rep.Lost != 0 || rep.Duplicated != 0 ||
		rep.Mismatched != 0 || rep.Foreign != 0 || rep.Partial != 0 {
		t.Errorf("report %+v: want 200 sent, acked and received once as sent", rep)
	}
	if rep.Resyncs != 0 || rep.Reconnects != 0 {
		t.Errorf("resyncs %d, reconnects %d: want none (the first record's put of the whole path is not one)", rep.Resyncs, rep.Reconnects)
	}
	if rep.Verify == nil || *rep.Verify != (Verify{Records: 200}) {
		t.Errorf("verify %+v: want the 200 records as sent", rep.Verify)
	}
}
