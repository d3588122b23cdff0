package kinds_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
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
	k, cfg := kindtest.Decode(t, "etcd", "bin: "+bin+"\nquota_backend_bytes: 1Gi\n")
	if k.Role != kind.RoleComponent || k.Validate(cfg) != nil {
		t.Fatalf("role %s validate %v", k.Role, k.Validate(cfg))
	}
	env := kind.Env{Instance: "etcd1", Node: "edge", Nodes: map[string]string{"edge": "10.0.0.2"}, OutDir: "/r/components/etcd1"}
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
	_, cfg2 := kindtest.Decode(t, "etcd", "{}")
	if _, err := k.Command(env, cfg2); err == nil {
		t.Error("a missing etcd binary was accepted")
	}
}

func TestRedisKindCommand(t *testing.T) {
	bin := fakeBin(t, "redis-server")
	k, cfg := kindtest.Decode(t, "redis", "bin: "+bin+"\nappendfsync: always\ndata_dir: /var/lib/r\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(kind.Env{Instance: "r", Node: "edge", OutDir: "/r/c/r"}, cfg)
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

func TestClusterKindCommands(t *testing.T) {
	kindtest.CheckEtcdClusterCommand(t, "etcd")
}

// kv's rows: internal/kv/kinds TestKVKindConfigValidation.
func TestKVComponentConfigValidation(t *testing.T) {
	for _, c := range []struct{ kind, yaml, want string }{
		{"etcd", "client_port: 0", "client_port"},
		{"etcd", "client_port: 2380", "peer_port are both"},
		{"etcd", "data_dir: relative/dir", "absolute"},
		{"redis", "appendfsync: no", "appendfsync"},
		{"redis", "port: 70000", "port"},
	} {
		k, cfg := kindtest.Decode(t, c.kind, c.yaml)
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
		k, cfg := kindtest.Decode(t, "ycsb", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error about %s", c.yaml, err, c.want)
		}
	}
}

func TestYCSBKindCommand(t *testing.T) {
	_, kvCfg := kindtest.Decode(t, "kv", "client_port: 2379")
	_, etcdCfg := kindtest.Decode(t, "etcd", "client_port: 12379\npeer_port: 12380")
	_, redisCfg := kindtest.Decode(t, "redis", "{}")
	_, echoCfg := kindtest.Decode(t, "http-echo", "{}")
	env := kind.Env{Binary: "/bin/continuum", Instance: "y", Node: "device", OutDir: "/res/workloads/y", Seed: 9,
		Duration: 30 * time.Second, Warmup: 5 * time.Second,
		Components: map[string]kind.Component{"kv": kindtest.Component(t, "edge", "kv", kvCfg),
			"etcd": kindtest.Component(t, "cloud", "etcd", etcdCfg), "redis": kindtest.Component(t, "edge", "redis", redisCfg),
			"echo": kindtest.Component(t, "edge", "http-echo", echoCfg)}}
	for _, c := range []struct{ component, target string }{
		{"kv", "etcd=http://edge:2379"}, {"etcd", "etcd=http://cloud:12379"}, {"redis", "redis=edge:6379"},
	} {
		k, cfg := kindtest.Decode(t, "ycsb", "component: "+c.component+"\nworkload: b\nrecordcount: 500\nfieldcount: 1\nfieldlength: 32\nrate: 250")
		if err := k.Validate(cfg); err != nil {
			t.Fatal(err)
		}
		cmd, err := k.Command(env, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// --phase both and --timeout 1s are the command's defaults: left out.
		want := []string{"/bin/continuum", "load", "ycsb", "--target", c.target, "--workload", "b",
			"--recordcount", "500", "--fieldcount", "1", "--fieldlength", "32", "--rate", "250",
			"--duration", "30s", "--warmup", "5s", "--out", "/res/workloads/y", "--seed", "9"}
		if !slices.Equal(cmd.Args, want) {
			t.Errorf("%s:\n%q\nwant\n%q", c.component, cmd.Args, want)
		}
	}
	k, cfg := kindtest.Decode(t, "ycsb", "component: echo\nclients: 4")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), `component "echo" (kind http-echo) has no etcd-v3 or redis endpoint: it serves http on 8080`) {
		t.Errorf("echo component: %v", err)
	}
	k, cfg = kindtest.Decode(t, "ycsb", "component: nope\nclients: 4")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "components: echo, etcd, kv, redis") {
		t.Errorf("unknown component: %v", err)
	}
	k, cfg = kindtest.Decode(t, "ycsb", "target: redis=10.0.0.5:6379\nclients: 4\noperationcount: 1000")
	cmd, err := k.Command(env, cfg)
	if err != nil || !slices.Contains(cmd.Args, "redis=10.0.0.5:6379") || !slices.Contains(cmd.Args, "--operationcount") {
		t.Errorf("url target: %q %v", cmd.Args, err)
	}
}

