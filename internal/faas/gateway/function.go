package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
)

// Autoscalers a function can use.
const (
	ScalerNone = "none"
	// ScalerRPS is OpenFaaS CE's: while the function gets more than RPSThreshold requests per
	// second over RPSWindow, add 20% of MaxReplicas every RPSWindow; once it stays below, go
	// back to MinReplicas.
	ScalerRPS = "rps"
	// ScalerCPU is seeds/001's Micro_s: while the instances' mean CPU stays above
	// CPUThreshold (of their limit) for CPUWindow, add CPUStep instances; once it stays below
	// half the threshold for a window, shrink to what would run at the threshold.
	ScalerCPU = "cpu"
	// ScalerConcurrency is Knative's KPA: wanted = requests under way (mean over
	// StableWindow) / (TargetConcurrency x 0.7); when the mean over PanicWindow asks for twice
	// the ready instances, scale up at once and do not scale down until the panic passes.
	ScalerConcurrency = "concurrency"
)

// Scalers lists them, for error messages.
var Scalers = []string{ScalerNone, ScalerRPS, ScalerCPU, ScalerConcurrency}

// Function is what the gateway serves under /function/NAME.
type Function struct {
	Name    string
	Handler string // function folder (absolute)
	// URL, instead of a handler, routes the function to a server that runs already (one
	// instance the gateway neither starts nor scales: a service in front of which the gateway
	// only counts and routes).
	URL    string
	Mode   string // classic or http
	Server string // http mode's upstream server
	// ExecTimeout bounds a request in an instance; it also bounds how long a request waits
	// for an instance when there is none (scale from zero).
	ExecTimeout time.Duration
	MaxInflight int // per instance; 0 = no limit
	// MinReplicas (0 allows scale to zero) and MaxReplicas bound the instances; Replicas is
	// how many to start with (default MinReplicas, at least 1 unless IdleTimeout allows 0).
	MinReplicas, MaxReplicas, Replicas int
	Scaler                             string
	RPSThreshold                       float64       // rps scaler: default 5
	RPSWindow                          time.Duration // rps scaler: default 5 s
	// IdleTimeout, if > 0 and MinReplicas is 0, scales the function to zero after that long
	// without a request.
	IdleTimeout time.Duration
	// cpu scaler: threshold as a share of an instance's CPU limit (default 0.85), window
	// (default 60 s), step (default 4), and the limit in cores (default 1).
	CPUThreshold float64
	CPUWindow    time.Duration
	CPUStep      int
	CPULimit     float64
	// concurrency scaler: target requests under way per instance (default 1: Python
	// instances serve one at a time), stable and panic windows (default 60 s and 6 s).
	TargetConcurrency         float64
	StableWindow, PanicWindow time.Duration
	// Zygote forks new instances' upstreams (http) or each request's process (classic) from a
	// process that has imported the handler once, instead of starting an interpreter: fast
	// cold starts, and a classic mode without the exec.
	Zygote bool
	// KeyFile, if set, holds a key that callers of /function/NAME must send as
	// "Authorization: Bearer KEY" (the gateway checks it and does not pass the header on).
	// Without it the function is public, as on OpenFaaS.
	KeyFile string
}

var functionName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate checks the function and fills defaults.
func (f *Function) Validate() error {
	if !functionName.MatchString(f.Name) {
		return fmt.Errorf("function name %q: want lower-case letters, digits and '-', up to 63 (a DNS label, as OpenFaaS)", f.Name)
	}
	if f.URL != "" {
		if f.Handler != "" || f.Scaler != "" && f.Scaler != ScalerNone || f.IdleTimeout > 0 {
			return fmt.Errorf("function %s: url is a running server: no handler, scaler or idle_timeout with it", f.Name)
		}
		if u, err := url.Parse(f.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("function %s: url %q: want http://host:port", f.Name, f.URL)
		}
		f.Scaler, f.MinReplicas, f.MaxReplicas, f.Replicas = ScalerNone, 1, 1, 1
	} else if f.Handler == "" {
		return fmt.Errorf("function %s: no handler (or url)", f.Name)
	}
	if f.URL == "" && f.Mode != faas.ModeClassic && f.Mode != faas.ModeHTTP {
		return fmt.Errorf("function %s: mode %q: want %s or %s", f.Name, f.Mode, faas.ModeClassic, faas.ModeHTTP)
	}
	if f.Scaler == "" {
		f.Scaler = ScalerNone
	}
	if !slices.Contains(Scalers, f.Scaler) {
		return fmt.Errorf("function %s: scaler %q: want one of %s", f.Name, f.Scaler, strings.Join(Scalers, ", "))
	}
	if f.CPUThreshold < 0 || f.CPUThreshold > 1 || f.CPUWindow < 0 || f.CPUStep < 0 || f.CPULimit < 0 ||
		f.TargetConcurrency < 0 || f.StableWindow < 0 || f.PanicWindow < 0 {
		return fmt.Errorf("function %s: cpu_threshold must be in 0..1; windows, steps and targets >= 0", f.Name)
	}
	if f.MaxReplicas == 0 {
		f.MaxReplicas = 20
	}
	switch {
	case f.MinReplicas < 0 || f.MaxReplicas < 1 || f.MinReplicas > f.MaxReplicas:
		return fmt.Errorf("function %s: replicas min %d, max %d: want 0 <= min <= max, max >= 1", f.Name, f.MinReplicas, f.MaxReplicas)
	case f.IdleTimeout < 0 || f.ExecTimeout < 0 || f.RPSThreshold < 0 || f.RPSWindow < 0 || f.MaxInflight < 0:
		return fmt.Errorf("function %s: timeouts, thresholds and limits must be >= 0", f.Name)
	case f.RPSWindow > maxCountedWindow:
		return fmt.Errorf("function %s: rps_window %v: at most %v (the gateway counts requests over the last minute)", f.Name, f.RPSWindow, maxCountedWindow)
	case f.IdleTimeout > 0 && f.MinReplicas > 0:
		return fmt.Errorf("function %s: idle_timeout scales to zero: it needs min replicas 0, not %d", f.Name, f.MinReplicas)
	case f.Replicas < 0 || f.Replicas > f.MaxReplicas:
		return fmt.Errorf("function %s: replicas %d: want 0..%d", f.Name, f.Replicas, f.MaxReplicas)
	}
	if f.Replicas < f.MinReplicas {
		f.Replicas = f.MinReplicas
	}
	if f.Replicas == 0 && f.IdleTimeout == 0 {
		f.Replicas = 1
	}
	if f.ExecTimeout == 0 {
		f.ExecTimeout = time.Minute
	}
	if f.RPSThreshold == 0 {
		f.RPSThreshold = 5
	}
	if f.RPSWindow == 0 {
		f.RPSWindow = 5 * time.Second
	}
	defaults := []struct {
		v *float64
		d float64
	}{{&f.CPUThreshold, 0.85}, {&f.CPULimit, 1}, {&f.TargetConcurrency, 1}}
	for _, d := range defaults {
		if *d.v == 0 {
			*d.v = d.d
		}
	}
	if f.CPUWindow == 0 {
		f.CPUWindow = time.Minute
	}
	if f.CPUStep == 0 {
		f.CPUStep = 4
	}
	if f.StableWindow == 0 {
		f.StableWindow = time.Minute
	}
	if f.PanicWindow == 0 {
		f.PanicWindow = f.StableWindow / 10
	}
	return nil
}

var errNoInstance = errors.New("no instance became ready in time")
