package freshness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/results"
)

func TestMain(m *testing.M) { baselinetest.Main(m) }

// TestRedisClusterFailover: the master of the probe's key is killed mid-run. Writes to its slot
// fail until its replica takes over, which Redis does no sooner than cluster-node-timeout (1 s
// here): the outage must be at least that. Without the kill, there is no such outage.
func TestRedisClusterFailover(t *testing.T) {
	c := baselinetest.StartRedisCluster(t)
	ctx := context.Background()
	var master string
	for _, r := range c.Roles(ctx) {
		if r.Master {
			master = r.Addr
			break
		}
	}
	cfg := Config{Backend: BackendRedisCluster, Write: c.Addrs[0], Read: c.Addrs[1:], Leader: master, Interval: 20 * time.Millisecond,
		Duration: 3 * time.Second, OutDir: t.TempDir()}
	calm, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without a fault: %+v", calm)
	if calm.Writes < 50 || calm.OutageMS >= 1000 || calm.WriteErrors != 0 || len(calm.Readers) != 1 {
		t.Errorf("without a fault: %+v", calm)
	}
	cfg.Duration, cfg.OutDir = 9*time.Second, t.TempDir()
	// The fault is timed from the probe's start: setting up (finding the key's replica by
	// gossip) can take seconds on a busy machine.
	started := make(chan struct{})
	cfg.OnStart = func() { close(started) }
	go func() {
		<-started
		time.Sleep(2 * time.Second)
		for i, a := range c.Addrs {
			if a == master {
				_ = c.Servers[i].Stop()
			}
		}
	}()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("master killed: %+v", rep)
	t.Logf("roles after: %+v", c.Roles(ctx))
	if rep.OutageMS < 1000 || rep.GapStartS < 1 || rep.GapStartS > 3 || rep.EndedInOutage {
		t.Errorf("killing the key's master at 2 s: outage %.0f ms from %.1f s; want >= 1000 ms (the node timeout) from ~2 s", rep.OutageMS, rep.GapStartS)
	}
	if rep.Writes < 50 {
		t.Errorf("writes did not resume after the failover: %+v", rep)
	}
}

// TestRedisReplicaStaleness: every replica pauses applying writes for 1.5 s (CLIENT PAUSE
// WRITE also holds the replication stream from its master, while reads go on being answered
// with what the replica has). Writes acknowledged by the key's master in that window become
// visible on its replica up to 1.5 s later: the probe must measure that. Without the pause,
// staleness stays near the poll interval.
//
// (Freezing the replica with SIGSTOP does not make it stale to a reader: the reader's request
// waits with the replication stream and is answered after it, with the fresh value. Cutting
// the replication link does not either: a Redis 7 replica reconnects and resyncs at once.)
func TestRedisReplicaStaleness(t *testing.T) {
	c := baselinetest.StartRedisCluster(t)
	ctx := context.Background()
	var master string
	var replicas []string
	for _, r := range c.Roles(ctx) {
		switch {
		case !r.Master:
			replicas = append(replicas, r.Addr)
		case master == "":
			master = r.Addr
		}
	}
	cfg := Config{Backend: BackendRedisCluster, Write: master, Read: c.Addrs, Leader: master, Interval: 10 * time.Millisecond,
		Duration: 2 * time.Second, OutDir: t.TempDir()}
	calm := staleness(t, cfg)
	if calm.OK < 100 || calm.Latency.P50 > 20 {
		t.Errorf("without a pause: staleness %+v; want most of the ~200 writes seen within 20 ms (p50)", calm.Latency)
	}

	cfg.Duration, cfg.OutDir = 4*time.Second, t.TempDir()
	paused := make(chan error, 1)
	cfg.OnStart = func() {
		go func() {
			time.Sleep(time.Second)
			for _, addr := range replicas {
				rc := redis.NewClient(&redis.Options{Addr: addr})
				err := rc.Do(ctx, "CLIENT", "PAUSE", "1500", "WRITE").Err()
				_ = rc.Close()
				if err != nil {
					paused <- fmt.Errorf("%s: CLIENT PAUSE: %w", addr, err)
					return
				}
			}
			paused <- nil
		}()
	}
	held := staleness(t, cfg)
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	if held.OK < 200 || held.Latency.Max < 500 {
		t.Errorf("replicas paused for 1.5 s: staleness %+v (%d writes seen); want a maximum of at least 500 ms", held.Latency, held.OK)
	}
}

// staleness runs cfg and returns its one reader's staleness series.
func staleness(t *testing.T, cfg Config) results.SeriesStats {
	t.Helper()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Readers) != 1 || rep.WriteErrors != 0 {
		t.Fatalf("report %+v; want one reader (the key's replica) and no write errors", rep)
	}
	st, err := readStats(cfg.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Series[rep.Readers[0]]
	t.Logf("%s: %d writes, staleness %+v", rep.Readers[0], rep.Writes, s.Latency)
	return s
}