func TestRedisClusterKinds(t *testing.T) {
	bin := fakeBin(t, "redis-server")
	k, member := kindtest.Decode(t, "redis", "bin: "+bin+"\ncluster: c\nport: 6380\ncluster_node_timeout: 2s\nactivedefrag: true\n")
	if err := k.Validate(member); err != nil {
		t.Fatal(err)
	}
	env := kind.Env{Instance: "r4", Node: "n1", Nodes: map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"},
		OutDir: "/r/components/r4", Binary: "/bin/continuum"}
	cmd, err := k.Command(env, member)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, " ")
	for _, want := range []string{"--port 6380", "--cluster-enabled yes", "--cluster-node-timeout 2000", "--activedefrag yes"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if eps := k.Endpoints(member); len(eps) != 1 || eps[0].Protocol != kind.ProtocolRedisCluster {
		t.Errorf("cluster member endpoints %+v", eps)
	}
	_, standalone := kindtest.Decode(t, "redis", "cluster_node_timeout: 2s\n")
	if err := k.Validate(standalone); err == nil {
		t.Error("cluster_node_timeout without cluster accepted")
	}

	j, cfg := kindtest.Decode(t, "redis-cluster", "cluster: c\n")
	if err := j.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	env.Instance, env.Components = "rc", map[string]kind.Component{}
	for i, node := range []string{"n1", "n2", "n3", "n1", "n2", "n3"} {
		_, m := kindtest.Decode(t, "redis", fmt.Sprintf("cluster: c\nport: %d\n", 6379+i/3))
		env.Components[fmt.Sprintf("r%d", i+1)] = kindtest.Component(t, node, "redis", m)
	}
	_, other := kindtest.Decode(t, "redis", "cluster: other\n")
	env.Components["x"] = kindtest.Component(t, "n1", "redis", other)
	cmd, err = j.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// --replicas 1, --listen :16999 and --timeout 1m0s are the command's defaults: left out.
	want := []string{"/bin/continuum", "redis-cluster", "create",
		"--member", "10.0.0.1:6379", "--member", "10.0.0.2:6379", "--member", "10.0.0.3:6379",
		"--member", "10.0.0.1:6380", "--member", "10.0.0.2:6380", "--member", "10.0.0.3:6380"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:16999" {
		t.Errorf("joiner args\n%q\nwant\n%q (ready %q)", cmd.Args, want, cmd.ReadyAddr)
	}
	delete(env.Components, "r6")
	if _, err := j.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "5 redis members") {
		t.Errorf("5 members: %v", err)
	}
}

func TestMosquittoKindCommand(t *testing.T) {
	bin := fakeBin(t, "mosquitto")
	k, cfg := kindtest.Decode(t, "mosquitto", "bin: "+bin+"\nport: 1884\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	env := kind.Env{Instance: "mq", Node: "gw", OutDir: "/r/components/mq"}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmd.Args) != 5 || cmd.Args[0] != "/bin/sh" || cmd.Args[3] != "/r/components/mq/mosquitto.conf" || cmd.Args[4] != bin {
		t.Errorf("args %q: want a shell writing /r/components/mq/mosquitto.conf, then exec %s", cmd.Args, bin)
	}
	conf := strings.Join(cmd.Env, "\n")
	for _, want := range []string{"listener 1884 0.0.0.0", "allow_anonymous true", "max_queued_messages 100000"} {
		if !strings.Contains(conf, want) {
			t.Errorf("config %q: want %q", conf, want)
		}
	}
	if cmd.ReadyAddr != "127.0.0.1:1884" {
		t.Errorf("ready %q", cmd.ReadyAddr)
	}
	if eps := k.Endpoints(cfg); len(eps) != 1 || eps[0].Protocol != kind.ProtocolMQTT || eps[0].Port != 1884 {
		t.Errorf("endpoints %+v", eps)
	}
	_, bad := kindtest.Decode(t, "mosquitto", "max_queued_messages: -1\n")
	if err := k.Validate(bad); err == nil {
		t.Error("max_queued_messages -1 accepted")
	}
}
