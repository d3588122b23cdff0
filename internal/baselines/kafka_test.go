package baselines

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testJavaOptions are baselinetest.KafkaJavaOptions (which imports this package): the client
// compiler only, for a JVM that lives seconds, in a CPU-bound make test.
var testJavaOptions = []string{"-XX:TieredStopAtLevel=1"}

// needKafka skips the test when java or the Kafka jars are missing, or fails it under
// CONTINUUM_REQUIRE_ROOT=1; the message names `make setup`.
func needKafka(t *testing.T) {
	t.Helper()
	need(t, JavaBinary)
	need(t, KafkaHome)
}

func TestParseKafkaTopic(t *testing.T) {
	for in, want := range map[string]KafkaTopic{
		"orders":      {"orders", 1, 1},
		"orders:6":    {"orders", 6, 1},
		"a.b-c_d:3:3": {"a.b-c_d", 3, 3},
	} {
		if got, err := ParseKafkaTopic(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a:0", "a:1:0", "a:x", "a b", "a:1:1:1"} {
		if _, err := ParseKafkaTopic(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (KafkaTopic{"t", 1, 3}).Check(1); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("replication 3 on 1 broker: %v", err)
	}
}

func TestKafkaProperties(t *testing.T) {
	one := KafkaNode{ID: 1, Host: "127.0.0.1", Port: 9092, ControllerPort: 9093}
	p := KafkaProperties(one, []KafkaNode{one}, "0.0.0.0", "/d")
	for _, want := range []string{"process.roles=broker,controller\n", "node.id=1\n",
		"controller.quorum.bootstrap.servers=127.0.0.1:9093\n",
		"listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093\n",
		"advertised.listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n",
		"log.dirs=/d\n", "offsets.topic.replication.factor=1\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("properties lack %q:\n%s", want, p)
		}
	}
	q := []KafkaNode{one, {2, "10.0.0.2", 9092, 9093}, {3, "10.0.0.3", 9092, 9093}}
	p = KafkaProperties(q[1], q, "0.0.0.0", "/d")
	for _, want := range []string{"node.id=2\n", "controller.quorum.voters=1@127.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093\n",
		"offsets.topic.replication.factor=3\n", "transaction.state.log.min.isr=2\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("properties lack %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "bootstrap.servers") {
		t.Error("a static quorum also names bootstrap servers")
	}
}

// TestKafkaProduceConsume starts one broker (a few seconds: one per package run), creates a
// topic of 3 partitions on start, produces 1000 records with acks=all and idempotence (franz-go's default with
// acks=all), and
// reads them all back, in order within each partition.
func TestKafkaProduceConsume(t *testing.T) {
	needKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartKafka(ctx, KafkaConfig{Config: Config{Dir: t.TempDir()}, Topics: []KafkaTopic{{"events", 3, 1}},
		JavaOptions: testJavaOptions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if i := slices.Index(s.Args, testJavaOptions[0]); i < 0 || i > slices.Index(s.Args, "-cp") || i < slices.Index(s.Args, "-XX:+UseG1GC") {
		t.Errorf("java options not between KafkaJavaArgs' own and the class path: %q", s.Args)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(s.Target.Endpoints...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 1000
	for i := range n {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(s.Target.Endpoints...), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	last := map[int32]int{}   // partition -> last value seen
	next := map[int32]int64{} // partition -> expected offset
	keyPart := map[string]int32{}
	seen := 0
	for seen < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d before the deadline", seen, n)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			if prev, ok := last[r.Partition]; ok && v <= prev {
				t.Errorf("partition %d: %d after %d", r.Partition, v, prev)
			}
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			if p, ok := keyPart[string(r.Key)]; ok && p != r.Partition {
				t.Errorf("key %s in partitions %d and %d", r.Key, p, r.Partition)
			}
			keyPart[string(r.Key)] = r.Partition
			last[r.Partition], next[r.Partition] = v, r.Offset+1
			seen++
		})
	}
	if seen != n || len(last) < 2 {
		t.Errorf("consumed %d records over %d partitions", seen, len(last))
	}
	if rss, err := s.RSS(); err != nil || rss < 50<<20 {
		t.Errorf("rss %d, %v", rss, err)
	} else if d, err := s.DiskBytes(); err != nil || d == 0 {
		t.Errorf("disk %d, %v", d, err)
	} else {
		t.Logf("broker rss %d MiB, data %d KiB", rss>>20, d>>10)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("not stopped")
	}
}

// TestKafkaCluster starts 3 brokers as one KRaft quorum with a topic replicated 3 times,
// produces (acks=all), stops the partition's leader, produces again and reads everything
// back from the two brokers left.
func TestKafkaCluster(t *testing.T) {
	needKafka(t)
	if testing.Short() {
		t.Skip("starts 3 JVMs (~1 GiB)")
	}
	if _, err := StartKafkaCluster(context.Background(), KafkaClusterConfig{Dir: t.TempDir(), Brokers: 2}); err == nil ||
		!strings.Contains(err.Error(), "odd quorum") {
		t.Errorf("2 brokers: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := StartKafkaCluster(ctx, KafkaClusterConfig{Dir: t.TempDir(), Topics: []KafkaTopic{{"rep", 1, 3}}, JavaOptions: testJavaOptions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t0 := time.Now()
	t.Logf("cluster up in %v", time.Since(start))

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("rep"), kgo.ConsumeTopics("rep"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 100)
	md, err := kadm.NewClient(cl).Metadata(ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	p := md.Topics["rep"].Partitions[0]
	if len(p.Replicas) != 3 || len(p.ISR) != 3 {
		t.Fatalf("partition 0: replicas %v isr %v", p.Replicas, p.ISR)
	}
	leader := p.Leader
	if err := c.Nodes[leader-1].Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %d stopped after %v", leader, time.Since(t0))
	produce(100, 200)
	t.Logf("produced after %v", time.Since(t0))
	for want := 0; want < 200; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 200 before the deadline", want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != strconv.Itoa(want) {
				t.Fatalf("record %d is %s", want, r.Value)
			}
			want++
		})
	}
	md, err = kadm.NewClient(cl).Metadata(ctx, "rep")
	if err == nil && md.Topics["rep"].Partitions[0].Leader == leader {
		t.Errorf("leader still %d after it stopped", leader)
	}
	t0 = time.Now()
	c.Stop()
	t.Logf("stopped in %v", time.Since(t0))
}
