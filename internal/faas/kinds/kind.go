// Package kinds registers the function platform's components for experiments: `faas-function`
// (one instance of a python3-http handler behind Continuum's watchdog, classic or http mode)
// and `faas-microservice` (the same handler in a long-lived server exposed directly, the seed's
// Flask + Waitress by default), each limited to one core by default as seeds/001 runs them.
package kinds

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/faascmd"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[FunctionConfig]{
		Name:     "faas-function",
		System:   "faas",
		OldNames: []string{"function"},
		Stacks:   []string{"functions"},
		Role:     kind.RoleComponent,
		Summary:  "one instance of a python3-http handler behind Continuum's watchdog: mode classic (a process per request) or http (one reused upstream process)",
		Defaults: func() *FunctionConfig {
			return &FunctionConfig{Mode: faas.ModeHTTP, Server: faas.ServerContinuum, Port: 8080, CPUs: 1,
				ExecTimeout: spec.Duration{Duration: watchdog.DefaultExecTimeout}}
		},
		Validate:  (*FunctionConfig).validate,
		Command:   functionCommand,
		Endpoints: func(c *FunctionConfig) []kind.Endpoint { return httpEndpoint(c.Port) },
	})
	kind.Register(kind.Def[MicroConfig]{
		Name:      "faas-microservice",
		System:    "faas",
		OldNames:  []string{"microservice"},
		Stacks:    []string{"functions"},
		Role:      kind.RoleComponent,
		Summary:   "a python3-http handler in a long-lived server exposed directly (Tusa et al.'s microservice: Flask + Waitress, one thread)",
		Defaults:  func() *MicroConfig { return &MicroConfig{Server: faas.ServerFlask, Port: 8080, CPUs: 1} },
		Validate:  (*MicroConfig).validate,
		Command:   microCommand,
		Endpoints: func(c *MicroConfig) []kind.Endpoint { return httpEndpoint(c.Port) },
	})
}

func httpEndpoint(port int) []kind.Endpoint {
	return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: port}}
}

// FunctionConfig is the `config:` of a function instance.
type FunctionConfig struct {
	// Handler is the function folder (with handler.py), relative to the clone or absolute.
	Handler string `yaml:"handler"`
	Mode    string `yaml:"mode"`   // classic or http (default)
	Server  string `yaml:"server"` // http mode's upstream: continuum (default) or flask
	Port    int    `yaml:"port"`   // default 8080
	// CPUs limits the instance (watchdog and function processes) to that many cores; default
	// 1, 0 = unlimited.
	CPUs        float64       `yaml:"cpus"`
	ExecTimeout spec.Duration `yaml:"exec_timeout"` // default 60s
	MaxInflight int           `yaml:"max_inflight"` // 0 = no limit
	// Zygote forks the http upstream, or each classic request's process, from a process that
	// imported the handler once (no interpreter start, no imports per process).
	Zygote bool `yaml:"zygote"`
}

// validate reports every problem at once, each with its key and the `continuum faas watchdog`
// flag it becomes.
func (c *FunctionConfig) validate() error {
	var errs kind.FieldErrors
	if !slices.Contains([]string{faas.ModeClassic, faas.ModeHTTP}, c.Mode) {
		errs.Add("mode", "--mode", "%q: want %s or %s (the microservice kind runs %s)", c.Mode, faas.ModeClassic, faas.ModeHTTP, faas.ModeMicro)
	}
	errs.AddErr("server", "--server", checkServer(c.Server))
	checkCommon(&errs, c.Handler, "--handler", c.Port, "--listen", c.CPUs)
	if c.ExecTimeout.Duration <= 0 {
		errs.Add("exec_timeout", "--exec-timeout", "%v: want > 0", c.ExecTimeout)
	}
	if c.MaxInflight < 0 {
		errs.Add("max_inflight", "--max-inflight", "%d: want >= 0 (0: no limit)", c.MaxInflight)
	}
	return errs.Err()
}

