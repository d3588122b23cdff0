// Package kinds registers the app system's kinds: `app-process`, any command on a node with its
// environment, files, limits, declared endpoints, readiness and stop behaviour.
package kinds

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[ProcessConfig]{
		Name:     "app-process",
		System:   "app",
		Doc:      "docs/bring-your-own.md#app-process-any-command-on-a-node",
		OldNames: []string{"process"},
		Role:     kind.RoleComponent,
		Summary:  "any program on a node: your command with env, files, CPU/memory limits, declared endpoints, readiness and stop signal",
		Defaults: func() *ProcessConfig {
			return &ProcessConfig{}
		},
		Validate:  (*ProcessConfig).validate,
		Command:   processCommand,
		Endpoints: func(c *ProcessConfig) []kind.Endpoint { return c.endpoints() },
	})
}

// ProcessConfig is the `config:` of a process component.
type ProcessConfig struct {
	// Command is the program and its arguments (Args[0]: an absolute path, a path relative to the
	// scenario file's directory when it contains a slash, or a name looked up in PATH).
	Command []string `yaml:"command"`
	// Dir is the working directory (relative: to the scenario file); default the instance's
	// output directory in the results, so that files it writes there are kept.
	Dir    string `yaml:"dir"`
	Common `yaml:",inline"`
}

// Common is what the process and container kinds share: the program's environment, files,
// limits, endpoints, readiness and stop.
type Common struct {
	// Env adds variables to the program's environment.
	Env map[string]string `yaml:"env"`
	// Files are placed before it starts.
	Files []FileConfig `yaml:"files"`
	// CPUs and Memory limit it (and what it starts) inside its node's limits.
	CPUs   float64    `yaml:"cpus"`
	Memory spec.Bytes `yaml:"memory"`
	// Endpoints are what it serves; workloads find it through them as they find our kinds.
	Endpoints []EndpointConfig `yaml:"endpoints"`
	// Ready says when it is ready; default a TCP connect to its first endpoint's port (none
	// without endpoints: ready once started).
	Ready *ReadyConfig `yaml:"ready"`
	// StopSignal stops it (default SIGTERM); StopGrace is how long it gets before SIGKILL at the
	// end of the run (default: the platform's, 2 s on the testbed).
	StopSignal string        `yaml:"stop_signal"`
	StopGrace  spec.Duration `yaml:"stop_grace"`
}

// FileConfig is a file to place: its content inline or copied from a file of the runner's host.
type FileConfig struct {
	Path    string `yaml:"path"`    // relative: to the working directory
	Content string `yaml:"content"` // inline content
	From    string `yaml:"from"`    // or a file to copy (relative: to the scenario file)
	Mode    string `yaml:"mode"`    // octal, default 0644
}

// EndpointConfig is a declared endpoint.
type EndpointConfig struct {
	Name     string `yaml:"name"`
	Protocol string `yaml:"protocol"`
	Port     int    `yaml:"port"`
}

// ReadyConfig is a readiness probe: exactly one of tcp, http, exec and log.
type ReadyConfig struct {
	TCP     int            `yaml:"tcp"`  // a port on the node's loopback accepts connections
	HTTP    *HTTPReadyConf `yaml:"http"` // a GET answers the status
	Exec    []string       `yaml:"exec"` // a command run on the node exits 0
	Log     string         `yaml:"log"`  // a line of its stdout or stderr matches this regular expression
	Timeout spec.Duration  `yaml:"timeout"`
}

// HTTPReadyConf is an HTTP readiness probe on the node's loopback.
type HTTPReadyConf struct {
	Port   int    `yaml:"port"`
	Path   string `yaml:"path"`   // default /
	Status int    `yaml:"status"` // default: any 2xx
}

