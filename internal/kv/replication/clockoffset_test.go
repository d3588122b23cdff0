package replication

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/testenv"
)

// A member whose clock runs behind sees its peer's batches stamped 2 s ahead: the alarm counts
// them, logs once, and exports the offset; the peer, whose clock is right, sees the member
// behind and raises nothing. Replication goes on either way.
func TestClockOffsetAlarm(t *testing.T) {
	a, b := listenMember(t, "a"), listenMember(t, "b")
	var logs testenv.SyncBuffer
	startMember(t, a, []string{b.url}, 2, nil)
	startMember(t, b, []string{a.url}, 2, func(c *Config) {
		c.Now = func() time.Time { return time.Now().Add(-2 * time.Second) } // b's clock is 2 s slow
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	// A change from each side, so each measures the other's clock from a timestamp it made:
	// a learns b's clock only from what b sends it, and b might otherwise have sent nothing
	// yet when a is asked (1 in ~20 fresh runs).
	putKV(t, a.store, "k", "v")
	putKV(t, b.store, "k2", "v2")
	waitConverged(t, map[string]*member{"a": a, "b": b}, 30*time.Second)
	testenv.Eventually(t, 30*time.Second, "b to count a's clock as ahead", func() bool { return b.repl.Peers()[0].OffsetExceeded > 0 })
	testenv.Eventually(t, 30*time.Second, "a to see b's clock behind", func() bool { return a.repl.Peers()[0].ClockAhead < -time.Second })
	if ahead := b.repl.Peers()[0].ClockAhead; ahead < 1500*time.Millisecond || ahead > 2*time.Second {
		t.Errorf("b measures a's clock %v ahead, want about 2s (less the network delay)", ahead)
	}
	if p := a.repl.Peers()[0]; p.OffsetExceeded != 0 || p.ClockAhead > -time.Second {
		t.Errorf("a, whose clock is right, sees b %v ahead with %d alarms; want b behind and none", p.ClockAhead, p.OffsetExceeded)
	}
	if n := strings.Count(logs.String(), "max clock offset"); n != 1 {
		t.Errorf("%d alarm log lines, want 1 per minute:\n%s", n, logs.String())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(b.repl.Collector())
	if n, err := testutil.GatherAndCount(reg, "continuum_kv_replication_peer_clock_offset_exceeded_total", "continuum_kv_replication_peer_clock_ahead_seconds"); err != nil || n != 2 {
		t.Errorf("clock metrics: %d series, %v", n, err)
	}
}

func TestMaxClockOffsetValidated(t *testing.T) {
	cfg := DefaultConfig(new(mvcc.Store)) // Validate only checks that there is one
	if cfg.MaxClockOffset != DefaultMaxClockOffset || cfg.Validate() != nil {
		t.Fatalf("default max clock offset %v: %v", cfg.MaxClockOffset, cfg.Validate())
	}
	cfg.MaxClockOffset = -time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "MaxClockOffset") {
		t.Errorf("negative MaxClockOffset: %v", err)
	}
}
