package kinds

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/faascmd"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[GatewayConfig]{
		Name:    "faas-gateway",
		System:  "faas",
		Stacks:  []string{"functions"},
		Role:    kind.RoleComponent,
		Summary: "function gateway: /function/NAME routed to instances it starts on its node (one core each), scaled by hand, by rps or to zero",
		Defaults: func() *GatewayConfig {
			return &GatewayConfig{Port: 8080, InstancePort: gateway.DefaultBasePort, InstanceCPUs: 1}
		},
		Validate:  (*GatewayConfig).validate,
		Command:   gatewayCommand,
		Endpoints: func(c *GatewayConfig) []kind.Endpoint { return httpEndpoint(c.Port) },
		Metrics:   gatewayMetrics,
		Set:       gatewaySet,
	})
}

// GatewayConfig is the `config:` of a faas-gateway.
type GatewayConfig struct {
	Port int `yaml:"port"` // default 8080
	// InstancePort is the first loopback port instances listen on (default 18080).
	InstancePort int `yaml:"instance_port"`
	// InstanceCPUs limits each instance (default 1 core; 0 = unlimited).
	InstanceCPUs float64           `yaml:"instance_cpus"`
	Functions    []GatewayFunction `yaml:"functions"`
}

// GatewayFunction is one function the gateway serves (see gateway.Function).
type GatewayFunction struct {
	Name         string        `yaml:"name"`
	Handler      string        `yaml:"handler"`
	Mode         string        `yaml:"mode"`   // classic or http (default)
	Server       string        `yaml:"server"` // http mode's upstream: continuum (default) or flask
	Replicas     int           `yaml:"replicas"`
	Min          int           `yaml:"min"`
	Max          int           `yaml:"max"` // default 20
	Scaler       string        `yaml:"scaler"`
	RPSThreshold float64       `yaml:"rps_threshold"`
	RPSWindow    spec.Duration `yaml:"rps_window"`
	IdleTimeout  spec.Duration `yaml:"idle_timeout"`
	ExecTimeout  spec.Duration `yaml:"exec_timeout"`
	MaxInflight  int           `yaml:"max_inflight"`
	Zygote       bool          `yaml:"zygote"`
	// KeyFile makes /function/NAME need "Authorization: Bearer KEY", KEY being the file's text.
	KeyFile string `yaml:"key_file"`
	// cpu scaler (seeds/001's Micro_s: 0.85, 60s, +4) and concurrency scaler (Knative KPA).
	CPUThreshold      float64       `yaml:"cpu_threshold"`
	CPUWindow         spec.Duration `yaml:"cpu_window"`
	CPUStep           int           `yaml:"cpu_step"`
	TargetConcurrency float64       `yaml:"target_concurrency"`
	StableWindow      spec.Duration `yaml:"stable_window"`
	PanicWindow       spec.Duration `yaml:"panic_window"`
}

func (f GatewayFunction) function() *gateway.Function {
	fn := &gateway.Function{Name: f.Name, Handler: f.Handler, Mode: f.Mode, Server: f.Server, Replicas: f.Replicas,
		MinReplicas: f.Min, MaxReplicas: f.Max, Scaler: f.Scaler, RPSThreshold: f.RPSThreshold, RPSWindow: f.RPSWindow.Duration,
		IdleTimeout: f.IdleTimeout.Duration, ExecTimeout: f.ExecTimeout.Duration, MaxInflight: f.MaxInflight,
		Zygote: f.Zygote, CPUThreshold: f.CPUThreshold, CPUWindow: f.CPUWindow.Duration, CPUStep: f.CPUStep,
		TargetConcurrency: f.TargetConcurrency, StableWindow: f.StableWindow.Duration, PanicWindow: f.PanicWindow.Duration,
		KeyFile: f.KeyFile}
	if fn.Mode == "" {
		fn.Mode = faas.ModeHTTP
	}
	if fn.Server == "" {
		fn.Server = faas.ServerContinuum
	}
	return fn
}

// validate reports every problem at once, each with its key and the `continuum faas gateway`
// flag it becomes. A function's own settings (gateway.Function.Validate) are reported at the
// function, the first problem of each.
func (c *GatewayConfig) validate() error {
	var errs kind.FieldErrors
	if len(c.Functions) == 0 {
		errs.Add("functions", "--function", "list the functions the gateway serves (name, handler, ...)")
	}
	if c.InstanceCPUs < 0 {
		errs.Add("instance_cpus", "--instance-cpus", "%g: want >= 0 (0 = unlimited)", c.InstanceCPUs)
	}
	errs.CheckPort("instance_port", "--instance-port", c.InstancePort)
	seen := map[string]bool{}
	for i, f := range c.Functions {
		at := fmt.Sprintf("functions[%d]", i)
		fn := f.function()
		errs.AddErr(at, "--function", fn.Validate())
		errs.AddErr(at+".server", "--function", checkServer(fn.Server))
		if seen[fn.Name] {
			errs.Add(at+".name", "--function", "%s named twice", fn.Name)
		}
		seen[fn.Name] = true
	}
	errs.CheckPort("port", "--listen", c.Port)
	return errs.Err()
}

