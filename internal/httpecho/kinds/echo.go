package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/httpecho/httpechocmd"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[EchoConfig]{
		Name:     "http-echo",
		System:   "httpecho",
		Doc:      "docs/scenarios.md#instances-components-workloads",
		Role:     kind.RoleComponent,
		Summary:  "HTTP echo server with a processing delay, CPU work and response size changeable at run time",
		Defaults: func() *EchoConfig { return &EchoConfig{Port: 8080} },
		Validate: (*EchoConfig).validate,
		Command:  echoCommand,
		Endpoints: func(c *EchoConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
		Set: echoSet,
	})
}

// EchoConfig is the `config:` of an http-echo component.
type EchoConfig struct {
	Port         int           `yaml:"port"`          // default 8080
	Delay        spec.Duration `yaml:"delay"`         // processing delay per request
	CPUWork      spec.Duration `yaml:"cpu_work"`      // CPU time burnt per request
	ResponseSize spec.Bytes    `yaml:"response_size"` // exact body size; 0 = a short message
}

// Limits mirror httpecho.Settings.Validate, checked here so a scenario fails at load time.
const (
	echoMaxDelay        = 10 * time.Minute
	echoMaxCPUWork      = time.Minute
	echoMaxResponseSize = 64 << 20
)

// validate reports every problem at once, each with its key and the `continuum echo` flag it
// becomes.
func (c *EchoConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "--listen", c.Port)
	if c.Delay.Duration < 0 || c.Delay.Duration > echoMaxDelay {
		errs.Add("delay", "--delay", "%v: must be between 0s and %v", c.Delay, echoMaxDelay)
	}
	if c.CPUWork.Duration < 0 || c.CPUWork.Duration > echoMaxCPUWork {
		errs.Add("cpu_work", "--cpu-work", "%v: must be between 0s and %v", c.CPUWork, echoMaxCPUWork)
	}
	if c.ResponseSize < 0 || c.ResponseSize > echoMaxResponseSize {
		errs.Add("response_size", "--response-size", "%d: must be between 0 and 64Mi bytes", c.ResponseSize)
	}
	return errs.Err()
}

func echoCommand(env kind.Env, c *EchoConfig) (kind.Command, error) {
	port := strconv.Itoa(c.Port)
	f := httpechocmd.DefaultFlags()
	f.Config.Listen, f.Config.Name = ":"+port, env.Instance
	f.Config.Settings.Delay, f.Config.Settings.CPUWork, f.Config.Settings.ResponseSize = c.Delay.Duration, c.CPUWork.Duration, int(c.ResponseSize)
	return kind.Command{Args: append([]string{env.Binary, "echo"}, cli.Args(httpechocmd.DefaultFlags(), f)...), ReadyAddr: "127.0.0.1:" + port}, nil
}

// echoChange is what a "set" event may change; pointers tell absent fields from zeros.
type echoChange struct {
	Delay        *spec.Duration `yaml:"delay"`
	CPUWork      *spec.Duration `yaml:"cpu_work"`
	ResponseSize *spec.Bytes    `yaml:"response_size"`
}

// echoSet sends the change to the instance's PUT /admin/config, from inside its node.
func echoSet(ctx context.Context, env kind.Env, c *EchoConfig, change *yaml.Node) error {
	var ch echoChange
	if err := spec.DecodeAt("", "config", change, &ch); err != nil {
		return fmt.Errorf("http-echo %s: %w", env.Instance, err)
	}
	body := map[string]any{}
	next := *c
	if ch.Delay != nil {
		body["delay"], next.Delay = ch.Delay.String(), *ch.Delay
	}
	if ch.CPUWork != nil {
		body["cpu_work"], next.CPUWork = ch.CPUWork.String(), *ch.CPUWork
	}
	if ch.ResponseSize != nil {
		body["response_size"], next.ResponseSize = int64(*ch.ResponseSize), *ch.ResponseSize
	}
	if len(body) == 0 {
		return fmt.Errorf("http-echo %s: set needs at least one of delay, cpu_work, response_size", env.Instance)
	}
	if err := next.validate(); err != nil {
		return fmt.Errorf("http-echo %s: %w", env.Instance, err)
	}
	addr, ok := env.Nodes[env.Node]
	if !ok {
		return fmt.Errorf("http-echo %s: node %q has no address", env.Instance, env.Node)
	}
	payload, _ := json.Marshal(body)
	u := "http://" + net.JoinHostPort(addr, strconv.Itoa(c.Port)) + "/admin/config"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	dial := env.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("http-echo %s: PUT %s: %w", env.Instance, u, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("http-echo %s: PUT %s: %s: %s", env.Instance, u, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
