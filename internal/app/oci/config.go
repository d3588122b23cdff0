package oci

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Port is a port an image EXPOSEs.
type Port struct {
	Number   int
	Protocol string // tcp, udp or sctp
}

// Health is an image's HEALTHCHECK (Docker's image config; zero durations and retries mean
// Docker's defaults, which the caller applies).
type Health struct {
	// Test is [NONE] (disabled), [CMD, prog, args...] or [CMD-SHELL, command].
	Test                                          []string
	Interval, Timeout, StartPeriod, StartInterval time.Duration
	Retries                                       int
}

// ImageConfig is what an image's config says about how it runs beyond its process: the ports
// it exposes, its health check, its stop signal and the shell its CMD-SHELL checks run with.
type ImageConfig struct {
	Ports      []Port // sorted by number, then protocol
	Health     *Health
	StopSignal string
	Shell      []string
}

// rawConfig is the part of an image config file read here. It is decoded from the raw JSON
// rather than go-containerregistry's struct because that one lacks Healthcheck.StartInterval.
type rawConfig struct {
	Config struct {
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Healthcheck  *struct {
			Test                                          []string
			Interval, Timeout, StartPeriod, StartInterval int64 // nanoseconds
			Retries                                       int
		} `json:"Healthcheck"`
		StopSignal string   `json:"StopSignal"`
		Shell      []string `json:"Shell"`
	} `json:"config"`
}

// ReadConfig reads img's config.
func ReadConfig(img v1.Image) (*ImageConfig, error) {
	b, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	var raw rawConfig
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	c := &ImageConfig{StopSignal: raw.Config.StopSignal, Shell: raw.Config.Shell}
	if c.Ports, err = ParsePorts(raw.Config.ExposedPorts); err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	if h := raw.Config.Healthcheck; h != nil && len(h.Test) > 0 {
		c.Health = &Health{Test: h.Test, Interval: time.Duration(h.Interval), Timeout: time.Duration(h.Timeout),
			StartPeriod: time.Duration(h.StartPeriod), StartInterval: time.Duration(h.StartInterval), Retries: h.Retries}
	}
	return c, nil
}

// maxExposed bounds the ports one EXPOSE range may give (Docker expands ranges into the config).
const maxExposed = 1024

// ParsePorts reads ExposedPorts keys: "8080/tcp", "53/udp", "8080" (tcp) and ranges
// "7000-7002/tcp".
func ParsePorts(exposed map[string]struct{}) ([]Port, error) {
	seen := map[Port]bool{}
	var out []Port
	for k := range exposed {
		num, proto, ok := strings.Cut(k, "/")
		if !ok {
			proto = "tcp"
		}
		proto = strings.ToLower(proto)
		if proto != "tcp" && proto != "udp" && proto != "sctp" {
			return nil, fmt.Errorf("exposed port %q: protocol %s is not tcp, udp or sctp", k, proto)
		}
		lo, hi, isRange := strings.Cut(num, "-")
		first, err1 := strconv.Atoi(lo)
		last := first
		var err2 error
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || first < 1 || last > 65535 || last < first {
			return nil, fmt.Errorf("exposed port %q: not a port or a range of ports between 1 and 65535", k)
		}
		if last-first >= maxExposed {
			return nil, fmt.Errorf("exposed port %q: a range of more than %d ports", k, maxExposed)
		}
		for n := first; n <= last; n++ {
			if p := (Port{n, proto}); !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Number != out[j].Number {
			return out[i].Number < out[j].Number
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out, nil
}
