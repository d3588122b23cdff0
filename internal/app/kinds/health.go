package kinds

import (
	"fmt"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/app/appcmd"
	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
)

// HealthcheckConfig is a container's health check, as Docker's HEALTHCHECK and Compose's
// healthcheck: fields left out are the image's, then Docker's defaults (interval 30 s, timeout
// 30 s, start period 0, start interval 5 s, retries 3).
type HealthcheckConfig struct {
	// Test is [CMD, prog, args...], [CMD-SHELL, command] or [NONE] (no health check, not even
	// the image's); empty: the image's.
	Test          []string      `yaml:"test"`
	Interval      spec.Duration `yaml:"interval"`
	Timeout       spec.Duration `yaml:"timeout"`
	StartPeriod   spec.Duration `yaml:"start_period"`
	StartInterval spec.Duration `yaml:"start_interval"`
	Retries       int           `yaml:"retries"`
	// Disable turns the image's health check off (as Test [NONE] and Compose's disable: true).
	Disable bool `yaml:"disable"`
}

// Docker's health check defaults.
const (
	defaultHealthInterval      = 30 * time.Second
	defaultHealthTimeout       = 30 * time.Second
	defaultHealthStartInterval = 5 * time.Second
	defaultHealthRetries       = 3
)

// check records every problem of the healthcheck key in errs (nil: none given).
func (h *HealthcheckConfig) check(errs *kind.FieldErrors) {
	if h == nil {
		return
	}
	if err := checkTest(h.Test); err != nil {
		errs.AddErr("healthcheck.test", "", err)
	}
	if h.Disable && len(h.Test) > 0 && h.Test[0] != "NONE" {
		errs.Add("healthcheck.disable", "", "disable and a test: give one")
	}
	for _, d := range []struct {
		key string
		v   spec.Duration
	}{{"interval", h.Interval}, {"timeout", h.Timeout}, {"start_period", h.StartPeriod}, {"start_interval", h.StartInterval}} {
		if d.v.Duration < 0 {
			errs.Add("healthcheck."+d.key, "", "%v: must be positive", d.v)
		}
	}
	if h.Retries < 0 {
		errs.Add("healthcheck.retries", "", "%d: must be positive", h.Retries)
	}
}

func checkTest(t []string) error {
	if len(t) == 0 {
		return nil
	}
	switch t[0] {
	case "NONE":
		if len(t) == 1 {
			return nil
		}
	case "CMD", "CMD-SHELL":
		if len(t) >= 2 && t[1] != "" {
			return nil
		}
	}
	return fmt.Errorf("%q: want [CMD, program, args...], [CMD-SHELL, command] or [NONE]", t)
}

// health is the check a container runs: its config's fields over the image's, Docker's
// defaults for the rest, as `docker run --health-*` over an image's HEALTHCHECK. Nil when
// neither has a test or either disables it.
func (h *HealthcheckConfig) merge(image *oci.Health) *oci.Health {
	var out oci.Health
	if image != nil {
		out = *image
	}
	if h != nil {
		if h.Disable {
			return nil
		}
		if len(h.Test) > 0 {
			out.Test = h.Test
		}
		for _, f := range []struct {
			dst *time.Duration
			src spec.Duration
		}{{&out.Interval, h.Interval}, {&out.Timeout, h.Timeout}, {&out.StartPeriod, h.StartPeriod}, {&out.StartInterval, h.StartInterval}} {
			if f.src.Duration > 0 {
				*f.dst = f.src.Duration
			}
		}
		if h.Retries > 0 {
			out.Retries = h.Retries
		}
	}
	if len(out.Test) == 0 || out.Test[0] == "NONE" {
		return nil
	}
	if out.Interval == 0 {
		out.Interval = defaultHealthInterval
	}
	if out.Timeout == 0 {
		out.Timeout = defaultHealthTimeout
	}
	if out.StartInterval == 0 {
		out.StartInterval = defaultHealthStartInterval
	}
	if out.Retries == 0 {
		out.Retries = defaultHealthRetries
	}
	return &out
}

// healthReady is the readiness a health check gives: the test run inside the container
// (container-exec, in the instance's directory as container-run) with its timeout, tried at
// its interval (start interval within the start period) until it passes, given up after
// retries failures in a row after the start period, when Docker calls the container unhealthy.
// Unlike Docker the first try is at once, not one interval after the start.
func healthReady(env kind.Env, h *oci.Health, shell []string) *kind.Ready {
	argv := h.Test[1:]
	if h.Test[0] == "CMD-SHELL" {
		if len(shell) == 0 {
			shell = []string{"/bin/sh", "-c"}
		}
		argv = append(append([]string{}, shell...), strings.Join(h.Test[1:], " "))
	}
	ef := appcmd.DefaultExecFlags()
	ef.ID, ef.Timeout = env.Instance, h.Timeout
	probe := append([]string{env.Binary, "container-exec"}, cli.Args(appcmd.DefaultExecFlags(), ef)...)
	return &kind.Ready{Exec: append(append(probe, "--"), argv...), ExecInside: argv,
		Interval: h.Interval, StartInterval: h.StartInterval, StartPeriod: h.StartPeriod, Retries: h.Retries,
		// container-exec kills the test at its timeout; this only bounds a container-exec that hangs.
		TryTimeout: h.Timeout + 10*time.Second}
}
