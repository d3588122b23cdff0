package kind_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
)

type typedConfig struct {
	Port    int
	Timeout time.Duration
}

type otherConfig struct{ Port int }

// TestRegisterTyped: the registered Kind's untyped functions hand the typed ones the very *C
// its NewConfig made.
func TestRegisterTyped(t *testing.T) {
	name := uniqueKind("test-typed")
	var got []string
	seen := func(fn string, c *typedConfig, want *typedConfig) {
		if c != want {
			t.Errorf("%s got %p, want the config NewConfig made (%p)", fn, c, want)
		}
		got = append(got, fn)
	}
	var cfg *typedConfig // set once NewConfig ran
	kind.Register(kind.Def[typedConfig]{
		Name: name, Role: kind.RoleComponent, Summary: "typed test kind",
		Defaults: func() *typedConfig { return &typedConfig{Port: 7, Timeout: time.Second} },
		Validate: func(c *typedConfig) error {
			seen("Validate", c, cfg)
			if c.Port < 1 {
				return errors.New("port")
			}
			return nil
		},
		Command: func(env kind.Env, c *typedConfig) (kind.Command, error) {
			seen("Command", c, cfg)
			return kind.Command{Args: []string{"serve", fmt.Sprint(c.Port)}}, nil
		},
		Endpoints: func(c *typedConfig) []kind.Endpoint {
			seen("Endpoints", c, cfg)
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
		Prepare: func(c *typedConfig, dir string) error {
			seen("Prepare", c, cfg)
			if dir != "/scenarios" {
				t.Errorf("Prepare got dir %q", dir)
			}
			return nil
		},
		Set: func(_ context.Context, _ kind.Env, c *typedConfig, change *yaml.Node) error {
			seen("Set", c, cfg)
			return nil
		},
		Overrun: func(c *typedConfig) time.Duration { seen("Overrun", c, cfg); return 2 * c.Timeout },
		Helper:  true,
	})
	k, ok := kind.Lookup(name)
	if !ok {
		t.Fatal(name, " not registered")
	}
	if k.Role != kind.RoleComponent || k.Summary != "typed test kind" || !k.Helper || k.Metrics != nil {
		t.Errorf("kind %+v", k)
	}
	anyCfg := k.NewConfig()
	cfg, ok = anyCfg.(*typedConfig)
	if !ok || cfg.Port != 7 {
		t.Fatalf("NewConfig = %#v, want *typedConfig with the defaults", anyCfg)
	}
	if k.NewConfig() == anyCfg {
		t.Error("NewConfig returned the same config twice")
	}
	cfg.Port = 9 // as the scenario's config: would decode into it
	if err := k.Validate(anyCfg); err != nil {
		t.Error(err)
	}
	if err := k.Prepare(anyCfg, "/scenarios"); err != nil {
		t.Error(err)
	}
	if cmd, err := k.Command(kind.Env{}, anyCfg); err != nil || strings.Join(cmd.Args, " ") != "serve 9" {
		t.Errorf("Command = %v, %v", cmd.Args, err)
	}
	if eps := k.EndpointsOf(anyCfg); len(eps) != 1 || eps[0].Port != 9 {
		t.Errorf("endpoints %v", eps)
	}
	if err := k.Set(context.Background(), kind.Env{}, anyCfg, nil); err != nil {
		t.Error(err)
	}
	if d := k.OverrunOf(anyCfg); d != 2*time.Second {
		t.Errorf("overrun %v", d)
	}
	if want := "Validate Prepare Command Endpoints Set Overrun"; strings.Join(got, " ") != want {
		t.Errorf("called %v, want %s", got, want)
	}
}

// TestRegisterTypedOptional: a Def's nil optional functions stay nil in the Kind, so the
// runner's defaults apply (no endpoints, DefaultOverrun, not settable).
func TestRegisterTypedOptional(t *testing.T) {
	name := uniqueKind("test-typed-minimal")
	kind.Register(kind.Def[typedConfig]{
		Name: name, Role: kind.RoleWorkload,
		Defaults: func() *typedConfig { return &typedConfig{} },
		Command:  func(kind.Env, *typedConfig) (kind.Command, error) { return kind.Command{}, nil },
	})
	k, _ := kind.Lookup(name)
	if k.Validate != nil || k.Endpoints != nil || k.Prepare != nil || k.Set != nil || k.Overrun != nil || k.Metrics != nil ||
		k.NewProgress != nil || k.Outputs != nil {
		t.Errorf("optional functions set: %+v", k)
	}
	if d := k.OverrunOf(k.NewConfig()); d != kind.DefaultOverrun {
		t.Errorf("overrun %v, want %v", d, kind.DefaultOverrun)
	}
}

// typedProgress remembers the configs it was made with.
type typedProgress struct{ cfgs map[string]*typedConfig }

func (typedProgress) Line(string, []byte) {}
func (p typedProgress) Text() string {
	return fmt.Sprintf("%d instances, a on port %d", len(p.cfgs), p.cfgs["a"].Port)
}

// TestRegisterTypedProgress: a workload's Progress gets every instance's config as its own
// type, and its Outputs reach the Kind.
func TestRegisterTypedProgress(t *testing.T) {
	name := uniqueKind("test-typed-progress")
	kind.Register(kind.Def[typedConfig]{
		Name: name, Role: kind.RoleWorkload,
		Defaults: func() *typedConfig { return &typedConfig{} },
		Command:  func(kind.Env, *typedConfig) (kind.Command, error) { return kind.Command{}, nil },
		Progress: func(cfgs map[string]*typedConfig) kind.Progress { return typedProgress{cfgs} },
		Outputs:  []string{"job.json"},
	})
	k, _ := kind.Lookup(name)
	p := k.NewProgress(map[string]any{"a": &typedConfig{Port: 7}, "b": &typedConfig{}})
	if got, want := p.Text(), "2 instances, a on port 7"; got != want {
		t.Errorf("progress text %q, want %q", got, want)
	}
	if len(k.Outputs) != 1 || k.Outputs[0] != "job.json" {
		t.Errorf("outputs %q", k.Outputs)
	}
}

// TestRegisterTypedWrongConfig: the untyped view given a config its NewConfig did not make (the
// runner never does) panics, naming the kind and both types, rather than returning an error
// a caller might take for a scenario's mistake.
func TestRegisterTypedWrongConfig(t *testing.T) {
	name := uniqueKind("test-typed-strict")
	kind.Register(kind.Def[typedConfig]{
		Name: name, Role: kind.RoleComponent,
		Defaults:  func() *typedConfig { return &typedConfig{Port: 1} },
		Validate:  func(*typedConfig) error { return nil },
		Command:   func(kind.Env, *typedConfig) (kind.Command, error) { return kind.Command{}, nil },
		Endpoints: func(*typedConfig) []kind.Endpoint { return nil },
		Prepare:   func(*typedConfig, string) error { return nil },
		Set:       func(context.Context, kind.Env, *typedConfig, *yaml.Node) error { return nil },
		Overrun:   func(*typedConfig) time.Duration { return 0 },
	})
	k, _ := kind.Lookup(name)
	calls := map[string]func(cfg any){
		"Validate":  func(cfg any) { _ = k.Validate(cfg) },
		"Command":   func(cfg any) { _, _ = k.Command(kind.Env{}, cfg) },
		"Endpoints": func(cfg any) { k.Endpoints(cfg) },
		"Prepare":   func(cfg any) { _ = k.Prepare(cfg, "") },
		"Set":       func(cfg any) { _ = k.Set(context.Background(), kind.Env{}, cfg, nil) },
		"Overrun":   func(cfg any) { k.Overrun(cfg) },
	}
	for fn, call := range calls {
		for _, wrong := range []any{&otherConfig{}, typedConfig{}, nil} {
			t.Run(fmt.Sprintf("%s/%T", fn, wrong), func(t *testing.T) {
				want := fmt.Sprintf(`kind %q: config is %T, want *kind_test.typedConfig`, name, wrong)
				defer func() {
					r := recover()
					if msg, _ := r.(string); !strings.HasPrefix(msg, want) {
						t.Errorf("recovered %v, want a panic starting %q", r, want)
					}
				}()
				call(wrong)
			})
		}
	}
}

func TestRegisterIncomplete(t *testing.T) {
	mustPanic := func(name, want string, register func()) {
		t.Helper()
		defer func() {
			if msg, _ := recover().(string); !strings.Contains(msg, want) {
				t.Errorf("%s: recovered %q, want %q", name, msg, want)
			}
		}()
		register()
	}
	defaults := func() *typedConfig { return &typedConfig{} }
	command := func(kind.Env, *typedConfig) (kind.Command, error) { return kind.Command{}, nil }
	mustPanic("no Defaults", `incomplete kind "test-no-defaults"`, func() {
		kind.Register(kind.Def[typedConfig]{Name: "test-no-defaults", Role: kind.RoleWorkload, Command: command})
	})
	mustPanic("no Command", `incomplete kind "test-no-command"`, func() {
		kind.Register(kind.Def[typedConfig]{Name: "test-no-command", Role: kind.RoleWorkload, Defaults: defaults})
	})
	mustPanic("no Role", `incomplete kind "test-no-role"`, func() {
		kind.Register(kind.Def[typedConfig]{Name: "test-no-role", Defaults: defaults, Command: command})
	})
	mustPanic("workload endpoints", `workload "test-workload-endpoints" declares endpoints`, func() {
		kind.Register(kind.Def[typedConfig]{Name: "test-workload-endpoints", Role: kind.RoleWorkload,
			Defaults: defaults, Command: command, Endpoints: func(*typedConfig) []kind.Endpoint { return nil }})
	})
	mustPanic("component progress", `component "test-component-progress" declares a workload's progress or outputs`, func() {
		kind.Register(kind.Def[typedConfig]{Name: "test-component-progress", Role: kind.RoleComponent,
			Defaults: defaults, Command: command, Outputs: []string{"x.json"}})
	})
	dup := uniqueKind("test-dup")
	kind.Register(kind.Def[typedConfig]{Name: dup, Role: kind.RoleWorkload, Defaults: defaults, Command: command})
	mustPanic("duplicate", fmt.Sprintf("duplicate kind %q", dup), func() {
		kind.Register(kind.Def[typedConfig]{Name: dup, Role: kind.RoleWorkload, Defaults: defaults, Command: command})
	})
}

// kinds counts the kinds these tests registered in this process: with go test -count=N each test
// runs N times, and the registry refuses a name it already holds.
var kinds atomic.Int64

// uniqueKind is base with a number no earlier run of these tests used.
func uniqueKind(base string) string { return fmt.Sprintf("%s-%d", base, kinds.Add(1)) }

// TestEndpointTakesTCPForOneProtocol: an endpoint that says only tcp (an image's EXPOSE) serves
// a workload speaking one protocol, which then gets it under that protocol; one named by its
// protocol wins; udp never stands in; asked for several protocols, the error says to declare.
func TestEndpointTakesTCPForOneProtocol(t *testing.T) {
	env := kind.Env{Components: map[string]kind.Component{
		"img":   {Node: "n1", Kind: "container", Endpoints: []kind.Endpoint{{Name: "udp-53", Protocol: kind.ProtocolUDP, Port: 53}, {Name: "tcp-8080", Protocol: kind.ProtocolTCP, Port: 8080}, {Name: "tcp-9090", Protocol: kind.ProtocolTCP, Port: 9090}}},
		"mixed": {Node: "n2", Kind: "container", Endpoints: []kind.Endpoint{{Name: "tcp-80", Protocol: kind.ProtocolTCP, Port: 80}, {Name: "api", Protocol: kind.ProtocolHTTP, Port: 81}}},
		"dns":   {Node: "n3", Kind: "container", Endpoints: []kind.Endpoint{{Name: "udp-53", Protocol: kind.ProtocolUDP, Port: 53}}},
	}}
	for _, tc := range []struct {
		comp      string
		port      int
		protocols []string
		node      string
		want      kind.Endpoint
		err       string
	}{
		{comp: "img", protocols: []string{kind.ProtocolHTTP}, node: "n1", want: kind.Endpoint{Name: "tcp-8080", Protocol: kind.ProtocolHTTP, Port: 8080}},
		{comp: "img", port: 9090, protocols: []string{kind.ProtocolRedis}, node: "n1", want: kind.Endpoint{Name: "tcp-9090", Protocol: kind.ProtocolRedis, Port: 9090}},
		{comp: "img", port: 53, protocols: []string{kind.ProtocolHTTP}, err: "no http endpoint on port 53"},
		{comp: "img", protocols: []string{kind.ProtocolEtcdV3, kind.ProtocolRedis}, err: "says only tcp, not which of etcd-v3, redis"},
		{comp: "mixed", protocols: []string{kind.ProtocolHTTP}, node: "n2", want: kind.Endpoint{Name: "api", Protocol: kind.ProtocolHTTP, Port: 81}},
		{comp: "dns", protocols: []string{kind.ProtocolHTTP}, err: "no http endpoint: it serves udp on 53"},
	} {
		node, ep, err := env.Endpoint(tc.comp, tc.port, tc.protocols...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %d %v: error %v, want %q", tc.comp, tc.port, tc.protocols, err, tc.err)
			}
			continue
		}
		if err != nil || node != tc.node || ep != tc.want {
			t.Errorf("%s %d %v: %s %+v %v, want %s %+v", tc.comp, tc.port, tc.protocols, node, ep, err, tc.node, tc.want)
		}
	}
}
