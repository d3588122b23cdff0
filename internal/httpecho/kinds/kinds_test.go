package kinds

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/httpecho"
)

func TestHTTPEchoCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "http-echo", "delay: 20ms\nresponse_size: 1Ki\n")
	if k.Role != kind.RoleComponent || k.Validate(cfg) != nil {
		t.Fatalf("role %s validate %v", k.Role, k.Validate(cfg))
	}
	cmd, err := k.Command(kind.Env{Binary: "/bin/continuum", Instance: "echo-edge"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// --listen :8080 and --cpu-work 0s are the command's defaults: left out.
	want := []string{"/bin/continuum", "echo", "--name", "echo-edge", "--delay", "20ms", "--response-size", "1024"}
	if !slices.Equal(cmd.Args, want) || cmd.ReadyAddr != "127.0.0.1:8080" {
		t.Errorf("args %q ready %q, want %q", cmd.Args, cmd.ReadyAddr, want)
	}
	// Every problem at once, each with its key and flag.
	_, bad := kindtest.Decode(t, "http-echo", "port: 0\ndelay: -1s\ncpu_work: 1h\n")
	err = k.Validate(bad)
	for _, want := range []string{"port (--listen): 0", "delay (--delay): -1s", "cpu_work (--cpu-work): 1h0m0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("three bad keys: %v, want %q", err, want)
		}
	}
}

