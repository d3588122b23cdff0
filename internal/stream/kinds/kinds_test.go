package kinds_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	_ "github.com/continuum-project/continuum/internal/systems/install"
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
	want := []string{"/bin/continuum", "realtime-db", "--listen", ":9100", "--endpoints", "http://n1:2379", "--max-body-bytes", "1048576"}
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
	if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), "store is required") {
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
	want := []string{"/bin/continuum", "realtime-db", "--endpoints", "http://n1:2379",
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
