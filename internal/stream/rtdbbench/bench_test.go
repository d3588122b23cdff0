package rtdbbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
)

// TestRunSmall runs every phase at a small size: each write reaches each listener, the report
// renders with its goals.
func TestRunSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Listeners, cfg.Rate, cfg.Duration, cfg.Warmup, cfg.Repeats = 20, 50, time.Second, 200*time.Millisecond, 2
	cfg.ThroughputWriters, cfg.ThroughputDuration = 4, 500*time.Millisecond
	cfg.ReconnectBackoff = 100 * time.Millisecond
	cfg.KVURL = kvtest.URL(t)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSE) != cfg.Repeats || len(res.RawWatch) != cfg.Repeats {
		t.Fatalf("repeats: %d SSE, %d raw, want %d", len(res.SSE), len(res.RawWatch), cfg.Repeats)
	}
	for i := range res.SSE {
		if s, r := res.SSE[i], res.RawWatch[i]; s.Delivered != s.Expected || r.Delivered != r.Expected {
			t.Fatalf("repeat %d deliveries: SSE %d/%d, raw %d/%d", i, s.Delivered, s.Expected, r.Delivered, r.Expected)
		}
	}
	if !res.SSEWrites.ListenerOK || res.SSEWrites.Writes == 0 || res.Reconnected != cfg.Listeners {
		t.Fatalf("throughput %+v, reconnected %d", res.SSEWrites, res.Reconnected)
	}
	if md := Markdown(res); !strings.Contains(md, "realtime db SSE") || !strings.Contains(md, "Goals") {
		t.Fatalf("markdown:\n%s", md)
	}
}
