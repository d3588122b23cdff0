package replication

import (
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

func TestConfigValidate(t *testing.T) {
	store := &mvcc.Store{} // only its presence is checked
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string // "": valid
	}{
		"defaults":          {func(*Config) {}, ""},
		"no store":          {func(c *Config) { c.Store = nil }, "Store is required"},
		"no heartbeat":      {func(c *Config) { c.Heartbeat = 0 }, "Heartbeat"},
		"no dial timeout":   {func(c *Config) { c.DialTimeout = 0 }, "DialTimeout"},
		"negative dial":     {func(c *Config) { c.DialTimeout = -time.Second }, "DialTimeout"},
		"no max backoff":    {func(c *Config) { c.MaxBackoff = 0 }, "MaxBackoff"},
		"slow link":         {func(c *Config) { c.DialTimeout, c.MaxBackoff = 3*time.Second, 2*time.Second }, ""},
		"no batch size":     {func(c *Config) { c.MaxBatchChanges = 0 }, "MaxBatchChanges"},
		"no linger":         {func(c *Config) { c.Linger = 0 }, ""},
		"negative linger":   {func(c *Config) { c.Linger = -time.Millisecond }, "Linger"},
		"linger past beat":  {func(c *Config) { c.Linger = c.Heartbeat }, "Linger"},
		"unix peer":         {func(c *Config) { c.Peers = []string{"unix:///tmp/peer.sock"} }, "want http://host:port or https://host:port"},
		"peer without host": {func(c *Config) { c.Peers = []string{"10.0.0.1:2380"} }, "want http://host:port"},
	} {
		c := DefaultConfig(store)
		tc.mod(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
	if d := DefaultConfig(store); d.DialTimeout+d.MaxBackoff >= time.Second {
		t.Errorf("default redial cycle %v + %v: want well under 1s", d.DialTimeout, d.MaxBackoff)
	}
}
