package server

import (
	"strings"
	"testing"
	"time"
)

func TestPeerTimingsValidated(t *testing.T) {
	ic := map[string][]string{"a": {"http://127.0.0.1:1"}, "b": {"http://127.0.0.1:2"}}
	ms := func(n int) *time.Duration { d := time.Duration(n) * time.Millisecond; return &d }
	for name, tc := range map[string]struct {
		dial, backoff time.Duration
		linger        *time.Duration
		offset        *time.Duration
		want          string // "": valid
	}{
		"defaults":         {0, 0, nil, nil, ""},
		"slow link":        {3 * time.Second, time.Second, nil, nil, ""},
		"negative dial":    {-time.Second, 0, nil, nil, "--peer-dial-timeout"},
		"negative backoff": {0, -time.Second, nil, nil, "--peer-max-backoff"},
		"no linger":        {0, 0, ms(0), nil, ""},
		"linger":           {0, 0, ms(10), nil, ""},
		"negative linger":  {0, 0, ms(-1), nil, "--peer-batch-linger"},
		"linger too long":  {0, 0, ms(1000), nil, "--peer-batch-linger"},
		"no clock check":   {0, 0, nil, ms(0), ""},
		"clock offset":     {0, 0, nil, ms(250), ""},
		"negative offset":  {0, 0, nil, ms(-1), "--max-clock-offset"},
	} {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Name, cfg.InitialCluster, cfg.ListenPeerURLs = "a", ic, []string{"http://127.0.0.1:0"}
		cfg.PeerDialTimeout, cfg.PeerMaxBackoff, cfg.PeerBatchLinger = tc.dial, tc.backoff, tc.linger
		cfg.MaxClockOffset = tc.offset
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}
