package rtdbbench

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
)

// TestProfileSSE runs the SSE latency phase alone at a size worth profiling, when
// RTDBBENCH_PROFILE is set: go test -run TestProfileSSE -cpuprofile cpu.prof.
func TestProfileSSE(t *testing.T) {
	if os.Getenv("RTDBBENCH_PROFILE") == "" {
		t.Skip("set RTDBBENCH_PROFILE=1 to profile")
	}
	cfg := DefaultConfig()
	cfg.Listeners, cfg.Rate, cfg.Duration, cfg.Warmup = 1000, 100, 5*time.Second, time.Second
	rs, err := startRTDB(kvtest.URL(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.stop()
	tr := &http.Transport{MaxIdleConnsPerHost: 4 * cfg.Listeners}
	defer tr.CloseIdleConnections()
	l, err := sseLatency(context.Background(), cfg, &http.Client{Transport: tr}, "http://"+rs.addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", l)
}
