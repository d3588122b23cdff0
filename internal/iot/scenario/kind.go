// Package scenario registers the IoT emulator (package iot) as the workload `iot`: gateways
// whose adaptors POST batches of device messages to a component's http endpoint (a function,
// a microservice, a gateway) or to a URL, measuring t_rr and t_ex per batch.
package scenario

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/iot"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(&kind.Kind{
		Name:    "iot",
		Role:    kind.RoleWorkload,
		Summary: "IoT devices, gateways and batching adaptors (seeds/001) POSTing JSON batches to a component; series t_rr and t_ex",
		NewConfig: func() any {
			return &Config{Path: "/", Gateways: 1, Devices: 1000, Rate: 4, Batch: 4000, Timeout: spec.Duration{Duration: time.Minute}}
		},
		Validate: func(cfg any) error { return cfg.(*Config).validate() },
		Command:  command,
		Overrun:  func(cfg any) time.Duration { return cfg.(*Config).Timeout.Duration + 30*time.Second },
		Metrics:  metrics,
	})
}

// Config is the `config:` of an iot workload.
type Config struct {
	// Target is the component batches go to (its http endpoint, at Path); URL replaces both.
	Target string `yaml:"target,omitempty"`
	Path   string `yaml:"path"`
	URL    string `yaml:"url,omitempty"`
	// The seed's settings (Table 1): g, d, r_m, b_s.
	Gateways int     `yaml:"gateways"`
	Devices  int     `yaml:"devices"`
	Rate     float64 `yaml:"rate"`
	Batch    int     `yaml:"batch"`
	// Invalid is the share of messages made invalid (default 0, as the seed).
	Invalid     float64       `yaml:"invalid"`
	Timeout     spec.Duration `yaml:"timeout"` // per batch from when it was due; default 60s
	MaxInflight int           `yaml:"max_inflight"`
}

func (c *Config) validate() error {
	if (c.Target == "") == (c.URL == "") {
		return errors.New("name exactly one of target (a component with an http endpoint) and url")
	}
	if !strings.HasPrefix(c.Path, "/") {
		return fmt.Errorf("path %q: must start with /", c.Path)
	}
	url := c.URL
	if url == "" {
		url = "http://target" + c.Path // the component's address is known when the run starts
	}
	cfg := c.emulator(url, time.Minute)
	return cfg.Validate()
}

func (c *Config) emulator(url string, d time.Duration) iot.Config {
	return iot.Config{Target: url, Gateways: c.Gateways, Devices: c.Devices, Rate: c.Rate, Batch: c.Batch,
		Invalid: c.Invalid, Timeout: c.Timeout.Duration, MaxInflight: c.MaxInflight, Duration: d}
}

func command(env kind.Env, cfg any) (kind.Command, error) {
	c := cfg.(*Config)
	url := c.URL
	if url == "" {
		node, ep, err := env.Endpoint(c.Target, 0, kind.ProtocolHTTP)
		if err != nil {
			return kind.Command{}, fmt.Errorf("iot %s: %w", env.Instance, err)
		}
		url = "http://" + net.JoinHostPort(env.NodeHost(node), strconv.Itoa(ep.Port)) + c.Path
	}
	return kind.Command{Args: []string{env.Binary, "iot", "--target", url,
		"--gateways", strconv.Itoa(c.Gateways), "--devices", strconv.Itoa(c.Devices),
		"--rate", strconv.FormatFloat(c.Rate, 'g', -1, 64), "--batch", strconv.Itoa(c.Batch),
		"--invalid", strconv.FormatFloat(c.Invalid, 'g', -1, 64), "--timeout", c.Timeout.String(),
		"--max-inflight", strconv.Itoa(c.MaxInflight), "--seed", strconv.FormatInt(env.Seed, 10),
		"--duration", env.Duration.String(), "--warmup", env.Warmup.String(), "--out", env.OutDir}}, nil
}

// metrics reads every instance's iot.json: iot/<instance>.
func metrics(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var r iot.Report
		if results.ReadJSON(filepath.Join(in.OutDir, iot.ReportFile), &r) != nil {
			continue
		}
		m["iot/"+in.Name] = map[string]float64{
			"batches_due": float64(r.BatchesDue), "batches_sent": float64(r.BatchesSent), "batches_ok": float64(r.BatchesOK),
			"batches_dropped": float64(r.BatchesDropped), "messages_sent": float64(r.MessagesSent),
			"bytes_sent": float64(r.BytesSent), "bad_replies": float64(r.BadReplies),
			"messages_per_s": r.MessagesPerS, "cpu_cores": r.CPUCores, "interval_ms": r.IntervalMS,
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
