package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeBin creates an executable file standing in for a server binary.
func fakeBin(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEtcdKindCommand(t *testing.T) {
	bin := fakeBin(t, "etcd")
	k, cfg := decodeKindConfig(t, "etcd", "bin: "+bin+"\nquota_backend_bytes: 1Gi\n")
	if k.Role != RoleComponent || k.Validate(cfg) != nil {
		t.Fatalf("role %s validate %v", k.Role, k.Validate(cfg))
	}
	env := Env{Instance: "etcd1", Node: "edge", Nodes: map[string]string{"edge": "10.0.0.2"}, OutDir: "/r/components/etcd1"}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{bin, "--name", "etcd1", "--data-dir", "/r/components/etcd1/data",
		"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://10.0.0.2:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "etcd1=http://127.0.0.1:2380", "--log-level", "warn", "--quota-backend-bytes", "1073741824"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	if cmd.ReadyAddr != "127.0.0.1:2379" || !slices.Equal(cmd.DataDirs, []string{"/r/components/etcd1/data"}) {
		t.Errorf("ready %q data dirs %q", cmd.ReadyAddr, cmd.DataDirs)
	}
	t.Setenv("CONTINUUM_ETCD_BIN", "/nonexistent/etcd")
	_, cfg2 := decodeKindConfig(t, "etcd", "{}")
	if _, err := k.Command(env, cfg2); err == nil {
		t.Error("a missing etcd binary was accepted")
	}
}

func TestRedisKindCommand(t *testing.T) {
	bin := fakeBin(t, "redis-server")
	k, cfg := decodeKindConfig(t, "redis", "bin: "+bin+"\nappendfsync: always\ndata_dir: /var/lib/r\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(Env{Instance: "r", Node: "edge", OutDir: "/r/c/r"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(cmd.Args, " ")
	for _, want := range []string{"mkdir -p", bin + " --bind 0.0.0.0 --port 6379 --dir /var/lib/r --appendonly yes --appendfsync always"} {
		if !strings.Contains(line, want) {
			t.Errorf("command %q lacks %q", line, want)
		}
	}
	if cmd.ReadyAddr != "127.0.0.1:6379" || cmd.DataDirs[0] != "/var/lib/r" {
		t.Errorf("ready %q data %q", cmd.ReadyAddr, cmd.DataDirs)
	}
}

func TestKVKindCommand(t *testing.T) {
	k, cfg := decodeKindConfig(t, "kv", "client_port: 12379\nfsync: always\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(Env{Binary: "/bin/continuum", Instance: "kv1", Node: "edge", Nodes: map[string]string{"edge": "10.0.0.2"}, OutDir: "/o"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "kv", "--name", "kv1", "--data-dir", "/o/data",
		"--listen-client-urls", "http://0.0.0.0:12379", "--advertise-client-urls", "http://10.0.0.2:12379", "--fsync", "always"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:12379" {
		t.Errorf("args %q ready %q", cmd.Args, cmd.ReadyAddr)
	}
}

func TestClusterKindCommands(t *testing.T) {
	for _, kind := range []string{"kv", "etcd"} {
		t.Run(kind, func(t *testing.T) {
			env := Env{Binary: "/bin/continuum", Node: "n2", OutDir: "/o",
				Nodes:            map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"},
				Components:       map[string]string{"m1": "n1", "m2": "n2", "m3": "n3", "other": "n3"},
				ComponentConfigs: map[string]any{}}
			var k *Kind
			for _, m := range []string{"m1", "m2", "m3"} {
				var cfg any
				k, cfg = decodeKindConfig(t, kind, "cluster: c1\nclient_port: 2379\npeer_port: 2380\n")
				if err := k.Validate(cfg); err != nil {
					t.Fatal(err)
				}
				env.ComponentConfigs[m] = cfg
			}
			_, other := decodeKindConfig(t, kind, "cluster: c2\n")
			env.ComponentConfigs["other"] = other
			env.Instance = "m2"
			cmd, err := k.Command(env, env.ComponentConfigs["m2"])
			if err != nil {
				t.Fatal(err)
			}
			line := strings.Join(cmd.Args, " ")
			for _, want := range []string{
				"--initial-cluster m1=http://10.0.0.1:2380,m2=http://10.0.0.2:2380,m3=http://10.0.0.3:2380",
				"--initial-advertise-peer-urls http://10.0.0.2:2380", "--listen-peer-urls http://0.0.0.0:2380",
				"--initial-cluster-token c1",
			} {
				if !strings.Contains(line, want) {
					t.Errorf("command %q lacks %q", line, want)
				}
			}
		})
	}
	k, cfg := decodeKindConfig(t, "kv", "cluster: c1\npeer_batch_linger: 0s\n")
	env := Env{Binary: "/bin/continuum", Instance: "m1", Components: map[string]string{"m1": "n1"}, ComponentConfigs: map[string]any{"m1": cfg}}
	if cmd, err := k.Command(env, cfg); err != nil || !strings.Contains(strings.Join(cmd.Args, " "), "--peer-batch-linger 0s") {
		t.Errorf("peer_batch_linger 0s: %v %v", cmd.Args, err)
	}
	k, cfg = decodeKindConfig(t, "kv", "cluster: c1\npeers: [m9]\n")
	env = Env{Instance: "m1", Components: map[string]string{"m1": "n1"}, ComponentConfigs: map[string]any{"m1": cfg}}
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), `peers names "m9"`) {
		t.Errorf("unknown peer: %v", err)
	}
}