var (
	endpointNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)
	envNameRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (c *ProcessConfig) validate() error {
	var errs kind.FieldErrors
	if len(c.Command) == 0 || c.Command[0] == "" {
		errs.Add("command", "", "required, the program and its arguments, e.g. [python3, -m, http.server, \"8080\"]")
	}
	c.Common.check(&errs, "")
	return errs.Err()
}

// check records every problem of the shared keys in errs; envFlag is the flag env's entries
// become ("" for a process, whose environment is its own).
func (c *Common) check(errs *kind.FieldErrors, envFlag string) {
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if !envNameRE.MatchString(k) {
			errs.Add("env", envFlag, "%q: a variable name is letters, digits and '_', not starting with a digit", k)
		}
	}
	if c.CPUs < 0 {
		errs.Add("cpus", "", "%g: must be > 0 (or absent: no limit)", c.CPUs)
	}
	if c.Memory < 0 || (c.Memory > 0 && c.Memory < 4<<20) {
		errs.Add("memory", "", "%d: must be at least 4MiB (or absent: no limit)", c.Memory)
	}
	seen := map[string]bool{}
	for i, e := range c.Endpoints {
		at := fmt.Sprintf("endpoints[%d]", i)
		switch {
		case !endpointNameRE.MatchString(e.Name):
			errs.Add(at+".name", "", "%q: lowercase letters, digits and '-', starting with a letter", e.Name)
		case seen[e.Name]:
			errs.Add(at+".name", "", "%q: declared twice", e.Name)
		}
		seen[e.Name] = true
		if e.Protocol == "" {
			errs.Add(at+".protocol", "", "required (endpoint %s), e.g. %s, %s, %s, %s, %s or tcp", e.Name,
				kind.ProtocolHTTP, kind.ProtocolEtcdV3, kind.ProtocolRedis, kind.ProtocolKafka, kind.ProtocolMQTT)
		}
		if e.Port < 1 || e.Port > 65535 {
			errs.Add(at+".port", "", "%d: must be between 1 and 65535 (endpoint %s)", e.Port, e.Name)
		}
	}
	for i, f := range c.Files {
		at := fmt.Sprintf("files[%d]", i)
		if f.Path == "" {
			errs.Add(at+".path", "", "required")
		}
		if f.From != "" && f.Content != "" {
			errs.Add(at+".from", "", "content or from, not both (%s)", f.Path)
		}
		if f.Mode != "" {
			if _, err := parseMode(f.Mode); err != nil {
				errs.AddErr(at+".mode", "", err)
			}
		}
	}
	if r := c.Ready; r != nil {
		r.check(errs)
	}
	if _, err := parseSignal(c.StopSignal); err != nil {
		errs.AddErr("stop_signal", "", err)
	}
	if c.StopGrace.Duration < 0 {
		errs.Add("stop_grace", "", "%v: must be positive", c.StopGrace)
	}
}

func (r *ReadyConfig) check(errs *kind.FieldErrors) {
	n := 0
	if r.TCP != 0 {
		n++
		if r.TCP < 1 || r.TCP > 65535 {
			errs.Add("ready.tcp", "", "%d: a port between 1 and 65535", r.TCP)
		}
	}
	if r.HTTP != nil {
		n++
		if r.HTTP.Port < 1 || r.HTTP.Port > 65535 {
			errs.Add("ready.http.port", "", "%d: a port between 1 and 65535", r.HTTP.Port)
		}
		if r.HTTP.Status != 0 && (r.HTTP.Status < 100 || r.HTTP.Status > 599) {
			errs.Add("ready.http.status", "", "%d: an HTTP status between 100 and 599", r.HTTP.Status)
		}
	}
	if len(r.Exec) > 0 {
		n++
	}
	if r.Log != "" {
		n++
		if _, err := regexp.Compile(r.Log); err != nil {
			errs.AddErr("ready.log", "", err)
		}
	}
	if n != 1 {
		errs.Add("ready", "", "give exactly one of tcp, http, exec and log (got %d)", n)
	}
	if r.Timeout.Duration < 0 {
		errs.Add("ready.timeout", "", "%v: must be positive", r.Timeout)
	}
}

