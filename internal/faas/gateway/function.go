package gateway

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
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
)

// Function is what the gateway serves under /function/NAME.
type Function struct {
	Name    string
	Handler string // function folder (absolute)
	Mode    string // classic or http
	Server  string // http mode's upstream server
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
	// Zygote (http mode) forks new instances' upstreams from a process that has imported the
	// handler once, instead of starting an interpreter per instance: fast cold starts.
	Zygote bool
}

var functionName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate checks the function and fills defaults.
func (f *Function) Validate() error {
	if !functionName.MatchString(f.Name) {
		return fmt.Errorf("function name %q: want lower-case letters, digits and '-', up to 63 (a DNS label, as OpenFaaS)", f.Name)
	}
	if f.Handler == "" {
		return fmt.Errorf("function %s: no handler", f.Name)
	}
	if f.Mode != faas.ModeClassic && f.Mode != faas.ModeHTTP {
		return fmt.Errorf("function %s: mode %q: want %s or %s", f.Name, f.Mode, faas.ModeClassic, faas.ModeHTTP)
	}
	if f.Zygote && f.Mode != faas.ModeHTTP {
		return fmt.Errorf("function %s: zygote serves the http mode, not %s", f.Name, f.Mode)
	}
	if f.Scaler == "" {
		f.Scaler = ScalerNone
	}
	if !slices.Contains([]string{ScalerNone, ScalerRPS}, f.Scaler) {
		return fmt.Errorf("function %s: scaler %q: want %s or %s", f.Name, f.Scaler, ScalerNone, ScalerRPS)
	}
	if f.MaxReplicas == 0 {
		f.MaxReplicas = 20
	}
	switch {
	case f.MinReplicas < 0 || f.MaxReplicas < 1 || f.MinReplicas > f.MaxReplicas:
		return fmt.Errorf("function %s: replicas min %d, max %d: want 0 <= min <= max, max >= 1", f.Name, f.MinReplicas, f.MaxReplicas)
	case f.IdleTimeout < 0 || f.ExecTimeout < 0 || f.RPSThreshold < 0 || f.RPSWindow < 0 || f.MaxInflight < 0:
		return fmt.Errorf("function %s: timeouts, thresholds and limits must be >= 0", f.Name)
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
	return nil
}

var errNoInstance = errors.New("no instance became ready in time")
