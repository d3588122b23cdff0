package experiment

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/spec"
)

// The "kv-lag" workload runs `continuum load kv-lag`: replication-lag probes that write on one
// member of an etcd-API cluster (a kv or etcd component) and wait until another member shows the
// write (package kvtarget, LagProbe).
func init() {
	Register(&Kind{
		Name:      "kv-lag",
		Role:      RoleWorkload,
		Summary:   "replication lag: write on one kv/etcd member, time until a watch on another sees it",
		NewConfig: func() any { return &KVLagConfig{Rate: 100, Timeout: spec.Duration{Duration: 30 * time.Second}} },
		Validate:  func(cfg any) error { return cfg.(*KVLagConfig).validate() },
		Command:   kvLagCommand,
	})
}

// KVLagConfig is the `config:` of a kv-lag workload.
type KVLagConfig struct {
	Writer string  `yaml:"writer"` // component written to
	Reader string  `yaml:"reader"` // component watched
	Rate   float64 `yaml:"rate"`   // probes/s (default 100)
	// Timeout is how long a write may take to become visible (default 30s: longer than the
	// partitions of the shipped scenarios, so writes made during one complete after the heal).
	Timeout spec.Duration `yaml:"timeout"`
}

func (c *KVLagConfig) validate() error {
	switch {
	case c.Writer == "" || c.Reader == "":
		return errors.New("writer and reader are required: the kv or etcd components to write to and to watch")
	case c.Writer == c.Reader:
		return fmt.Errorf("writer and reader are both %q: lag is measured between two members", c.Writer)
	case c.Rate <= 0 || c.Rate > 100000:
		return fmt.Errorf("rate %g: must be in (0, 100000] probes/s", c.Rate)
	case c.Timeout.Duration <= 0:
		return fmt.Errorf("timeout %v: must be > 0", c.Timeout)
	}
	return nil
}

// memberURL is the client URL of a kv or etcd component, at its node.
func memberURL(env Env, component string) (string, error) {
	node, err := env.ComponentNode(component)
	if err != nil {
		return "", err
	}
	var port int
	switch cc := env.ComponentConfigs[component].(type) {
	case *KVConfig:
		port = cc.ClientPort
	case *EtcdConfig:
		port = cc.ClientPort
	default:
		return "", fmt.Errorf("component %q: not a kv or etcd component", component)
	}
	return "http://" + net.JoinHostPort(node, strconv.Itoa(port)), nil
}

func kvLagCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*KVLagConfig)
	w, err := memberURL(env, c.Writer)
	if err != nil {
		return Command{}, fmt.Errorf("writer: %w", err)
	}
	r, err := memberURL(env, c.Reader)
	if err != nil {
		return Command{}, fmt.Errorf("reader: %w", err)
	}
	return Command{Args: []string{env.Binary, "load", "kv-lag", "--writer", w, "--reader", r,
		"--rate", strconv.FormatFloat(c.Rate, 'f', -1, 64), "--timeout", c.Timeout.String(),
		"--duration", env.Duration.String(), "--warmup", env.Warmup.String(), "--out", env.OutDir}}, nil
}
