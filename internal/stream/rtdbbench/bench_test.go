package rtdbbench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunSmall runs every phase at a small size: each write reaches each listener, the report
// renders with its goals.
func TestRunSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Listeners, cfg.Rate, cfg.Duration, cfg.Warmup = 20, 50, time.Second, 200*time.Millisecond
	cfg.ThroughputWriters, cfg.ThroughputDuration = 4, 500*time.Millisecond
	cfg.ReconnectBackoff = 100 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.SSE.Delivered != res.SSE.Expected || res.RawWatch.Delivered != res.RawWatch.Expected {
		t.Fatalf("deliveries: SSE %d/%d, raw %d/%d", res.SSE.Delivered, res.SSE.Expected, res.RawWatch.Delivered, res.RawWatch.Expected)
	}
	if !res.SSEWrites.ListenerOK || res.SSEWrites.Writes == 0 || res.Reconnected != cfg.Listeners {
		t.Fatalf("throughput %+v, reconnected %d", res.SSEWrites, res.Reconnected)
	}
	if md := Markdown(res); !strings.Contains(md, "realtime db SSE") || !strings.Contains(md, "Goals") {
		t.Fatalf("markdown:\n%s", md)
	}
}
