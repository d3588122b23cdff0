package kvtarget

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

// RunYCSB says at once that nothing listens at the target's address, and waits for a target
// that listens but does not answer yet only within its deadline.
func TestRunYCSBTargetDown(t *testing.T) {
	mute, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	for _, tt := range []struct {
		target Target
		want   string
	}{
		{Target{Kind: KindRedis, Endpoints: []string{"127.0.0.1:1"}}, "nothing listens at 127.0.0.1:1 (connection refused)"},
		{Target{Kind: KindEtcd, Endpoints: []string{"http://127.0.0.1:1"}}, "nothing listens at http://127.0.0.1:1 (connection refused)"},
		{Target{Kind: KindRedis, Endpoints: []string{mute.Addr().String()}}, "not answering after 300ms"},
	} {
		cfg := YCSBConfig{Target: tt.target, YCSB: ycsb.DefaultConfig(), ReadyTimeout: 300 * time.Millisecond}
		cfg.YCSB.Log = io.Discard
		start := time.Now()
		_, err := RunYCSB(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || time.Since(start) > 10*time.Second {
			t.Errorf("%s: %v after %v; want %q", tt.target, err, time.Since(start), tt.want)
		}
	}
}