func TestKVComponentConfigValidation(t *testing.T) {
	for _, c := range []struct{ kind, yaml, want string }{
		{"etcd", "client_port: 0", "client_port"},
		{"etcd", "client_port: 2380", "peer_port are both"},
		{"etcd", "data_dir: relative/dir", "absolute"},
		{"redis", "appendfsync: no", "appendfsync"},
		{"redis", "port: 70000", "port"},
		{"kv", "fsync: sometimes", "fsync"},
		{"kv", "peers: [a]", "peers needs cluster"},
		{"kv", "peer_port: 2379", "peer_port are both"},
		{"kv", "peer_batch_linger: 3ms", "peer_batch_linger needs cluster"},
		{"kv", "cluster: c\npeer_batch_linger: 1s", "below 1s"},
		{"kv", "cluster: c\npeer_batch_linger: -1ms", "below 1s"},
	} {
		k, cfg := decodeKindConfig(t, c.kind, c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want an error about %s", c.kind, c.yaml, err, c.want)
		}
	}
}

func TestYCSBKindValidation(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"rate: 100", "exactly one of target"},
		{"target: etcd=http://a:1\ncomponent: e\nrate: 100", "exactly one of target"},
		{"target: etcd=a:1\nrate: 100", "http://"},
		{"component: e", "exactly one of rate"},
		{"component: e\nrate: 10\nclients: 2", "exactly one of rate"},
		{"component: e\nrate: 10\nworkload: g", "workload"},
		{"component: e\nrate: 10\nrecordcount: 0", "recordcount"},
		{"component: e\nrate: 10\nrequestdistribution: hotspot", "requestdistribution"},
		{"component: e\nrate: 10\nphase: warm", "phase"},
		{"target: redis=a:1\nport: 2\nrate: 10", "port goes with component"},
		{"component: e\nrate: 10\ntimeout: 2m", "timeout"},
	} {
		k, cfg := decodeKindConfig(t, "ycsb", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error about %s", c.yaml, err, c.want)
		}
	}
}

