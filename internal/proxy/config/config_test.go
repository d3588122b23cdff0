package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const instancesYAML = "instances:\n  - {id: s1, service: dps, url: 'http://127.0.0.1:9'}\n"

func TestProxyLoadConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "instances.yaml", instancesYAML)
	path := writeFile(t, dir, "proxy.yaml", `node: worker3
listen: ":18080"
max_inflight: 100
discovery:
  - file: instances.yaml
defaults:
  strategy: qos
  timeout: 3s
  qos: {latency: 80ms, pool_min_share: 0.5}
services:
  dps:
    balance: least-outstanding
    qos: {percentile: 99, require: ["accuracy >= 0.95", "tier in [edge, fog]"]}
  near:
    strategy: proximity
    alpha: 0.8
`)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node != "worker3" || cfg.Listen != ":18080" || cfg.AdminListen != DefaultAdminListen || len(cfg.Sources) != 1 || cfg.MaxInflight != 100 {
		t.Fatalf("top level: %+v", cfg)
	}
	if got := cfg.Sources[0].Name(); got != "file:"+filepath.Join(dir, "instances.yaml") {
		t.Errorf("file source %q: want the path relative to the config's directory", got)
	}
	dps := cfg.Services["dps"]
	// Built-in default < defaults < service.
	if dps.Strategy != StrategyQoS || dps.Timeout.Duration != 3*time.Second || dps.QoS.Latency.Duration != 80*time.Millisecond ||
		dps.QoS.PoolMinShare != 0.5 || dps.QoS.Percentile != 99 || dps.Balance != BalanceLeastOutstanding ||
		dps.Retries != 2 || len(dps.QoS.Require) != 2 {
		t.Errorf("dps: %+v", dps)
	}
	near := cfg.Services["near"]
	if near.Strategy != StrategyProximity || near.Alpha != 0.8 || near.QoS.Percentile != 95 || near.Timeout.Duration != 3*time.Second {
		t.Errorf("near: %+v", near)
	}
	// A service only discovery knows gets the defaults.
	if other := cfg.Service("other"); other.Timeout.Duration != 3*time.Second || other.QoS.PoolMinShare != 0.5 {
		t.Errorf("unlisted service: %+v", other)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestProxyLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "instances.yaml", instancesYAML)
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top-level key", "discovery: [{file: instances.yaml}]\nlisten_addr: x\n",
			[]string{"proxy.yaml:2:", `unknown field "listen_addr"`}},
		{"no discovery", "node: a\n", []string{"discovery: at least one source", "file"}},
		{"unknown source kind", "discovery:\n  - consul: {}\n", []string{"proxy.yaml:2:", `unknown source kind "consul"`, "allowed:"}},
		{"two keys in one entry", "discovery:\n  - {file: a, kv: b}\n", []string{"proxy.yaml:2:", "one key"}},
		{"missing instances file", "discovery:\n  - file: nope.yaml\n", []string{"proxy.yaml:2:", "nope.yaml"}},
		{"bad strategy", "discovery: [{file: instances.yaml}]\nservices:\n  dps:\n    strategy: fastest\n",
			[]string{"proxy.yaml:4:", "services.dps.strategy", `"fastest": want one of qos, round-robin, random, proximity`}},
		{"bad alpha in defaults", "discovery: [{file: instances.yaml}]\ndefaults:\n  alpha: 2\n",
			[]string{"proxy.yaml:3:", "defaults.alpha", "between 0 and 1"}},
		{"bad requirement", "discovery: [{file: instances.yaml}]\nservices:\n  dps:\n    qos:\n      require: [\"a >= 1\", \"accuracy >> 1\"]\n",
			[]string{"proxy.yaml:5:", "services.dps.qos.require[1]", `unknown operator ">>"`}},
		{"bad duration", "discovery: [{file: instances.yaml}]\nservices:\n  dps: {timeout: 5}\n",
			[]string{"proxy.yaml:3:", "timeout"}},
		{"unknown service key", "discovery: [{file: instances.yaml}]\nservices:\n  dps: {stratgy: qos}\n",
			[]string{"proxy.yaml:3:", `unknown field "stratgy"`, `did you mean "strategy"`}},
		{"bad service name", "discovery: [{file: instances.yaml}]\nservices:\n  'a b': {}\n",
			[]string{"proxy.yaml:3:", "not a service name"}},
		{"negative max_inflight", "discovery: [{file: instances.yaml}]\nmax_inflight: -1\n", []string{"proxy.yaml:2:", "max_inflight -1"}},
		{"several problems", "discovery: [{file: instances.yaml}]\nservices:\n  a: {retries: -1}\n  b: {balance: fair}\n",
			[]string{"proxy.yaml:3:", "proxy.yaml:4:", "retries", "balance"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, "proxy.yaml", tt.yaml)
			_, err := LoadConfig(path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestProxyValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Listen = "8080"
	cfg.Defaults.QoS.Percentile = 0
	cfg.Services = map[string]ServiceConfig{"Dps": DefaultServiceConfig(), "dps": DefaultServiceConfig()}
	err := cfg.Validate()
	for _, want := range []string{`listen: "8080": want host:port`, "defaults.qos.percentile", "names are case-insensitive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
	if err := DefaultServiceConfig().Validate(); err != nil {
		t.Errorf("default service config: %v", err)
	}
}
