package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
)

// ParseFunction reads a function from the --function form: comma-separated key=value pairs,
//
//	name=analytics,handler=python/functions/iot-analytics,mode=http,scaler=rps,max=20
//
// with keys name, handler (or url, a server that runs already), mode, server, replicas, min, max, scaler, rps_threshold,
// rps_window, idle_timeout, exec_timeout, max_inflight, zygote, cpu_threshold, cpu_window,
// cpu_step, cpu_limit, target_concurrency, stable_window, panic_window. The handler is resolved to an absolute
// path.
func ParseFunction(s string) (*Function, error) {
	f := &Function{Mode: faas.ModeHTTP, Server: faas.ServerContinuum}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("function %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "name":
			f.Name = v
		case "handler":
			f.Handler, err = faas.ResolveHandler(v)
		case "url":
			f.URL = v
		case "mode":
			f.Mode = v
		case "server":
			f.Server = v
		case "replicas":
			f.Replicas, err = strconv.Atoi(v)
		case "min":
			f.MinReplicas, err = strconv.Atoi(v)
		case "max":
			f.MaxReplicas, err = strconv.Atoi(v)
		case "scaler":
			f.Scaler = v
		case "rps_threshold":
			f.RPSThreshold, err = strconv.ParseFloat(v, 64)
		case "rps_window":
			f.RPSWindow, err = time.ParseDuration(v)
		case "idle_timeout":
			f.IdleTimeout, err = time.ParseDuration(v)
		case "exec_timeout":
			f.ExecTimeout, err = time.ParseDuration(v)
		case "max_inflight":
			f.MaxInflight, err = strconv.Atoi(v)
		case "zygote":
			f.Zygote, err = strconv.ParseBool(v)
		case "cpu_threshold":
			f.CPUThreshold, err = strconv.ParseFloat(v, 64)
		case "cpu_window":
			f.CPUWindow, err = time.ParseDuration(v)
		case "cpu_step":
			f.CPUStep, err = strconv.Atoi(v)
		case "cpu_limit":
			f.CPULimit, err = strconv.ParseFloat(v, 64)
		case "target_concurrency":
			f.TargetConcurrency, err = strconv.ParseFloat(v, 64)
		case "stable_window":
			f.StableWindow, err = time.ParseDuration(v)
		case "panic_window":
			f.PanicWindow, err = time.ParseDuration(v)
		default:
			return nil, fmt.Errorf("function %q: unknown key %q (want name, handler, url, mode, server, replicas, min, max, scaler, rps_threshold, rps_window, idle_timeout, exec_timeout, max_inflight, zygote, cpu_threshold, cpu_window, cpu_step, cpu_limit, target_concurrency, stable_window, panic_window)", s, k)
		}
		if err != nil {
			return nil, fmt.Errorf("function %q: %s: %w", s, k, err)
		}
	}
	return f, f.Validate()
}

// Format is the --function form of f (ParseFunction's inverse).
func (f *Function) Format() string {
	if f.URL != "" {
		return "name=" + f.Name + ",url=" + f.URL
	}
	parts := []string{"name=" + f.Name, "handler=" + f.Handler, "mode=" + f.Mode, "server=" + f.Server,
		"replicas=" + strconv.Itoa(f.Replicas), "min=" + strconv.Itoa(f.MinReplicas), "max=" + strconv.Itoa(f.MaxReplicas),
		"scaler=" + f.Scaler}
	for _, x := range []struct {
		key string
		v   float64
	}{{"rps_threshold", f.RPSThreshold}, {"cpu_threshold", f.CPUThreshold}, {"cpu_limit", f.CPULimit},
		{"target_concurrency", f.TargetConcurrency}} {
		if x.v > 0 {
			parts = append(parts, x.key+"="+strconv.FormatFloat(x.v, 'g', -1, 64))
		}
	}
	if f.CPUStep > 0 {
		parts = append(parts, "cpu_step="+strconv.Itoa(f.CPUStep))
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"rps_window", f.RPSWindow}, {"idle_timeout", f.IdleTimeout}, {"exec_timeout", f.ExecTimeout},
		{"cpu_window", f.CPUWindow}, {"stable_window", f.StableWindow}, {"panic_window", f.PanicWindow}} {
		if d.d > 0 {
			parts = append(parts, d.key+"="+d.d.String())
		}
	}
	if f.MaxInflight > 0 {
		parts = append(parts, "max_inflight="+strconv.Itoa(f.MaxInflight))
	}
	if f.Zygote {
		parts = append(parts, "zygote=true")
	}
	return strings.Join(parts, ",")
}