func (c *Common) endpoints() []kind.Endpoint {
	out := make([]kind.Endpoint, 0, len(c.Endpoints))
	for _, e := range c.Endpoints {
		out = append(out, kind.Endpoint{Name: e.Name, Protocol: e.Protocol, Port: e.Port})
	}
	return out
}

// parseSignal takes SIGINT, INT, sigint or a number; "" is SIGTERM (0: the platform's default).
func parseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("%s: a signal number is between 1 and 64", s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("%q: not a signal; e.g. SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 or a number", s)
}

func parseMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, fmt.Errorf("%q: an octal permission like 0644 or 0755", s)
	}
	return os.FileMode(m), nil
}

// resolve makes a path the scenario's author wrote relative to the scenario file absolute.
func resolve(env kind.Env, p string) string {
	if p == "" || filepath.IsAbs(p) || env.ScenarioDir == "" {
		return p
	}
	return filepath.Join(env.ScenarioDir, p)
}

func processCommand(env kind.Env, c *ProcessConfig) (kind.Command, error) {
	args := append([]string{}, c.Command...)
	if strings.Contains(args[0], "/") {
		args[0] = resolve(env, args[0])
	}
	cmd, err := c.Common.command(env, args)
	if err != nil {
		return kind.Command{}, err
	}
	cmd.Env = c.envList()
	if c.Dir != "" {
		cmd.Dir = resolve(env, c.Dir)
	}
	return cmd, nil
}

// envList is Env as KEY=VALUE entries, sorted.
func (c *Common) envList() []string {
	keys := slices.Sorted(maps.Keys(c.Env))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+c.Env[k])
	}
	return out
}

// command is the kind.Command for args with everything Common declares but the environment
// (a process gets it as its own, a container passes it into the container).
func (c *Common) command(env kind.Env, args []string) (kind.Command, error) {
	cmd := kind.Command{Args: args, CPUs: c.CPUs, Memory: int64(c.Memory), StopGrace: c.StopGrace.Duration}
	cmd.StopSignal, _ = parseSignal(c.StopSignal) // validated
	for _, f := range c.Files {
		kf := kind.File{Path: f.Path, Data: []byte(f.Content)}
		if f.Mode != "" {
			kf.Mode, _ = parseMode(f.Mode) // validated
		}
		if f.From != "" {
			// Read now: `run --check` then catches a missing file before anything starts.
			b, err := os.ReadFile(resolve(env, f.From))
			if err != nil {
				return kind.Command{}, fmt.Errorf("files (%s): %w", f.Path, err)
			}
			kf.Data = b
		}
		cmd.Files = append(cmd.Files, kf)
	}
	switch r := c.Ready; {
	case r == nil && len(c.Endpoints) > 0:
		cmd.ReadyAddr = "127.0.0.1:" + strconv.Itoa(c.Endpoints[0].Port)
	case r == nil:
	case r.TCP != 0:
		cmd.ReadyAddr = "127.0.0.1:" + strconv.Itoa(r.TCP)
		cmd.Ready = &kind.Ready{Timeout: r.Timeout.Duration}
	case r.HTTP != nil:
		cmd.Ready = &kind.Ready{HTTP: &kind.HTTPProbe{Addr: "127.0.0.1:" + strconv.Itoa(r.HTTP.Port), Path: r.HTTP.Path,
			Status: r.HTTP.Status}, Timeout: r.Timeout.Duration}
	case len(r.Exec) > 0:
		cmd.Ready = &kind.Ready{Exec: r.Exec, Timeout: r.Timeout.Duration}
	case r.Log != "":
		cmd.Ready = &kind.Ready{Log: regexp.MustCompile(r.Log), Timeout: r.Timeout.Duration}
	}
	return cmd, nil
}
