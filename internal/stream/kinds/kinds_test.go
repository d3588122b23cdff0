package kinds_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

func TestRealtimeDBKind(t *testing.T) {
	k, cfg := kindtest.Decode(t, "realtime-db", "port: 9100\nstore: db\nmax_body_bytes: 1Mi\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, kv := kindtest.Decode(t, "kv", "client_port: 2379\n")
	env := kind.Env{Binary: "/bin/continuum", Instance: "rt", Node: "edge",
		Components: map[string]kind.Component{"db": kindtest.Component(t, "n1", "kv", kv)}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "stream", "realtime-db", "--listen", ":9100", "--endpoints", "http://n1:2379", "--max-body-bytes", "1048576"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:9100" {
		t.Errorf("args %q ready %q, want %q", cmd.Args, cmd.ReadyAddr, want)
	}
	eps := k.Endpoints(cfg)
	if len(eps) != 1 || eps[0].Protocol != kind.ProtocolHTTP || eps[0].Port != 9100 {
		t.Errorf("endpoints %+v", eps)
	}
}

func TestRealtimeDBKindErrors(t *testing.T) {
	k, cfg := kindtest.Decode(t, "realtime-db", "port: 9000\n")
	if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), "store (--endpoints): required") {
		t.Errorf("without a store: %v", err)
	}
	k, cfg = kindtest.Decode(t, "realtime-db", "store: web\n")
	_, echo := kindtest.Decode(t, "http-echo", "port: 8080\n")
	env := kind.Env{Binary: "/bin/continuum", Components: map[string]kind.Component{"web": kindtest.Component(t, "n1", "http-echo", echo)}}
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "store") {
		t.Errorf("a store that speaks no etcd-v3: %v", err)
	}
}

func TestRealtimeDBKindSecurity(t *testing.T) {
	k, cfg := kindtest.Decode(t, "realtime-db", "store: db\nrules: /etc/rtdb/rules.json\nauth_secrets: [s1, s2]\nemulator: true\nproject_id: demo\njwt_keys: /etc/rtdb/keys.json\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	_, kv := kindtest.Decode(t, "kv", "client_port: 2379\n")
	env := kind.Env{Binary: "/bin/continuum", Components: map[string]kind.Component{"db": kindtest.Component(t, "n1", "kv", kv)}}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "stream", "realtime-db", "--endpoints", "http://n1:2379",
		"--rules", "/etc/rtdb/rules.json", "--auth-secret", "s1", "--auth-secret", "s2", "--emulator=true",
		"--project-id", "demo", "--jwt-keys", "/etc/rtdb/keys.json"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q, want %q", cmd.Args, want)
	}
	k, cfg = kindtest.Decode(t, "realtime-db", "store: db\njwt_keys: /k.json\n")
	if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), "project_id") {
		t.Errorf("jwt_keys without project_id: %v", err)
	}
}

func TestBridgeAndAggregatorKinds(t *testing.T) {
	_, kafka := kindtest.Decode(t, "kafka", "port: 9092\n")
	_, db := kindtest.Decode(t, "realtime-db", "port: 9000\nstore: kv\n")
	env := kind.Env{Binary: "/bin/continuum", Instance: "agg", Node: "edge", OutDir: "/o", Components: map[string]kind.Component{
		"k": kindtest.Component(t, "edge", "kafka", kafka), "db": kindtest.Component(t, "cloud", "realtime-db", db)}}

	k, cfg := kindtest.Decode(t, "stream-bridge", "port: 8091\nbrokers: [k]\nlinger: 5ms\ncompression: lz4\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/continuum", "stream", "bridge", "--listen", ":8091", "--brokers", "edge:9092", "--linger", "5ms", "--compression", "lz4", "--token-file", "/o/secrets/token"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:8091" {
		t.Errorf("bridge args %q ready %q, want %q", cmd.Args, cmd.ReadyAddr, want)
	}

	k, cfg = kindtest.Decode(t, "stream-aggregator", "brokers: [k]\ntopics: [sensors]\nrtdb: db\nns: demo\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	cmd, err = k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"/bin/continuum", "stream", "aggregator", "--brokers", "edge:9092", "--topics", "sensors", "--instance-id", "agg",
		"--rtdb", "http://cloud:9000", "--ns", "demo", "--stats-file", "/o/aggregator-stats.json"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("aggregator args %q, want %q", cmd.Args, want)
	}

	for _, c := range []struct{ kind, yaml, want string }{
		{"stream-bridge", "port: 8090\n", "brokers (--brokers): required"},
		{"stream-bridge", "brokers: [k]\nacks: leader\n", "idempotent producer needs acks all"},
		{"stream-bridge", "brokers: [k]\ncompression: brotli\n", "want one of none, gzip"},
		{"stream-aggregator", "brokers: [k]\nrtdb: db\n", "topics (--topics): required"},
		{"stream-aggregator", "brokers: [k]\ntopics: [a]\n", "rtdb (--rtdb): required"},
		{"stream-aggregator", "brokers: [k]\ntopics: [a]\nrtdb: db\npath: /x\ndead_letter_path: /x/dead\n", "neither may contain the other"},
	} {
		k, cfg := kindtest.Decode(t, c.kind, c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.kind, c.yaml, err, c.want)
		}
	}
	k, cfg = kindtest.Decode(t, "stream-bridge", "brokers: [db]\n")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "brokers") {
		t.Errorf("brokers naming a realtime-db: %v", err)
	}
}
