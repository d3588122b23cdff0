package kinds

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/stream/streamcmd"
)

func init() {
	kind.Register(kind.Def[BridgeConfig]{
		Name:     "stream-bridge",
		System:   "stream",
		Role:     kind.RoleComponent,
		Summary:  "HTTP to Kafka bridge (POST /topics/<topic>, answered once Kafka acknowledged; acks=all, idempotent) producing to a kafka component",
		Defaults: func() *BridgeConfig { return &BridgeConfig{Port: 8090} },
		Validate: (*BridgeConfig).validate,
		Command:  bridgeCommand,
		Endpoints: func(c *BridgeConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
	})
}

// BridgeConfig is the `config:` of a stream-bridge component. Unset fields take the bridge's
// defaults (linger 0, 1 MiB batches, no compression, acks all, idempotent).
type BridgeConfig struct {
	Port int `yaml:"port"` // default 8090
	// Brokers names the kafka components to bootstrap from (one is enough; required).
	Brokers       []string      `yaml:"brokers"`
	KeyField      string        `yaml:"key_field"`
	Linger        spec.Duration `yaml:"linger"`
	BatchMaxBytes spec.Bytes    `yaml:"batch_max_bytes"`
	Compression   string        `yaml:"compression"`
	Acks          string        `yaml:"acks"`
	// Idempotent turns the idempotent producer off when false (default true).
	Idempotent   *bool         `yaml:"idempotent"`
	MaxBodyBytes spec.Bytes    `yaml:"max_body_bytes"`
	AckTimeout   spec.Duration `yaml:"ack_timeout"`
}

// bridgeConfig is the bridge configuration c renders, brokers left out.
func (c *BridgeConfig) bridgeConfig() bridge.Config {
	b := bridge.DefaultConfig()
	b.ListenAddr = ":" + strconv.Itoa(c.Port)
	b.Brokers = []string{"127.0.0.1:9092"} // placeholder for Validate; the command resolves them
	if c.KeyField != "" {
		b.KeyField = c.KeyField
	}
	if c.Linger.Duration > 0 {
		b.Linger = c.Linger.Duration
	}
	if c.BatchMaxBytes > 0 {
		b.BatchMaxBytes = int32(min(c.BatchMaxBytes, 1<<30))
	}
	if c.Compression != "" {
		b.Compression = c.Compression
	}
	if c.Acks != "" {
		b.Acks = c.Acks
	}
	if c.Idempotent != nil {
		b.Idempotent = *c.Idempotent
	}
	if c.MaxBodyBytes > 0 {
		b.MaxBodyBytes = int64(c.MaxBodyBytes)
	}
	if c.AckTimeout.Duration > 0 {
		b.AckTimeout = c.AckTimeout.Duration
	}
	return b
}

// validate reports every problem at once, each with its key and the `continuum stream bridge`
// flag it becomes; the bridge's own Validate then checks the configuration the keys render
// (reported at config: once the keys are right, it finds nothing they did not).
func (c *BridgeConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "--listen", c.Port)
	if len(c.Brokers) == 0 {
		errs.Add("brokers", "--brokers", "required: the kafka component(s) to produce to")
	}
	for _, d := range []struct {
		key, flag string
		v         time.Duration
	}{{"linger", "--linger", c.Linger.Duration}, {"ack_timeout", "--ack-timeout", c.AckTimeout.Duration}} {
		if d.v < 0 {
			errs.Add(d.key, d.flag, "%v: must be >= 0 (0: the default)", d.v)
		}
	}
	if c.BatchMaxBytes < 0 || c.BatchMaxBytes > 0 && c.BatchMaxBytes < 1024 {
		errs.Add("batch_max_bytes", "--batch-max-bytes", "%d: must be >= 1024 (0: the default, 1 MiB)", c.BatchMaxBytes)
	}
	if c.MaxBodyBytes < 0 {
		errs.Add("max_body_bytes", "--max-body-bytes", "%d: must be >= 0 (0: the default)", c.MaxBodyBytes)
	}
	if c.Compression != "" && !slices.Contains(bridge.Compressions, c.Compression) {
		errs.Add("compression", "--compression", "%q: want one of %s", c.Compression, strings.Join(bridge.Compressions, ", "))
	}
	if c.Acks != "" && !slices.Contains(bridge.AckModes, c.Acks) {
		errs.Add("acks", "--acks", "%q: want one of %s", c.Acks, strings.Join(bridge.AckModes, ", "))
	} else if c.Acks != "" && c.Acks != "all" && (c.Idempotent == nil || *c.Idempotent) {
		errs.Add("acks", "--acks", "%q: the idempotent producer needs acks all (or idempotent: false)", c.Acks)
	}
	if len(errs) > 0 {
		return errs.Err()
	}
	return c.bridgeConfig().Validate()
}

// kafkaBrokers resolves the named kafka components to bootstrap addresses.
func kafkaBrokers(env kind.Env, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		st, err := env.Store(n, 0, kind.ProtocolKafka)
		if err != nil {
			return nil, fmt.Errorf("brokers: %w", err)
		}
		out = append(out, st.Addr)
	}
	return out, nil
}

func bridgeCommand(env kind.Env, c *BridgeConfig) (kind.Command, error) {
	brokers, err := kafkaBrokers(env, c.Brokers)
	if err != nil {
		return kind.Command{}, err
	}
	f := streamcmd.DefaultBridgeFlags()
	f.Config = c.bridgeConfig()
	f.Config.Brokers = brokers
	// Each run's bridge generates its token on its first start into its output directory
	// (0600): nothing carries over between runs, a restart (the crash scenarios) reuses it,
	// and the run's workloads read it there (BridgeTokenFile).
	f.TokenFile = BridgeTokenFile(env.OutDir)
	return kind.Command{Args: append([]string{env.Binary, "stream", "bridge"}, cli.Args(streamcmd.DefaultBridgeFlags(), f)...),
		ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port)}, nil
}

// BridgeTokenFile is where the stream-bridge whose instance output directory is outDir keeps
// its token in a run.
func BridgeTokenFile(outDir string) string { return filepath.Join(outDir, "secrets", "token") }
