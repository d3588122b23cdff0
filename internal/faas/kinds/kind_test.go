package kinds_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/platform/platformtest"
	// The testbed registers its instances client (platform.InstancesFor), as in the binary: a
	// gateway on a testbed endpoint checks out.
	_ "github.com/continuum-project/continuum/internal/testbed"
)

func env() kind.Env {
	return kind.Env{Instance: "fn", Node: "edge", Binary: "/bin/continuum", OutDir: "/r/components/fn"}
}

func TestFunctionCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "faas-function", "{handler: python/functions/hello, mode: classic, port: 9000, exec_timeout: 5s}")
	cmd, err := k.Command(env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, " ")
	for _, want := range []string{"/bin/continuum faas watchdog --mode classic --handler /", "/python/functions/hello --listen :9000 --exec-timeout 5s"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// Flags equal to the watchdog's defaults are left out.
	for _, not := range []string{"--server", "--max-inflight", "--start-zygote"} {
		if strings.Contains(args, not) {
			t.Errorf("args %q have %s, which is at its default", args, not)
		}
	}
	if cmd.CPUs != 1 || cmd.ReadyAddr != "127.0.0.1:9000" {
		t.Errorf("cpus %g, ready %q: want the default one core and the port", cmd.CPUs, cmd.ReadyAddr)
	}
	// The watchdog runs in its results directory, perhaps from a binary outside the clone: it
	// is told where Python is.
	if env := strings.Join(cmd.Env, " "); !strings.Contains(env, "CONTINUUM_PYTHON=/") || !strings.Contains(env, "CONTINUUM_PYTHON_SRC=/") {
		t.Errorf("env %q: want CONTINUUM_PYTHON and CONTINUUM_PYTHON_SRC", env)
	}
	if eps := k.Endpoints(cfg); len(eps) != 1 || eps[0].Port != 9000 || eps[0].Protocol != kind.ProtocolHTTP {
		t.Errorf("endpoints %+v", eps)
	}
}

func TestMicroserviceCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "faas-microservice", "{handler: python/functions/iot-analytics, cpus: 0}")
	cmd, err := k.Command(env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmd.Args) < 4 || !strings.HasSuffix(cmd.Args[0], "/python") || cmd.Args[2] != "continuum_functions.flaskapp" ||
		!slices.Contains(cmd.Args, "0.0.0.0") || cmd.CPUs != 0 {
		t.Errorf("args %q cpus %g: want Flask + Waitress on every address, unlimited", cmd.Args, cmd.CPUs)
	}
	if !slices.ContainsFunc(cmd.Env, func(e string) bool { return strings.HasPrefix(e, "PYTHONPATH=") && strings.HasSuffix(e, "/python/src") }) {
		t.Errorf("env %q lacks PYTHONPATH to python/src", cmd.Env)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ kind, cfg, want string }{
		{"function", "{handler: python/functions/hello, mode: micro}", `mode (--mode): "micro": want classic or http (the microservice kind runs micro)`},
		{"function", "{mode: http}", "handler (--handler): required: name the function folder"},
		{"function", "{handler: x, server: gunicorn}", `server (--server): "gunicorn": want continuum or flask`},
		{"function", "{handler: x, cpus: -1}", "cpus: -1: want >= 0"},
		{"microservice", "{handler: x, port: 0}", "port (--port): 0: must be between 1 and 65535"},
	} {
		k, cfg := kindtest.Decode(t, c.kind, c.cfg)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: got %v, want %q", c.kind, c.cfg, err, c.want)
		}
	}
	k, cfg := kindtest.Decode(t, "faas-function", "{handler: python/functions/nope}")
	if _, err := k.Command(env(), cfg); err == nil || !strings.Contains(err.Error(), "no such function folder") {
		t.Errorf("missing handler: %v", err)
	}
}

