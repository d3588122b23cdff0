package kinds_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/stream/streamcmd"
)

// flagSet is the flags of the command a stream kind starts.
func flagSet(bind func(*pflag.FlagSet)) *pflag.FlagSet {
	fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	bind(fs)
	return fs
}

// TestKindsReportEveryError: each stream kind reports all its bad keys at once, each at its
// key with the flag it becomes ("" for a key that becomes none), a flag its command declares;
// good configs pass.
func TestKindsReportEveryError(t *testing.T) {
	rt, br, agg, users := streamcmd.DefaultFlags(), streamcmd.DefaultBridgeFlags(), streamcmd.DefaultAggregatorFlags(), streamcmd.DefaultUsersFlags()
	for _, c := range []struct {
		kind, bad, good string
		flags           *pflag.FlagSet
		keys            []string
	}{
		{"realtime-db", "{port: 0, jwt_keys: /k.json}", "{store: db}", flagSet(rt.Bind),
			[]string{"port", "store", "jwt_keys"}},
		{"stream-bridge", "{port: 70000, linger: -1ms, batch_max_bytes: 100, compression: brotli, acks: some}", "{brokers: [k], acks: leader, idempotent: false}",
			flagSet(br.Bind), []string{"port", "brokers", "linger", "batch_max_bytes", "compression", "acks"}},
		{"stream-aggregator", "{topics: [ok, 'a b'], ns: Demo, parallel: -1}", "{brokers: [k], topics: [a], rtdb: db}", flagSet(agg.Bind),
			[]string{"brokers", "topics[1]", "rtdb", "ns", "parallel"}},
		{"stream-users", "{architecture: 'a b', send: rtdb, path: x, users: 0, interval_sd: -1s, payload: 10}",
			"{architecture: cloud-only, send: rtdb, subscribe: rtdb}", flagSet(users.Bind),
			[]string{"architecture", "subscribe", "path", "users", "interval_sd", "payload"}},
	} {
		fes := kindtest.FieldErrors(t, c.kind, c.bad, len(c.keys))
		if fes == nil {
			continue
		}
		for i, key := range c.keys {
			f := fes[i].Flag
			if fes[i].Key != key || f != "" && (!strings.HasPrefix(f, "--") || c.flags.Lookup(f[2:]) == nil) {
				t.Errorf("%s error %d: %+v, want key %s and a flag of its command or none", c.kind, i, *fes[i], key)
			}
		}
		if k, cfg := kindtest.Decode(t, c.kind, c.good); k.Validate(cfg) != nil {
			t.Errorf("%s %s: %v", c.kind, c.good, k.Validate(cfg))
		}
	}
}