func gatewayCommand(env kind.Env, c *GatewayConfig) (kind.Command, error) {
	instances, err := gateway.PlatformClient(env.Platform)
	if err != nil {
		return kind.Command{}, fmt.Errorf("faas-gateway %s: %w", env.Instance, err)
	}
	flags := faascmd.DefaultGatewayFlags()
	flags.Listen = ":" + strconv.Itoa(c.Port)
	flags.Platform, flags.Node, flags.Name = env.Platform, env.Node, env.Instance
	flags.LogDir, flags.OutDir = filepath.Join(env.OutDir, "instances"), env.OutDir
	flags.InstanceCPUs, flags.InstancePort = c.InstanceCPUs, c.InstancePort
	// Each run's gateway generates its own credentials on its first start, into its output
	// directory (secrets/, 0600): nothing carries over between runs, and whatever in the run
	// calls /system/ reads them there (SecretDir(env.OutDir)). A restart (the restart fault)
	// finds and reuses them.
	flags.DataDir = env.OutDir
	for _, f := range c.Functions {
		fn := f.function()
		h, err := faas.ResolveHandler(fn.Handler)
		if err != nil {
			return kind.Command{}, fmt.Errorf("faas-gateway %s: function %s: %w", env.Instance, fn.Name, err)
		}
		fn.Handler = h
		if c.InstanceCPUs > 0 {
			fn.CPULimit = c.InstanceCPUs // the cpu scaler's 100%
		}
		if err := fn.Validate(); err != nil {
			return kind.Command{}, err
		}
		if err := gateway.CheckZygote(instances, env.Node, fn); err != nil {
			return kind.Command{}, fmt.Errorf("faas-gateway %s: %w", env.Instance, err)
		}
		flags.Functions = append(flags.Functions, fn.Format())
	}
	args := append([]string{env.Binary, "faas", "gateway"}, cli.Args(faascmd.DefaultGatewayFlags(), flags)...)
	cmd := kind.Command{Args: args, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port)}
	if slices.ContainsFunc(c.Functions, func(f GatewayFunction) bool { return f.Handler != "" }) {
		// The instances it starts find Python through it (see functionCommand).
		py, err := faas.FindPython()
		if err != nil {
			return kind.Command{}, fmt.Errorf("faas-gateway %s: %w", env.Instance, err)
		}
		cmd.Env = py.LocateEnv()
	}
	return cmd, nil
}

// gatewayMetrics reads each gateway's gateway.json: faas/<gateway>/<function>.
func gatewayMetrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	samples, _ := results.ReadSamples(out.Samples)
	for _, in := range out.Instances {
		var r map[string]gateway.FunctionReport
		if results.ReadJSON(filepath.Join(in.OutDir, gateway.ReportFile), &r) != nil {
			continue
		}
		for fn, f := range r {
			fields := map[string]float64{
				"invocations": float64(f.Invocations), "cold_starts": float64(f.ColdStarts),
				"scale_events": float64(f.ScaleEvents), "max_ready": float64(f.MaxReady), "mean_ready": f.MeanReady,
			}
			for k, v := range instanceResources(samples, in.Name, fn) {
				fields[k] = v
			}
			m["faas/"+in.Name+"/"+fn] = fields
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// instanceResources sums, per sample time, the CPU and memory of a gateway's instances of fn
// (processes <gateway>-<fn>-<n>) and of its zygote (<gateway>-zygote-<fn>): the function's
// cost summed over its instances, as seeds/001 reports it. cpu_pct is the mean over the run
// (% of one core), rss_mib the mean and rss_mib_max the largest sum.
func instanceResources(samples []results.Sample, gw, fn string) map[string]float64 {
	inst, zyg := gw+"-"+fn+"-", gw+"-zygote-"+fn
	type sum struct{ cpu, rss float64 }
	byT := map[float64]*sum{}
	for _, s := range samples {
		if s.Component != zyg && !(strings.HasPrefix(s.Component, inst) && isDigits(s.Component[len(inst):])) {
			continue
		}
		x := byT[s.T]
		if x == nil {
			x = &sum{}
			byT[s.T] = x
		}
		x.cpu += s.CPUUtil
		x.rss += s.RSSBytes
	}
	if len(byT) == 0 {
		return nil
	}
	var cpu, rss, rssMax float64
	for _, x := range byT {
		cpu += x.cpu
		rss += x.rss
		rssMax = max(rssMax, x.rss)
	}
	n := float64(len(byT))
	return map[string]float64{"cpu_pct": 100 * cpu / n, "rss_mib": rss / n / (1 << 20), "rss_mib_max": rssMax / (1 << 20)}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