func TestGatewayCommand(t *testing.T) {
	k, cfg := kindtest.Decode(t, "faas-gateway", `{port: 8080, functions: [{name: analytics, handler: python/functions/iot-analytics,
  mode: http, server: flask, scaler: rps, max: 20}]}`)
	e := env()
	e.Platform = "testbed:run-001@/run/continuum"
	cmd, err := k.Command(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, " ")
	for _, want := range []string{"/bin/continuum faas gateway --function name=analytics,handler=/",
		"/python/functions/iot-analytics,mode=http,server=flask,replicas=1,min=0,max=20,scaler=rps,rps_threshold=5,",
		",rps_window=5s,exec_timeout=1m0s,",
		" --out /r/components/fn --platform testbed:run-001@/run/continuum --node edge --name fn --log-dir /r/components/fn/instances"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// Flags equal to the gateway's defaults (listen :8080, one core and port 18080 per
	// instance) are left out.
	for _, not := range []string{"--listen", "--instance-cpus", "--instance-port"} {
		if strings.Contains(args, not) {
			t.Errorf("args %q have %s, which is at its default", args, not)
		}
	}
	if env := strings.Join(cmd.Env, " "); !strings.Contains(env, "CONTINUUM_PYTHON=/") {
		t.Errorf("env %q: the gateway's instances need CONTINUUM_PYTHON", env)
	}
	// Where instances run apart from the gateway's node (pods of their own), zygote mode is
	// refused, naming why; the scalers are not.
	e.Platform = platformtest.ApartEndpoint()
	k, cfg = kindtest.Decode(t, "faas-gateway", "{functions: [{name: a, handler: python/functions/hello, zygote: true}]}")
	if _, err := k.Command(e, cfg); err == nil || !strings.Contains(err.Error(), "function a: zygote mode needs its instances beside the gateway") {
		t.Errorf("zygote on a platform whose instances run apart: %v", err)
	}
	for _, scaler := range []string{"rps", "cpu", "concurrency"} {
		k, cfg = kindtest.Decode(t, "faas-gateway", "{functions: [{name: a, handler: python/functions/hello, min: 0, idle_timeout: 5s, scaler: "+scaler+"}]}")
		if _, err := k.Command(e, cfg); err != nil {
			t.Errorf("scaler %s, no zygote, on a platform whose instances run apart: %v", scaler, err)
		}
	}
	for _, c := range []struct{ cfg, want string }{
		{"{}", "functions (--function): list the functions"},
		{"{functions: [{name: a, handler: x}, {name: a, handler: y}]}", "a named twice"},
		{"{functions: [{name: A, handler: x}]}", "functions[0] (--function): function name"},
		{"{functions: [{name: a, handler: x, scaler: kpa}]}", `scaler "kpa": want one of none, rps, cpu, concurrency`},
	} {
		k, cfg := kindtest.Decode(t, "faas-gateway", c.cfg)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestValidatorsReportEveryError: each kind reports all its bad keys at once, each with the
// flag it becomes; good configs pass.
func TestValidatorsReportEveryError(t *testing.T) {
	for _, c := range []struct {
		kind, bad, good string
		want            [][2]string // key, flag
	}{
		{"faas-function", "{mode: micro, port: 0, exec_timeout: 0s, max_inflight: -1}", "{handler: x}",
			[][2]string{{"mode", "--mode"}, {"handler", "--handler"}, {"port", "--listen"}, {"exec_timeout", "--exec-timeout"}, {"max_inflight", "--max-inflight"}}},
		{"faas-microservice", "{server: gunicorn, handler: x, cpus: -1, port: 70000}", "{handler: x}",
			[][2]string{{"server", ""}, {"cpus", ""}, {"port", "--port"}}},
		{"faas-gateway", "{instance_cpus: -1, functions: [{name: a, handler: x, scaler: kpa}, {name: a, handler: y, server: gunicorn}]}",
			"{functions: [{name: a, handler: x}, {name: b, handler: y, scaler: rps}]}",
			[][2]string{{"instance_cpus", "--instance-cpus"}, {"functions[0]", "--function"}, {"functions[1].server", "--function"}, {"functions[1].name", "--function"}}},
	} {
		kindtest.CheckFieldErrors(t, c.kind, c.bad, c.good, c.want)
	}
}
