package aggregator_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/stream/aggregator"
	"github.com/continuum-project/continuum/internal/testenv"
)

// The exactly-once tests share one broker (a JVM start costs seconds): each subtest has its own
// topic (3 partitions), consumer group and database path, and the broker-kill subtest, which
// restarts the broker, runs last.
func TestExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a broker, two SIGKILLs and a partition: a minute or two")
	}
	topics := []baselines.KafkaTopic{{Name: "eo-aggkill", Partitions: 3, Replication: 1},
		{Name: "eo-partition", Partitions: 3, Replication: 1}, {Name: "eo-brokerkill", Partitions: 3, Replication: 1},
		{Name: "eo-poison", Partitions: 1, Replication: 1}}
	// Build the aggregator's binary while the broker starts (both take seconds).
	built := make(chan struct{})
	go func() { defer close(built); continuum.once.Do(buildContinuum) }()
	p := startPipeline(t, topics...)
	<-built
	continuumBinary(t)
	const n, clients, batch = 3000, 4, 25

	// --start-timeout 60s: the product's 10 s fails fast for a user whose database is not up; in
	// make test's parallel pass under -race, the database once took longer than 10 s to answer
	// the aggregator's first request, which then exited and left the subtest waiting for nothing.
	aggArgs := func(name, rtdbURL string) []string {
		return []string{"--brokers", p.broker, "--topics", "eo-" + name, "--group", "g-" + name, "--instance-id", "agg-" + name,
			"--session-timeout", "6s", "--rtdb", rtdbURL, "--path", "/eo/" + name, "--retry-max", "500ms", "--poll-records", "300",
			"--start-timeout", "60s"}
	}

	t.Run("aggregator-kill", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// Half the records while the aggregator runs, SIGKILL once some are in, the other
		// half while it is dead, then the same member again.
		l := startLoad(t, ctx, p.bridge+"/topics/eo-aggkill", "ak1", n/2, clients, batch)
		agg := startAggregator(t, aggArgs("aggkill", p.rtdb)...)
		testenv.Eventually(t, 3*time.Minute, "some records written", func() bool { return count(p.rtdb, "/eo/aggkill") >= n/6 })
		agg.kill()
		written := count(p.rtdb, "/eo/aggkill")
		l.wait(t, 3*time.Minute)
		l2 := startLoad(t, ctx, p.bridge+"/topics/eo-aggkill", "ak2", n/2, clients, batch)
		l2.wait(t, 3*time.Minute)
		agg.start() // same arguments, same static member: takes its partitions back
		l.merge(l2)
		checkExactlyOnce(t, p, "/eo/aggkill", l)
		t.Logf("killed after %d records; %d posts, %d retried", written, l.posts.Load(), l.fails.Load())
	})

	t.Run("rtdb-partition", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cut := startCutProxy(t, p.rtdb[len("http://"):])
		// Half the records through an open link, then the link is cut and the other half
		// posted: the aggregator must keep retrying them (and be refused), never skip them.
		l := startLoad(t, ctx, p.bridge+"/topics/eo-partition", "pt1", n/2, clients, batch)
		startAggregator(t, aggArgs("partition", "http://"+cut.addr())...)
		l.wait(t, 3*time.Minute)
		testenv.Eventually(t, 3*time.Minute, "the first half written", func() bool { return count(p.rtdb, "/eo/partition") >= n/2 })
		cut.setCut(true)
		l2 := startLoad(t, ctx, p.bridge+"/topics/eo-partition", "pt2", n/2, clients, batch)
		l2.wait(t, 3*time.Minute)
		testenv.Eventually(t, time.Minute, "the aggregator retrying against the cut link", func() bool { return cut.refused.Load() >= 3 })
		during := count(p.rtdb, "/eo/partition")
		cut.setCut(false)
		l.merge(l2)
		checkExactlyOnce(t, p, "/eo/partition", l)
		if during > n/2 {
			t.Errorf("%d records in the database while the link was cut, want the first %d only", during, n/2)
		}
		t.Logf("%d connections refused while cut", cut.refused.Load())
	})

	t.Run("poison", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.broker), kgo.DefaultProduceTopic("eo-poison"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		values := []string{`{"id":"ok-1","v":1}`, `not json`, `[1,2]`, `{"id":"a.b","v":2}`, `{"id":"ok-2","bad$key":3}`,
			`{"id":"ok-3","v":3}`, `{"v":4}`, `{"id":true}`}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		stats := filepath.Join(t.TempDir(), "stats.json")
		startAggregator(t, append(aggArgs("poison", p.rtdb), "--stats-file", stats)...)
		var dead map[string]map[string]any
		testenv.EventuallyNoError(t, 2*time.Minute, "5 dead letters", func() error {
			dead = nil
			if err := get(t, p.rtdb, "/dead-letters", &dead); err != nil {
				return err
			}
			if len(dead) != 5 {
				return errorf("%d dead letters: %v", len(dead), dead)
			}
			return nil
		})
		for _, off := range []string{"1", "2", "3", "4", "7"} {
			d := dead["eo-poison-0-"+off]
			if d == nil || d["value"] != values[mustAtoi(off)] || d["error"] == "" {
				t.Errorf("dead letter of offset %s: %v", off, d)
			}
		}
		var got map[string]any
		testenv.EventuallyNoError(t, time.Minute, "the good records", func() error {
			if err := get(t, p.rtdb, "/eo/poison", &got); err != nil {
				return err
			}
			if len(got) != 3 {
				return errorf("records %v", got)
			}
			return nil
		})
		if got["ok-1"] == nil || got["ok-3"] == nil || got["eo-poison-0-6"] == nil {
			t.Errorf("records %v: want ok-1, ok-3 and eo-poison-0-6 (no id)", got)
		}
		testenv.EventuallyNoError(t, time.Minute, "the stats file counting them", func() error {
			var st aggregator.Stats
			if err := readJSON(stats, &st); err != nil {
				return err
			}
			if st.Written != 3 || st.DeadLetters != 5 || st.LastWriteUnixMs == 0 {
				return errorf("stats %+v", st)
			}
			return nil
		})
		// Clear them so the other subtests' checks find no dead letters.
		del(t, p.rtdb, "/dead-letters")
	})

	t.Run("broker-kill", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		startAggregator(t, aggArgs("brokerkill", p.rtdb)...)
		// Paced, so that the load still runs when the broker is killed (30 posts a client, 20 ms
		// apart at least).
		l := startPacedLoad(t, ctx, p.bridge+"/topics/eo-brokerkill", "bk", n, clients, batch, 20*time.Millisecond)
		testenv.Eventually(t, 3*time.Minute, "a third of the records acknowledged", func() bool { return l.posts.Load()*batch >= n/3 })
		kctx, kcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := p.kafka.Crash(kctx) // SIGKILL, then the same command line on the same data dir
		kcancel()
		if err != nil {
			t.Fatal(err)
		}
		before := l.posts.Load()
		l.wait(t, 3*time.Minute)
		if before*batch >= n {
			t.Logf("the load ended before the broker was back (%d posts acknowledged before)", before)
		}
		checkExactlyOnce(t, p, "/eo/brokerkill", l)
		t.Logf("%d posts acknowledged, %d answered otherwise (retried)", l.posts.Load(), l.fails.Load())
	})
}
