// Package kinds registers the IoT emulator (package iot) as the workload `iot`: gateways
// whose adaptors POST batches of device messages to a component's http endpoint (a function,
// a microservice, a gateway) or to a URL, measuring t_rr and t_ex per batch; with `broker`, the
// devices publish through an MQTT broker component (kind mosquitto) the adaptors subscribe to.
package kinds

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/iot"
	"github.com/continuum-project/continuum/internal/iot/iotcmd"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[Config]{
		Name:    "iot",
		System:  "iot",
		Doc:     "docs/faas.md#in-scenarios",
		Role:    kind.RoleWorkload,
		Summary: "IoT devices, gateways and batching adaptors (Tusa et al.) POSTing JSON batches to a component, the readings directly or through an MQTT broker; series t_rr, t_ex (and t_in)",
		Defaults: func() *Config {
			d := iotcmd.DefaultFlags()
			return &Config{Path: "/", Gateways: d.Gateways, Devices: d.Devices, Rate: d.Rate, Batch: d.Batch,
				Timeout: spec.Duration{Duration: d.Timeout}}
		},
		Validate: (*Config).validate,
		Command:  command,
		Overrun:  func(c *Config) time.Duration { return c.Timeout.Duration + 30*time.Second },
		Metrics:  metrics,
		Progress: newProgress,
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
	// Broker, if set, makes the ingress MQTT: the component (a mosquitto) the devices publish
	// their readings to and the adaptors subscribe to; BrokerURL (tcp://host:port) instead
	// names one outside the scenario. QoS (0 or 1), Connections (the devices', default one
	// per device up to 1000) and Topic (default continuum/iot) go with either.
	Broker      string `yaml:"broker,omitempty"`
	BrokerURL   string `yaml:"broker_url,omitempty"`
	QoS         int    `yaml:"qos,omitempty"`
	Connections int    `yaml:"connections,omitempty"`
	Topic       string `yaml:"topic,omitempty"`
}

func (c *Config) validate() error {
	if (c.Target == "") == (c.URL == "") {
		return errors.New("name exactly one of target (a component with an http endpoint) and url")
	}
	if !strings.HasPrefix(c.Path, "/") {
		return fmt.Errorf("path %q: must start with /", c.Path)
	}
	if c.Broker != "" && c.BrokerURL != "" {
		return errors.New("name at most one of broker (a component) and broker_url")
	}
	url := c.URL
	if url == "" {
		url = "http://target" + c.Path // the component's address is known when the run starts
	}
	broker := c.BrokerURL
	if c.Broker != "" {
		broker = "tcp://broker:1883" // likewise
	}
	cfg := c.emulator(url, broker, time.Minute)
	return cfg.Validate()
}

func (c *Config) emulator(url, broker string, d time.Duration) iot.Config {
	return iot.Config{Target: url, Gateways: c.Gateways, Devices: c.Devices, Rate: c.Rate, Batch: c.Batch,
		Invalid: c.Invalid, Timeout: c.Timeout.Duration, MaxInflight: c.MaxInflight, Duration: d,
		Broker: broker, QoS: c.QoS, Connections: c.Connections, Topic: c.Topic}
}

func command(env kind.Env, c *Config) (kind.Command, error) {
	url := c.URL
	if url == "" {
		node, ep, err := env.Endpoint(c.Target, 0, kind.ProtocolHTTP)
		if err != nil {
			return kind.Command{}, fmt.Errorf("iot %s: %w", env.Instance, err)
		}
		url = "http://" + net.JoinHostPort(env.NodeHost(node), strconv.Itoa(ep.Port)) + c.Path
	}
	broker := c.BrokerURL
	if c.Broker != "" {
		node, ep, err := env.Endpoint(c.Broker, 0, kind.ProtocolMQTT)
		if err != nil {
			return kind.Command{}, fmt.Errorf("iot %s: broker: %w", env.Instance, err)
		}
		broker = "tcp://" + net.JoinHostPort(env.NodeHost(node), strconv.Itoa(ep.Port))
	}
	f := iotcmd.DefaultFlags()
	f.Config = c.emulator(url, broker, env.Duration)
	f.Seed, f.Warmup, f.OutDir = env.Seed, env.Warmup, env.OutDir
	args := append([]string{env.Binary, "iot"}, cli.Args(iotcmd.DefaultFlags(), f)...)
	return kind.Command{Args: args}, nil
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
		if q := r.MQTT; q != nil {
			for k, v := range map[string]int64{"mqtt_published": q.Published, "mqtt_publish_failed": q.PublishFailed,
				"mqtt_received": q.Received, "mqtt_not_received": q.NotReceived, "mqtt_unbatched": q.Unbatched} {
				m["iot/"+in.Name][k] = float64(v)
			}
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