// TestEtcdStaleness: one member read back through itself: every write is visible on it by
// the time it is acknowledged, so staleness is within the poll interval, and every write is
// measured.
func TestEtcdStaleness(t *testing.T) {
	srv := baselinetest.Start(t, "etcd")
	ep := srv.Target.Endpoints[0]
	dir := t.TempDir()
	rep, err := Run(context.Background(), Config{Backend: BackendEtcd, Write: ep, Read: []string{ep}, Leader: ep,
		Interval: 20 * time.Millisecond, Duration: 2 * time.Second, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Writes < 40 || len(rep.Readers) != 1 || !strings.HasPrefix(rep.Readers[0], "stale_") {
		t.Fatalf("report %+v", rep)
	}
	st, err := readStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Series[rep.Readers[0]]
	if s.OK < rep.Writes-2 || s.Latency.P50 > rep.PollMS+1 {
		t.Errorf("staleness on the writer's own member: %+v", s)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Backend: "redis", Write: "x", Duration: time.Second}, `backend "redis"`},
		{Config{Backend: "etcd", Write: "x", Duration: time.Second}, "no instances to read from"},
		{Config{Backend: "redis-cluster", Duration: time.Second}, "no endpoint to write through"},
		{Config{Backend: "redis-cluster", Write: "x"}, "duration"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func readStats(dir string) (results.Stats, error) {
	var st results.Stats
	err := results.ReadJSON(filepath.Join(dir, results.StatsFile), &st)
	return st, err
}

// logStore keeps the counter's log as a store does; drop decides, per write attempt (from
// 1), what happens: fail it, acknowledge it without keeping it, or (lose > 0) fail it and
// forget that many acknowledged writes, as a master that died before replicating them.
type logStore struct {
	mu       sync.Mutex
	log      []int64
	attempts int
	plan     func(attempt int) (fail, keep bool, lose int)
	readErr  error
}

func (l *logStore) write(_ context.Context, v int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts++
	fail, keep, lose := l.plan(l.attempts)
	l.log = l.log[:max(0, len(l.log)-lose)]
	if fail {
		return errors.New("connection refused")
	}
	if keep {
		l.log = append(l.log, v)
	}
	return nil
}

func (l *logStore) logged(context.Context) ([]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.log...), l.readErr
}

func (l *logStore) readers() []reader { return nil }
func (l *logStore) close()            {}

func probeFake(t *testing.T, l *logStore) *Report {
	t.Helper()
	rep, err := probe(context.Background(), Config{Backend: BackendRedisCluster, Write: "x", Interval: time.Millisecond,
		Timeout: 10 * time.Millisecond, Duration: 150 * time.Millisecond}, l, "k")
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestLostAcknowledgedWrites: a master dies having acknowledged 3 writes it did not pass on;
// writes fail for a while, then succeed again and overwrite the counter. The log still shows
// the 3 missing.
func TestLostAcknowledgedWrites(t *testing.T) {
	l := &logStore{plan: func(a int) (bool, bool, int) {
		switch {
		case a == 10:
			return true, false, 3
		case a > 10 && a < 18:
			return true, false, 0
		}
		return false, true, 0
	}}
	rep := probeFake(t, l)
	if rep.LostAcknowledged != 3 || rep.WriteErrors != 8 || !rep.FinalCheck {
		t.Errorf("lost %d, write errors %d, final check %v; want 3, 8 and a final check", rep.LostAcknowledged, rep.WriteErrors, rep.FinalCheck)
	}
}

// TestLossWithoutFailedWrites: an isolated master acknowledges writes from the 5th on that its
// replica, promoted, never saw; no write fails.
func TestLossWithoutFailedWrites(t *testing.T) {
	l := &logStore{plan: func(a int) (bool, bool, int) { return false, a < 5, 0 }}
	rep := probeFake(t, l)
	if want := int64(l.attempts - 4); rep.LostAcknowledged != want || rep.WriteErrors != 0 || !rep.FinalCheck {
		t.Errorf("lost %d, write errors %d, final check %v; want %d, 0 and a final check", rep.LostAcknowledged, rep.WriteErrors, rep.FinalCheck, want)
	}
}

// TestLogUnreadable: no count is claimed when the log cannot be read.
func TestLogUnreadable(t *testing.T) {
	l := &logStore{plan: func(int) (bool, bool, int) { return false, true, 0 }, readErr: errors.New("CLUSTERDOWN")}
	if rep := probeFake(t, l); rep.FinalCheck || rep.LostAcknowledged != 0 {
		t.Errorf("final check %v, lost %d: want no check and no count", rep.FinalCheck, rep.LostAcknowledged)
	}
}