// checkServer is nil for an upstream server the kinds run.
func checkServer(s string) error {
	if s != faas.ServerContinuum && s != faas.ServerFlask {
		return fmt.Errorf("%q: want %s or %s", s, faas.ServerContinuum, faas.ServerFlask)
	}
	return nil
}

// checkCommon records the problems of the keys the function and microservice kinds share, with
// the flags handler and port become in the command each starts.
func checkCommon(errs *kind.FieldErrors, handler, handlerFlag string, port int, portFlag string, cpus float64) {
	if handler == "" {
		errs.Add("handler", handlerFlag, "required: name the function folder, e.g. python/functions/iot-analytics")
	}
	if cpus < 0 {
		errs.Add("cpus", "", "%g: want >= 0 (0 = unlimited)", cpus)
	}
	errs.CheckPort("port", portFlag, port)
}

func functionCommand(env kind.Env, c *FunctionConfig) (kind.Command, error) {
	h, err := faas.ResolveHandler(c.Handler)
	if err != nil {
		return kind.Command{}, fmt.Errorf("function %s: %w", env.Instance, err)
	}
	// Found here, in the runner's clone, and handed on: the watchdog runs in the instance's
	// results directory, perhaps from a binary outside the clone.
	py, err := faas.FindPython()
	if err != nil {
		return kind.Command{}, fmt.Errorf("function %s: %w", env.Instance, err)
	}
	port := strconv.Itoa(c.Port)
	f := faascmd.DefaultWatchdogFlags()
	f.Mode, f.Handler, f.Server, f.Listen = c.Mode, h, c.Server, ":"+port
	f.ExecTimeout, f.MaxInflight, f.StartZygote = c.ExecTimeout.Duration, c.MaxInflight, c.Zygote
	return kind.Command{
		Env:       py.LocateEnv(),
		Args:      append([]string{env.Binary, "faas", "watchdog"}, cli.Args(faascmd.DefaultWatchdogFlags(), f)...),
		CPUs:      c.CPUs,
		ReadyAddr: "127.0.0.1:" + port,
	}, nil
}

// MicroConfig is the `config:` of a microservice instance.
type MicroConfig struct {
	Handler string  `yaml:"handler"`
	Server  string  `yaml:"server"` // flask (default: Flask + Waitress, one thread) or continuum
	Port    int     `yaml:"port"`   // default 8080
	CPUs    float64 `yaml:"cpus"`   // default 1, 0 = unlimited
	// ExecTimeout, with server continuum, answers 504 to a handler running longer (Flask +
	// Waitress, the seed's microservice, has no such limit). 0: none.
	ExecTimeout spec.Duration `yaml:"exec_timeout"`
}

// validate reports every problem at once, each with its key and the flag of the Python server
// it becomes (the handler is its argument).
func (c *MicroConfig) validate() error {
	var errs kind.FieldErrors
	errs.AddErr("server", "", checkServer(c.Server))
	if c.ExecTimeout.Duration < 0 || c.ExecTimeout.Duration > 0 && c.Server == faas.ServerFlask {
		errs.Add("exec_timeout", "--exec-timeout", "%v: Flask + Waitress cannot stop a handler; use server: continuum for a limit", c.ExecTimeout)
	}
	checkCommon(&errs, c.Handler, "", c.Port, "--port", c.CPUs)
	return errs.Err()
}

func microCommand(env kind.Env, c *MicroConfig) (kind.Command, error) {
	h, err := faas.ResolveHandler(c.Handler)
	if err != nil {
		return kind.Command{}, fmt.Errorf("microservice %s: %w", env.Instance, err)
	}
	py, err := faas.FindPython()
	if err != nil {
		return kind.Command{}, fmt.Errorf("microservice %s: %w", env.Instance, err)
	}
	args, err := py.ServerArgs(c.Server, h, "0.0.0.0", c.Port, c.ExecTimeout.Duration)
	if err != nil {
		return kind.Command{}, err
	}
	return kind.Command{Args: args, Env: py.Env(), CPUs: c.CPUs, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port)}, nil
}
