package scenario_test

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	_ "github.com/continuum-project/continuum/internal/systems/install"
)

func TestCommand(t *testing.T) {
	_, fnCfg := kindtest.Decode(t, "function", "{handler: python/functions/hello, port: 9000}")
	env := kind.Env{Instance: "adaptor", Node: "iot", Binary: "/bin/continuum", OutDir: "/r/w/adaptor", Seed: 7,
		Duration: 60e9, Warmup: 10e9, Nodes: map[string]string{"edge": "10.0.0.2"},
		Components: map[string]kind.Component{"fn": kindtest.Component(t, "edge", "function", fnCfg)}}
	k, cfg := kindtest.Decode(t, "iot", "{target: fn, path: /function/analytics, gateways: 10, devices: 10000, rate: 25, batch: 16000}")
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "/bin/continuum iot --target http://10.0.0.2:9000/function/analytics --gateways 10 --devices 10000 --rate 25 --batch 16000 " +
		"--invalid 0 --timeout 1m0s --max-inflight 0 --seed 7 --duration 1m0s --warmup 10s --out /r/w/adaptor"
	if got := strings.Join(cmd.Args, " "); got != want {
		t.Errorf("args\n %s\nwant\n %s", got, want)
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
	} {
		k, cfg := kindtest.Decode(t, "iot", c.cfg)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.cfg, err, c.want)
		}
	}
}
