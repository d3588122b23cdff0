package kinds

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/spec"
)

// decodeErr decodes and validates src as the scenario loader does and returns the error.
func decodeErr(t *testing.T, src string) error {
	t.Helper()
	return decodeErrKind(t, "process", src)
}

func decodeErrKind(t *testing.T, name, src string) error {
	t.Helper()
	k, _ := kind.Lookup(name)
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	cfg := k.NewConfig()
	if err := spec.DecodeAt("test.yaml", "config", n.Content[0], cfg); err != nil {
		return err
	}
	return k.Validate(cfg)
}

func TestProcessConfigRefusals(t *testing.T) {
	for src, want := range map[string]string{
		`env: {A: b}`:                     "command: required",
		`command: [""]`:                   "command: required",
		`command: [x]` + "\nenv: {1A: b}": `env: "1A": a variable name`,
		`command: [x]` + "\ncpus: -1":     "cpus: -1: must be > 0",
		`command: [x]` + "\nmemory: 1KiB": "at least 4MiB",
		`command: [x]` + "\nendpoints: [{name: Web, protocol: http, port: 80}]":                                        `endpoints[0].name: "Web"`,
		`command: [x]` + "\nendpoints: [{name: web, port: 80}]":                                                        "endpoints[0].protocol: required",
		`command: [x]` + "\nendpoints: [{name: web, protocol: http, port: 0}]":                                         "endpoints[0].port: 0: must be between 1 and 65535",
		`command: [x]` + "\nendpoints: [{name: web, protocol: http, port: 80}, {name: web, protocol: http, port: 81}]": "declared twice",
		`command: [x]` + "\nfiles: [{content: x}]":                                                                     "files[0].path: required",
		`command: [x]` + "\nfiles: [{path: a, content: x, from: b}]":                                                   "not both",
		`command: [x]` + "\nfiles: [{path: a, mode: rwx}]":                                                             `files[0].mode: "rwx"`,
		`command: [x]` + "\nready: {tcp: 80, log: up}":                                                                 "exactly one",
		`command: [x]` + "\nready: {timeout: 5s}":                                                                      "exactly one",
		`command: [x]` + "\nready: {log: '('}":                                                                         "ready.log",
		`command: [x]` + "\nready: {http: {port: 80, status: 42}}":                                                     "ready.http.status: 42",
		`command: [x]` + "\nstop_signal: SIGNOPE":                                                                      "not a signal",
		`command: [x]` + "\nstop_signal: 99":                                                                           "between 1 and 64",
		`command: [x]` + "\nports: [80]":                                                                               "ports",
	} {
		err := decodeErr(t, src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", src, err, want)
		}
	}
}