func TestYCSBKindCommand(t *testing.T) {
	_, kvCfg := decodeKindConfig(t, "kv", "client_port: 2379")
	_, etcdCfg := decodeKindConfig(t, "etcd", "client_port: 12379\npeer_port: 12380")
	_, redisCfg := decodeKindConfig(t, "redis", "{}")
	_, echoCfg := decodeKindConfig(t, "http-echo", "{}")
	env := Env{Binary: "/bin/continuum", Instance: "y", Node: "device", OutDir: "/res/workloads/y", Seed: 9,
		Duration: 30 * time.Second, Warmup: 5 * time.Second,
		Components:       map[string]string{"kv": "edge", "etcd": "cloud", "redis": "edge", "echo": "edge"},
		ComponentConfigs: map[string]any{"kv": kvCfg, "etcd": etcdCfg, "redis": redisCfg, "echo": echoCfg}}
	for _, c := range []struct{ component, target string }{
		{"kv", "kv=http://edge:2379"}, {"etcd", "etcd=http://cloud:12379"}, {"redis", "redis=edge:6379"},
	} {
		k, cfg := decodeKindConfig(t, "ycsb", "component: "+c.component+"\nworkload: b\nrecordcount: 500\nfieldcount: 1\nfieldlength: 32\nrate: 250")
		if err := k.Validate(cfg); err != nil {
			t.Fatal(err)
		}
		cmd, err := k.Command(env, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"/bin/continuum", "load", "ycsb", "--target", c.target, "--workload", "b", "--phase", "both",
			"--recordcount", "500", "--fieldcount", "1", "--fieldlength", "32", "--rate", "250", "--timeout", "1s",
			"--duration", "30s", "--warmup", "5s", "--out", "/res/workloads/y", "--seed", "9"}
		if !slices.Equal(cmd.Args, want) {
			t.Errorf("%s:\n%q\nwant\n%q", c.component, cmd.Args, want)
		}
	}
	k, cfg := decodeKindConfig(t, "ycsb", "component: echo\nclients: 4")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "not an etcd, kv or redis") {
		t.Errorf("echo component: %v", err)
	}
	k, cfg = decodeKindConfig(t, "ycsb", "component: nope\nclients: 4")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "components: echo, etcd, kv, redis") {
		t.Errorf("unknown component: %v", err)
	}
	k, cfg = decodeKindConfig(t, "ycsb", "target: redis=10.0.0.5:6379\nclients: 4\noperationcount: 1000")
	cmd, err := k.Command(env, cfg)
	if err != nil || !slices.Contains(cmd.Args, "redis=10.0.0.5:6379") || !slices.Contains(cmd.Args, "--operationcount") {
		t.Errorf("url target: %q %v", cmd.Args, err)
	}
}

// Every shipped kv scenario loads: kinds, configs, topology and events (sweep values are only
// checked to decode; a kind rejects a bad one when its run starts).
func TestKVScenariosAllLoad(t *testing.T) {
	t.Setenv("CONTINUUM_ETCD_BIN", "")
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "kv", "*.yaml"))
	if err != nil || len(files) < 6 {
		t.Fatalf("scenarios/kv: %d files, %v", len(files), err)
	}
	for _, f := range files {
		if _, err := LoadScenario(f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The shipped scenario loads (kinds, configs, topology and events validate).
func TestKVScenarioLoads(t *testing.T) {
	t.Setenv("CONTINUUM_ETCD_BIN", "")
	s, err := LoadScenario(filepath.Join("..", "..", "scenarios", "kv", "ycsb-a.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, c := range append(s.Components, s.Workloads...) {
		kinds[c.Kind] = true
	}
	for _, k := range []string{"kv", "etcd", "redis", "ycsb"} {
		if !kinds[k] {
			t.Errorf("scenario lacks kind %s", k)
		}
	}
	if len(s.Workloads) != 3 {
		t.Errorf("%d workloads, want 3", len(s.Workloads))
	}
	if c := s.Workloads[1].DecodedConfig.(*YCSBConfig); c.Component != "etcd" || c.RecordCount != 5000 || c.Rate != 300 {
		t.Errorf("merged ycsb config: %+v", c)
	}
}

func TestKVLagKind(t *testing.T) {
	k, cfg := decodeKindConfig(t, "kv-lag", "writer: m1\nreader: m2\nrate: 50\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, m := decodeKindConfig(t, "kv", "client_port: 2379\n")
	env := Env{Binary: "/bin/continuum", OutDir: "/o", Duration: 20 * time.Second,
		Components: map[string]string{"m1": "n1", "m2": "n2"}, ComponentConfigs: map[string]any{"m1": m, "m2": m}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(cmd.Args, " ")
	if want := "load kv-lag --writer http://n1:2379 --reader http://n2:2379 --rate 50 --timeout 30s"; !strings.Contains(line, want) {
		t.Errorf("command %q lacks %q", line, want)
	}
	for _, c := range []struct{ yaml, want string }{
		{"writer: a\nreader: a\n", "both"},
		{"writer: a\n", "required"},
		{"writer: a\nreader: b\nrate: 0\n", "rate"},
	} {
		k, cfg := decodeKindConfig(t, "kv-lag", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error about %s", c.yaml, err, c.want)
		}
	}
}
