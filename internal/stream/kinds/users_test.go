package kinds_test

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

func usersEnv(t *testing.T) kind.Env {
	_, rt := kindtest.Decode(t, "realtime-db", "{port: 9000, store: kvc}")
	_, kv := kindtest.Decode(t, "kv", "{client_port: 2379}")
	_, br := kindtest.Decode(t, "stream-bridge", "{port: 8090, brokers: [kafka]}")
	_, kf := kindtest.Decode(t, "kafka", "{port: 9092}")
	return kind.Env{Instance: "users", Node: "tester", Binary: "/bin/continuum", OutDir: "/r/w/users", Seed: 3,
		Duration: 70e9, Warmup: 5e9, Nodes: map[string]string{"edge": "10.0.0.2", "cloud": "10.0.0.3"},
		Components: map[string]kind.Component{"rtdb": kindtest.Component(t, "cloud", "realtime-db", rt),
			"kvc": kindtest.Component(t, "cloud", "kv", kv), "bridge": kindtest.Component(t, "edge", "stream-bridge", br),
			"kafka": kindtest.Component(t, "edge", "kafka", kf)}}
}

// TestUsersKindCommands renders each architecture's command line: the route's kinds decide
// the protocols (a realtime-db is PUT to and listened to, a bridge POSTed to, a kafka consumed).
func TestUsersKindCommands(t *testing.T) {
	env := usersEnv(t)
	for _, c := range []struct{ cfg, want string }{
		{"{architecture: cloud-only, send: rtdb, subscribe: rtdb, users: 300, requests: 60, payload: 10KiB}",
			"/bin/continuum stream users --send-url http://10.0.0.3:9000 --subscribe-url http://10.0.0.3:9000 --users 300 --requests 60 --payload 10240 " +
				"--duration 1m10s --warmup 5s --seed 3 --out /r/w/users"},
		{"{architecture: edge-only, send: bridge, subscribe: kafka, topic: recs}",
			"/bin/continuum stream users --send bridge --send-url http://10.0.0.2:8090 --send-token-file /r/components/bridge/secrets/token --subscribe kafka --brokers 10.0.0.2:9092 --topic recs " +
				"--duration 1m10s --warmup 5s --seed 3 --out /r/w/users"},
		{"{architecture: edge-cloud, routes: {edge-cloud: {send: bridge, subscribe: rtdb}, cloud-only: {send: rtdb, subscribe: rtdb}}, verify: true, grace: 2m}",
			"/bin/continuum stream users --send bridge --send-url http://10.0.0.2:8090 --send-token-file /r/components/bridge/secrets/token --subscribe-url http://10.0.0.3:9000 --grace 2m0s --verify=true " +
				"--duration 1m10s --warmup 5s --seed 3 --out /r/w/users"},
	} {
		k, cfg := kindtest.Decode(t, "stream-users", c.cfg)
		if err := k.Validate(cfg); err != nil {
			t.Fatalf("%s: %v", c.cfg, err)
		}
		cmd, err := k.Command(env, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.cfg, err)
		}
		if got := strings.Join(cmd.Args, " "); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.cfg, got, c.want)
		}
	}
}

func TestUsersKindErrors(t *testing.T) {
	env := usersEnv(t)
	for _, c := range []struct{ cfg, want string }{
		{"{send: rtdb, subscribe: rtdb}", `architecture: "": required`},
		{"{architecture: cloud-only, send: rtdb}", "subscribe (--subscribe-url): required with send"},
		{"{architecture: x, routes: {cloud-only: {send: rtdb, subscribe: rtdb}}}", `architecture: "x": no such route (routes: cloud-only)`},
		{"{architecture: cloud-only, send: rtdb, subscribe: rtdb, payload: 10}", "payload (--payload): 10 bytes: must be between 160"},
		{"{architecture: cloud-only, send: rtdb, subscribe: rtdb, users: 0}", "users (--users): 0: must be between 1 and 100000"},
	} {
		k, cfg := kindtest.Decode(t, "stream-users", c.cfg)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cfg, err, c.want)
		}
	}
	for _, c := range []struct{ cfg, want string }{
		{"{architecture: a, send: kafka, subscribe: rtdb}", `send: component "kafka" is a kafka; users send to a realtime-db or a stream-bridge`},
		{"{architecture: a, send: rtdb, subscribe: bridge}", `subscribe: component "bridge" is a stream-bridge`},
		{"{architecture: a, send: nope, subscribe: rtdb}", `unknown component "nope"`},
		{"{architecture: a, send: rtdb, subscribe: kafka, verify: true}", "verify: only with subscribe sse"},
	} {
		k, cfg := kindtest.Decode(t, "stream-users", c.cfg)
		if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cfg, err, c.want)
		}
	}
}
