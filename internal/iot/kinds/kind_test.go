package kinds_test

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

func TestCommand(t *testing.T) {
	_, fnCfg := kindtest.Decode(t, "faas-function", "{handler: python/functions/hello, port: 9000}")
	env := kind.Env{Instance: "adaptor", Node: "iot", Binary: "/bin/continuum", OutDir: "/r/w/adaptor", Seed: 7,
		Duration: 60e9, Warmup: 10e9, Nodes: map[string]string{"edge": "10.0.0.2"},
		Components: map[string]kind.Component{"fn": kindtest.Component(t, "edge", "faas-function", fnCfg)}}
	k, cfg := kindtest.Decode(t, "iot", "{target: fn, path: /function/analytics, gateways: 10, devices: 10000, rate: 25, batch: 16000}")
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Flags equal to their defaults (invalid 0, timeout 1m, max-inflight 0, duration 1m) are left out.
	want := "/bin/continuum iot --target http://10.0.0.2:9000/function/analytics --gateways 10 --devices 10000 --rate 25 --batch 16000 " +
		"--warmup 10s --seed 7 --out /r/w/adaptor"
	if got := strings.Join(cmd.Args, " "); got != want {
		t.Errorf("args\n %s\nwant\n %s", got, want)
	}
}

func TestCommandMQTT(t *testing.T) {
	_, fnCfg := kindtest.Decode(t, "faas-microservice", "{handler: python/functions/hello, port: 9000}")
	_, brCfg := kindtest.Decode(t, "mosquitto", "{port: 1884}")
	env := kind.Env{Instance: "adaptor", Node: "iot", Binary: "/bin/continuum", OutDir: "/r/w/adaptor", Seed: 7,
		Duration: 60e9, Warmup: 10e9, Nodes: map[string]string{"edge": "10.0.0.2", "gw": "10.0.0.3"},
		Components: map[string]kind.Component{"fn": kindtest.Component(t, "edge", "faas-microservice", fnCfg),
			"mq": kindtest.Component(t, "gw", "mosquitto", brCfg)}}
	k, cfg := kindtest.Decode(t, "iot", "{target: fn, broker: mq, qos: 1, connections: 50}")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cmd.Args, " "); !strings.Contains(got, " --broker tcp://10.0.0.3:1884 --qos 1 --connections 50 ") {
		t.Errorf("args %s: want the broker component's address, qos and connections", got)
	}
	// A component that does not speak MQTT is no broker.
	k, cfg = kindtest.Decode(t, "iot", "{target: fn, broker: fn}")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "broker") {
		t.Errorf("a microservice as broker: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{"{}", "name exactly one of target"},
		{"{target: fn, url: 'http://x/'}", "name exactly one of target"},
		{"{target: fn, path: x}", `path "x": must start with /`},
		{"{target: fn, devices: 0}", "devices 0: want at least one per gateway"},
		{"{target: fn, rate: -1}", "rate -1"},
		{"{url: 'ftp://x'}", "want an http:// URL"},
		{"{target: fn, broker: mq, broker_url: 'tcp://x:1883'}", "at most one of broker"},
		{"{target: fn, broker_url: 'x:1883'}", "want tcp://host:port"},
		{"{target: fn, broker: mq, qos: 2}", "qos 2"},
		{"{target: fn, qos: 1}", "go with broker"},
	} {
		k, cfg := kindtest.Decode(t, "iot", c.cfg)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.cfg, err, c.want)
		}
	}
}