func TestHTTPEchoSet(t *testing.T) {
	cfg := httpecho.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := httpecho.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	host, portStr, _ := net.SplitHostPort(hs.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	k, _ := kind.Lookup("http-echo")
	inst := &EchoConfig{Port: port}
	dialed := false
	env := kind.Env{Instance: "e", Node: "edge", Nodes: map[string]string{"edge": host},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed = true
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
	change := func(src string) *yaml.Node {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		return n.Content[0]
	}
	ctx := context.Background()
	if err := k.Set(ctx, env, inst, change("delay: 25ms\nresponse_size: 2Ki\n")); err != nil {
		t.Fatal(err)
	}
	if st := srv.Settings(); st.Delay != 25*time.Millisecond || st.ResponseSize != 2048 || !dialed {
		t.Errorf("settings %+v dialed=%v", st, dialed)
	}
	tests := []struct{ src, want string }{
		{"port: 9000\n", `unknown field "port" in config; allowed: delay, cpu_work, response_size`},
		{"delay: fast\n", "delay"},
		{"delay: 2h\n", "delay (--delay): 2h0m0s: must be between"},
	}
	for _, tt := range tests {
		if err := k.Set(ctx, env, inst, change(tt.src)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("set %q: %v, want error containing %q", tt.src, err, tt.want)
		}
	}
	if st := srv.Settings(); st.Delay != 25*time.Millisecond {
		t.Errorf("a rejected change was applied: %+v", st)
	}
	env.Node = "nowhere"
	if err := k.Set(ctx, env, inst, change("delay: 1ms\n")); err == nil {
		t.Error("unknown node: want error")
	}
}

func TestHTTPLoadValidate(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"url", "targets: [{name: a, url: 'http://x:80/'}]\nrate: 100\n", ""},
		{"component", "targets: [{name: a, component: echo, port: 9000, path: ping}]\nclients: 4\n", ""},
		{"both loops", "targets: [{name: a, url: 'http://x/'}]\nrate: 1\nclients: 1\n", "exactly one of rate"},
		{"no loop", "targets: [{name: a, url: 'http://x/'}]\n", "exactly one of rate"},
		{"no targets", "rate: 10\n", "at least one target"},
		{"url and component", "targets: [{name: a, url: 'http://x/', component: c}]\nrate: 1\n", "exactly one of url and component"},
		{"neither", "targets: [{name: a}]\nrate: 1\n", "exactly one of url and component"},
		{"bad url", "targets: [{name: a, url: 'x'}]\nrate: 1\n", "targets[0].url"},
		{"bad name", "targets: [{name: 'a b', url: 'http://x/'}]\nrate: 1\n", "targets[0].name"},
		{"dup name", "targets: [{name: a, url: 'http://x/'}, {name: a, url: 'http://y/'}]\nrate: 1\n", "used twice"},
		{"bad method", "targets: [{name: a, url: 'http://x/'}]\nrate: 1\nmethod: get\n", "method"},
		{"bad timeout", "targets: [{name: a, url: 'http://x/'}]\nrate: 1\ntimeout: 0s\n", "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, cfg := kindtest.Decode(t, "http-load", tt.src)
			err := k.Validate(cfg)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestHTTPLoadReportsEveryError: every bad key at once, down to a target's field, each with the
// continuum load http flag it becomes; the good configs are TestHTTPLoadValidate's.
func TestHTTPLoadReportsEveryError(t *testing.T) {
	k, cfg := kindtest.Decode(t, "http-load", "{method: get, timeout: 0s, latency_bounds: [10ms],"+
		" targets: [{name: a, url: 'http://x/'}, {name: a, url: x, service: 'a b'}]}")
	err := k.Validate(cfg)
	var fes kind.FieldErrors
	want := [][2]string{{"rate", "--rate"}, {"timeout", "--timeout"}, {"method", "--method"}, {"latency_bounds", "--latency-bound"},
		{"targets[1].name", "--target"}, {"targets[1].service", "--service"}, {"targets[1].url", "--target"}}
	if !errors.As(err, &fes) || len(fes) != len(want) {
		t.Fatalf("got %v, want %d field errors", err, len(want))
	}
	for i, w := range want {
		if fes[i].Key != w[0] || fes[i].Flag != w[1] {
			t.Errorf("error %d: %+v, want key %q flag %q", i, *fes[i], w[0], w[1])
		}
	}
}

func TestHTTPLoadCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "http-load", `
targets:
  - {name: edge, component: echo-edge}
  - {name: cloud, component: echo-cloud, port: 9000, path: api}
  - {name: ext, url: "http://10.9.9.9:80/x"}
rate: 150
max_inflight: 50
body_size: 1Ki
new_connections: true
`)
	_, echo := kindtest.Decode(t, "http-echo", "{}")
	env := kind.Env{Binary: "/bin/continuum", Components: map[string]kind.Component{
		"echo-edge": kindtest.Component(t, "edge1", "http-echo", echo), "echo-cloud": kindtest.Component(t, "cloud1", "http-echo", &EchoConfig{Port: 9000})},
		OutDir: "/r/w", Seed: 7, Duration: 30 * time.Second, Warmup: 5 * time.Second}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Flags at their defaults (--timeout 1s, --method GET, --duration 30s) are left out.
	want := []string{"/bin/continuum", "load", "http",
		"--target", "edge=http://edge1:8080/", "--target", "cloud=http://cloud1:9000/api", "--target", "ext=http://10.9.9.9:80/x",
		"--rate", "150", "--warmup", "5s", "--body-size", "1024", "--max-inflight", "50", "--out", "/r/w", "--seed", "7", "--new-connections=true"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	env.Components = map[string]kind.Component{"other": kindtest.Node("n")}
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), `unknown component "echo-edge" (components: other)`) {
		t.Errorf("unknown component: %v", err)
	}
}

func TestComponentTargetUsesTheComponentsPort(t *testing.T) {
	env := kind.Env{Components: map[string]kind.Component{"echo": kindtest.Component(t, "edge", "http-echo", &EchoConfig{Port: 9090})}}
	u, err := LoadTarget{Name: "e", Component: "echo"}.url(env)
	if err != nil || u != "http://edge:9090/" {
		t.Fatalf("url = %q, %v; want http://edge:9090/", u, err)
	}
	u, err = LoadTarget{Name: "e", Component: "echo", Port: 9090, Path: "x"}.url(env)
	if err != nil || u != "http://edge:9090/x" {
		t.Fatalf("explicit port: url = %q, %v", u, err)
	}
	// A port the component does not serve is an error naming what it serves.
	if _, err := (LoadTarget{Name: "e", Component: "echo", Port: 7000}).url(env); err == nil ||
		!strings.Contains(err.Error(), "no http endpoint on port 7000: it serves http on 9090") {
		t.Fatalf("port 7000: %v", err)
	}
}
