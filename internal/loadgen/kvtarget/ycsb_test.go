package kvtarget

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

// RunYCSB waits for a target that is not up yet, within its deadline.
func TestRunYCSBTargetDown(t *testing.T) {
	cfg := YCSBConfig{Target: Target{Kind: KindRedis, Endpoints: []string{"127.0.0.1:1"}},
		YCSB: ycsb.DefaultConfig(), ReadyTimeout: 300 * time.Millisecond}
	cfg.YCSB.Log = io.Discard
	start := time.Now()
	_, err := RunYCSB(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "not answering") || time.Since(start) > 5*time.Second {
		t.Errorf("%v after %v", err, time.Since(start))
	}
}
