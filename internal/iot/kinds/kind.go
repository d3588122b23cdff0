// Package kinds registers the IoT emulator (package iot) as the workload `iot`: gateways
// whose adaptors POST batches of device messages to a component's http endpoint (a function,
// a microservice, a gateway) or to a URL, measuring t_rr and t_ex per batch; with `broker`, the
// devices publish through an MQTT broker component (kind mosquitto) the adaptors subscribe to.
package kinds

import (
	"fmt"
	"net"
	"net/url"
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

// validate reports every problem at once, each with its key and the `continuum iot` flag it
// becomes; the emulator's own Validate then checks the configuration the keys render, with
// placeholders for the components' addresses (known when the run starts), reported at config.
func (c *Config) validate() error {
	var errs kind.FieldErrors
	if (c.Target == "") == (c.URL == "") {
		errs.Add("target", "--target", "name exactly one of target (a component with an http endpoint) and url")
	}
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Add("url", "--target", "%q: want an http:// URL to POST batches to", c.URL)
		}
	}
	if !strings.HasPrefix(c.Path, "/") {
		errs.Add("path", "--target", "%q: must start with /", c.Path)
	}
	if c.Gateways < 1 {
		errs.Add("gateways", "--gateways", "%d: want >= 1", c.Gateways)
	}
	if c.Devices < max(c.Gateways, 1) {
		errs.Add("devices", "--devices", "%d: want at least one per gateway (%d)", c.Devices, c.Gateways)
	}
	if c.Rate <= 0 {
		errs.Add("rate", "--rate", "%g: want messages per second per device > 0", c.Rate)
	}
	if c.Batch < 1 {
		errs.Add("batch", "--batch", "%d: want >= 1 message", c.Batch)
	}
	if c.Invalid < 0 || c.Invalid > 1 {
		errs.Add("invalid", "--invalid", "%g: want a share between 0 and 1", c.Invalid)
	}
	if c.MaxInflight < 0 {
		errs.Add("max_inflight", "--max-inflight", "%d: want >= 0 (0: 1000)", c.MaxInflight)
	}
	if c.Timeout.Duration < 0 {
		errs.Add("timeout", "--timeout", "%v: want >= 0 (0: %v)", c.Timeout, iot.DefaultTimeout)
	}
	c.checkMQTT(&errs)
	if len(errs) > 0 {
		return errs.Err()
	}
	target := c.URL
	if target == "" {
		target = "http://target" + c.Path // the component's address is known when the run starts
	}
	broker := c.BrokerURL
	if c.Broker != "" {
		broker = "tcp://broker:1883" // likewise
	}
	cfg := c.emulator(target, broker, time.Minute)
	return cfg.Validate()
}

// checkMQTT records the problems of the MQTT ingress's keys.
func (c *Config) checkMQTT(errs *kind.FieldErrors) {
	if c.Broker != "" && c.BrokerURL != "" {
		errs.Add("broker_url", "--broker", "name at most one of broker (a component) and broker_url")
	}
	if c.BrokerURL != "" {
		if u, err := url.Parse(c.BrokerURL); err != nil || (u.Scheme != "tcp" && u.Scheme != "mqtt") || u.Host == "" || u.Port() == "" {
			errs.Add("broker_url", "--broker", "%q: want tcp://host:port (an MQTT broker)", c.BrokerURL)
		}
	}
	if c.Broker == "" && c.BrokerURL == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"qos", c.QoS != 0}, {"connections", c.Connections != 0}, {"topic", c.Topic != ""}} {
			if k.set {
				errs.Add(k.key, "--"+k.key, "goes with broker or broker_url (the MQTT ingress)")
			}
		}
		return
	}
	if c.QoS != 0 && c.QoS != 1 {
		errs.Add("qos", "--qos", "%d: want 0 (at most once) or 1 (at least once)", c.QoS)
	}
	if c.Connections < 0 || c.Connections > c.Devices {
		errs.Add("connections", "--connections", "%d: want 1..%d (devices), or 0 for one per device (capped)", c.Connections, c.Devices)
	}
	if strings.ContainsAny(c.Topic, "+#") || strings.HasSuffix(c.Topic, "/") {
		errs.Add("topic", "--topic", "%q: a prefix without wildcards (+, #) or a trailing /", c.Topic)
	}
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
