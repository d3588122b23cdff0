package httptarget

import (
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// Flags are `continuum load http`'s flags. The http-load kind renders its command line from the
// same struct (cli.Args), so a flag's name and default are declared once, here.
type Flags struct {
	Config Config
	// Targets are NAME=URL; Services and Hosts are [TARGET=]VALUE (Resolve applies them).
	Targets, Services, Hosts []string
}

// DefaultFlags are the defaults of `continuum load http`: the load engine's, GET, seed 1.
func DefaultFlags() Flags {
	return Flags{Config: Config{Load: loadgen.DefaultConfig(), Method: "GET", Seed: 1, InstanceHeader: InstanceHeader}}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringArrayVar(&f.Targets, "target", f.Targets, "NAME=URL of a series (repeatable)")
	fs.Float64Var(&cfg.Load.Rate, "rate", cfg.Load.Rate, "open loop: requests/s per target")
	fs.IntVar(&cfg.Load.Clients, "clients", cfg.Load.Clients, "closed loop: clients per target (instead of --rate)")
	fs.DurationVar(&cfg.Load.ThinkTime, "think-time", cfg.Load.ThinkTime, "closed loop: pause between a response and the next request")
	fs.DurationVar(&cfg.Load.Duration, "duration", cfg.Load.Duration, "run duration, warm-up included")
	fs.DurationVar(&cfg.Load.Warmup, "warmup", cfg.Load.Warmup, "leading part of the run excluded from stats.json")
	fs.DurationVar(&cfg.Load.Timeout, "timeout", cfg.Load.Timeout, "per-request timeout, from the intended send time")
	fs.StringVar(&cfg.Method, "method", cfg.Method, "HTTP method")
	fs.IntVar(&cfg.BodySize, "body-size", cfg.BodySize, "request body size in bytes")
	fs.IntVar(&cfg.Load.MaxInflight, "max-inflight", cfg.Load.MaxInflight, "open loop: cap on outstanding requests per target")
	fs.StringVar(&cfg.Load.OutDir, "out", cfg.Load.OutDir, "directory for the results files (none written if empty)")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed for the request body content")
	fs.StringArrayVar(&f.Services, "service", f.Services, "[TARGET=]SERVICE: send X-Continuum-Service: SERVICE (to every target, or to TARGET; repeatable)")
	fs.StringArrayVar(&f.Hosts, "host", f.Hosts, "[TARGET=]HOST: send Host: HOST (to every target, or to TARGET; repeatable)")
	fs.StringVar(&cfg.InstanceHeader, "instance-header", cfg.InstanceHeader, "response header that names the serving instance")
	fs.BoolVar(&cfg.NewConnections, "new-connections", cfg.NewConnections, "send every request on a new connection (no keep-alive); response times include its set-up")
	fs.DurationVar(&cfg.Load.QoSLatency, "qos-latency", cfg.Load.QoSLatency, "response-time requirement: report the share of requests that succeed within it (0 = none)")
	fs.DurationSliceVar(&cfg.Load.LatencyBounds, "latency-bound", cfg.Load.LatencyBounds, "with --qos-latency: also count the successes within this bound (repeatable, ascending; e.g. the ranges a report draws)")
}

// Resolve is the Config the flags describe: the targets parsed, each --service and --host
// applied to its target (or to all).
func (f *Flags) Resolve() (Config, error) {
	cfg := f.Config
	cfg.Endpoints = nil
	for _, t := range f.Targets {
		name, url, err := ParseTarget(t)
		if err != nil {
			return cfg, err
		}
		cfg.Endpoints = append(cfg.Endpoints, Endpoint{Name: name, URL: url})
	}
	if err := ApplyPerTarget(cfg.Endpoints, "--service", f.Services, func(e *Endpoint, v string) { e.Service = v }); err != nil {
		return cfg, err
	}
	if err := ApplyPerTarget(cfg.Endpoints, "--host", f.Hosts, func(e *Endpoint, v string) { e.Host = v }); err != nil {
		return cfg, err
	}
	return cfg, nil
}
