package kinds_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/iot/iotcmd"
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
		{"{target: fn, path: x}", `path (--target): "x": must start with /`},
		{"{target: fn, devices: 0}", "devices (--devices): 0: want at least one per gateway"},
		{"{target: fn, rate: -1}", "rate (--rate): -1: want"},
		{"{url: 'ftp://x'}", "want an http:// URL"},
		{"{target: fn, broker: mq, broker_url: 'tcp://x:1883'}", "at most one of broker"},
		{"{target: fn, broker_url: 'x:1883'}", "want tcp://host:port"},
		{"{target: fn, broker: mq, qos: 2}", "qos (--qos): 2: want 0"},
		{"{target: fn, qos: 1}", "qos (--qos): goes with broker"},
	} {
		k, cfg := kindtest.Decode(t, "iot", c.cfg)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestConfigReportsEveryError: every bad key is reported at once, at its key, with the
// `continuum iot` flag it becomes; a good config passes.
func TestConfigReportsEveryError(t *testing.T) {
	fs := pflag.NewFlagSet("iot", pflag.ContinueOnError)
	f := iotcmd.DefaultFlags()
	f.Bind(fs)
	k, cfg := kindtest.Decode(t, "iot", "{url: 'ftp://x', path: x, gateways: 0, rate: 0, invalid: 2, broker_url: 'x:1883', qos: 2}")
	err := k.Validate(cfg)
	var fes kind.FieldErrors
	keys := []string{"url", "path", "gateways", "rate", "invalid", "broker_url", "qos"}
	if !errors.As(err, &fes) || len(fes) != len(keys) {
		t.Fatalf("got %v, want %d field errors", err, len(keys))
	}
	for i, key := range keys {
		if fes[i].Key != key || !strings.HasPrefix(fes[i].Flag, "--") || fs.Lookup(fes[i].Flag[2:]) == nil {
			t.Errorf("error %d: %+v, want key %s with a flag of continuum iot", i, *fes[i], key)
		}
	}
	if k, cfg := kindtest.Decode(t, "iot", "{target: fn, broker: mq, qos: 1, topic: t}"); k.Validate(cfg) != nil {
		t.Errorf("good config: %v", k.Validate(cfg))
	}
}
