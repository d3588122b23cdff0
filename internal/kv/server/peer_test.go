package server

import (
	"strings"
	"testing"
	"time"
)

func TestPeerTimingsValidated(t *testing.T) {
	ic := map[string][]string{"a": {"http://127.0.0.1:1"}, "b": {"http://127.0.0.1:2"}}
	for name, tc := range map[string]struct {
		dial, backoff time.Duration
		want          string // "": valid
	}{
		"defaults":         {0, 0, ""},
		"slow link":        {3 * time.Second, time.Second, ""},
		"negative dial":    {-time.Second, 0, "--peer-dial-timeout"},
		"negative backoff": {0, -time.Second, "--peer-max-backoff"},
	} {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Name, cfg.InitialCluster, cfg.ListenPeerURLs = "a", ic, []string{"http://127.0.0.1:0"}
		cfg.PeerDialTimeout, cfg.PeerMaxBackoff = tc.dial, tc.backoff
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}