func TestContainerConfigRefusals(t *testing.T) {
	for src, want := range map[string]string{
		`command: [x]`:                                  "image (--image): required",
		"image: a.tar\nvolumes: [data]":                 `volume "data"`,
		"image: a.tar\nvolumes: ['data:rel']":           `volume "data:rel"`,
		"image: a.tar\nvolumes: ['data:/d:rx']":         "ro or rw",
		"image: a.tar\nvolumes: ['data:/d:ro,rw']":      "not both",
		"image: a.tar\nvolumes: ['data:/d:copy,cp']":    `option "cp"`,
		"image: a.tar\nworking_dir: app":                "absolute path",
		"image: a.tar\nstop_signal: NOPE":               "not a signal",
		"image: a.tar\nendpoints: [{name: x, port: 1}]": "endpoints[0].protocol: required",
	} {
		err := decodeErrKind(t, "container", src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", src, err, want)
		}
	}
	// A local image that is not there fails at `run --check`, naming it.
	k, cfg := kindtest.Decode(t, "app-container", "image: ./missing.tar")
	if _, err := k.Command(kind.Env{Instance: "c", ScenarioDir: t.TempDir()}, cfg); err == nil || !strings.Contains(err.Error(), "missing.tar") {
		t.Errorf("missing image: %v", err)
	}
	// A registry reference is passed on as written (its config read from the registry), the
	// command after --.
	ref := pushImage(t, v1.Config{Cmd: []string{"serve"}})
	k, cfg = kindtest.Decode(t, "app-container", "image: "+ref+"\ncommand: [serve, --port, \"80\"]\nenv: {A: b}\nvolumes: ['out:/out:ro']")
	cmd, err := k.Command(kind.Env{Instance: "c", Node: "edge", Binary: "/bin/continuum", ScenarioDir: t.TempDir()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cmd.Args, " ")
	for _, want := range []string{"/bin/continuum container-run", "--image " + ref, "--id c", "--env A=b", "--hostname edge", "--volume out:/out:ro", "-- serve --port 80"} {
		if !strings.Contains(got, want) {
			t.Errorf("argv %q lacks %q", got, want)
		}
	}
}

func TestProcessCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.conf"), []byte("listen 9000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, cfg := kindtest.Decode(t, "app-process", `
command: [./bin/server, --config, app.conf]
env: {B: "2", A: "1"}
dir: work
files:
  - {path: app.conf, from: app.conf}
  - {path: run.sh, content: "echo hi", mode: "0755"}
cpus: 0.5
memory: 64MiB
endpoints: [{name: api, protocol: http, port: 9000}, {name: admin, protocol: tcp, port: 9001}]
ready: {http: {port: 9000, path: /health}, timeout: 20s}
stop_signal: int
stop_grace: 7s
`)
	env := kind.Env{Instance: "app", Node: "edge", OutDir: "/results/app", ScenarioDir: dir}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Args[0] != filepath.Join(dir, "bin/server") || cmd.Args[2] != "app.conf" {
		t.Errorf("args %q: a program path with a slash is the scenario's, arguments stay as written", cmd.Args)
	}
	if strings.Join(cmd.Env, " ") != "A=1 B=2" || cmd.Dir != filepath.Join(dir, "work") {
		t.Errorf("env %q (want sorted), dir %q", cmd.Env, cmd.Dir)
	}
	if len(cmd.Files) != 2 || string(cmd.Files[0].Data) != "listen 9000\n" || cmd.Files[1].Mode != 0o755 || cmd.Files[0].Mode != 0 {
		t.Errorf("files %+v", cmd.Files)
	}
	if cmd.CPUs != 0.5 || cmd.Memory != 64<<20 || cmd.StopSignal != syscall.SIGINT || cmd.StopGrace != 7*time.Second {
		t.Errorf("limits and stop: %+v", cmd)
	}
	if r := cmd.Ready; r == nil || r.HTTP == nil || r.HTTP.Addr != "127.0.0.1:9000" || r.HTTP.Path != "/health" || r.Timeout != 20*time.Second {
		t.Errorf("ready %+v", cmd.Ready)
	}
	eps := k.EndpointsOf(cfg)
	if len(eps) != 2 || eps[1] != (kind.Endpoint{Name: "admin", Protocol: "tcp", Port: 9001}) {
		t.Errorf("endpoints %+v", eps)
	}

	// A missing `from` file fails at `run --check`, naming the file.
	_, cfg = kindtest.Decode(t, "app-process", "command: [x]\nfiles: [{path: a, from: missing.txt}]")
	if _, err := k.Command(env, cfg); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing from file: %v", err)
	}

	// Readiness defaults to the first endpoint; without endpoints, none.
	for src, want := range map[string]string{
		"command: [x]\nendpoints: [{name: a, protocol: redis, port: 6379}]": "127.0.0.1:6379",
		"command: [x]\nready: {tcp: 7000}":                                  "127.0.0.1:7000",
		"command: [x]":                                                      "",
	} {
		_, cfg := kindtest.Decode(t, "app-process", src)
		cmd, err := k.Command(env, cfg)
		if err != nil || cmd.ReadyAddr != want {
			t.Errorf("%q: ready addr %q (%v), want %q", src, cmd.ReadyAddr, err, want)
		}
	}
	_, cfg = kindtest.Decode(t, "app-process", "command: [x]\nready: {log: 'listening on \\d+'}")
	if cmd, _ := k.Command(env, cfg); cmd.Ready == nil || cmd.Ready.Log == nil || !cmd.Ready.Log.MatchString("listening on 80") {
		t.Errorf("log probe %+v", cmd.Ready)
	}
	_, cfg = kindtest.Decode(t, "app-process", "command: [x]\nready: {exec: [pg_isready, -h, 127.0.0.1]}")
	if cmd, _ := k.Command(env, cfg); cmd.Ready == nil || len(cmd.Ready.Exec) != 3 {
		t.Errorf("exec probe %+v", cmd.Ready)
	}
}

// checkFieldErrors asserts that err is a kind.FieldErrors list with exactly these keys, in
// order, and these flags (the flag that key becomes, "" for none).
func checkFieldErrors(t *testing.T, err error, want ...[2]string) {
	t.Helper()
	var fes kind.FieldErrors
	if !errors.As(err, &fes) || len(fes) != len(want) {
		t.Fatalf("got %v, want %d field errors %v", err, len(want), want)
	}
	for i, w := range want {
		if fes[i].Key != w[0] || fes[i].Flag != w[1] || fes[i].Msg == "" {
			t.Errorf("error %d: %+v, want key %q flag %q and a message", i, *fes[i], w[0], w[1])
		}
	}
}

// TestProcessKindReportsEveryError: four bad keys, four errors, each at its key; a good config
// passes.
func TestProcessKindReportsEveryError(t *testing.T) {
	err := decodeErrKind(t, "app-process", "{cpus: -1, endpoints: [{name: web, protocol: http, port: 0}], stop_signal: NOPE}")
	checkFieldErrors(t, err, [2]string{"command", ""}, [2]string{"cpus", ""}, [2]string{"endpoints[0].port", ""}, [2]string{"stop_signal", ""})
	if err := decodeErrKind(t, "app-process", "{command: [x], cpus: 1, endpoints: [{name: web, protocol: http, port: 80}], stop_signal: INT}"); err != nil {
		t.Errorf("good config: %v", err)
	}
}

// TestContainerKindReportsEveryError: the container's own keys carry the container-run flag
// they become, the shared ones none.
func TestContainerKindReportsEveryError(t *testing.T) {
	err := decodeErrKind(t, "app-container", "{volumes: [data], working_dir: app, env: {1A: b}, healthcheck: {retries: -1}}")
	checkFieldErrors(t, err, [2]string{"image", "--image"}, [2]string{"volumes[0]", "--volume"}, [2]string{"healthcheck.retries", ""},
		[2]string{"working_dir", "--workdir"}, [2]string{"env", "--env"})
	if err := decodeErrKind(t, "app-container", "{image: a.tar, volumes: ['data:/d:ro'], working_dir: /app, env: {A: b}}"); err != nil {
		t.Errorf("good config: %v", err)
	}
}
