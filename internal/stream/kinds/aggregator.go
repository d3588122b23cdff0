package kinds

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/stream/aggregator"
	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/stream/streamcmd"
)

func init() {
	kind.Register(kind.Def[AggregatorConfig]{
		Name:     "stream-aggregator",
		System:   "stream",
		Role:     kind.RoleComponent,
		Summary:  "Kafka consumer group writing each record into a realtime-db component at <path>/<id>, offsets committed after the write (exactly once in effect)",
		Defaults: func() *AggregatorConfig { return &AggregatorConfig{} },
		Validate: (*AggregatorConfig).validate,
		Command:  aggregatorCommand,
	})
}

// AggregatorStatsFile is the file in the instance's output directory where the aggregator
// keeps its counters (aggregator.Stats as JSON).
const AggregatorStatsFile = "aggregator-stats.json"

// AggregatorConfig is the `config:` of a stream-aggregator component. Unset fields take the
// aggregator's defaults (group continuum-aggregator, path /records, 120 leaves and 60 records per PATCH).
type AggregatorConfig struct {
	Brokers  []string `yaml:"brokers"`   // kafka components to bootstrap from (required)
	Topics   []string `yaml:"topics"`    // required
	RTDB     string   `yaml:"rtdb"`      // the realtime-db component (required)
	Group    string   `yaml:"group"`     // default continuum-aggregator
	NS       string   `yaml:"ns"`        // database; default the server's
	Path     string   `yaml:"path"`      // default /records
	KeyField string   `yaml:"key_field"` // default id
	// DeadLetterPath is where poison records land (default /dead-letters).
	DeadLetterPath string `yaml:"dead_letter_path"`
	Parallel       int    `yaml:"parallel"` // PATCHes in flight per poll (default 4)
}

// aggConfig is the aggregator configuration c renders, addresses as placeholders.
func (c *AggregatorConfig) aggConfig() aggregator.Config {
	a := aggregator.DefaultConfig()
	a.Brokers, a.Topics = []string{"127.0.0.1:9092"}, c.Topics
	for _, s := range []struct {
		dst *string
		v   string
	}{{&a.Group, c.Group}, {&a.Namespace, c.NS}, {&a.Path, c.Path}, {&a.KeyField, c.KeyField}, {&a.DeadLetterPath, c.DeadLetterPath}} {
		if s.v != "" {
			*s.dst = s.v
		}
	}
	if c.Parallel > 0 {
		a.Parallel = c.Parallel
	}
	return a
}

// validate reports every problem at once, each with its key and the `continuum stream
// aggregator` flag it becomes; the aggregator's own Validate then checks the configuration
// the keys render (the paths' relation among them), reported at config.
func (c *AggregatorConfig) validate() error {
	var errs kind.FieldErrors
	if len(c.Brokers) == 0 {
		errs.Add("brokers", "--brokers", "required: the kafka component(s) to consume from")
	}
	if len(c.Topics) == 0 {
		errs.Add("topics", "--topics", "required: the topics to consume")
	}
	for i, t := range c.Topics {
		errs.AddErr(fmt.Sprintf("topics[%d]", i), "--topics", bridge.ValidTopic(t))
	}
	if c.RTDB == "" {
		errs.Add("rtdb", "--rtdb", "required: the realtime-db component to write to")
	}
	if c.NS != "" && strings.Trim(c.NS, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		errs.Add("ns", "--ns", "%q: lowercase letters, digits and '-' only", c.NS)
	}
	if c.Parallel < 0 {
		errs.Add("parallel", "--parallel", "%d: must be >= 0 (0: the default)", c.Parallel)
	}
	if len(errs) > 0 {
		return errs.Err()
	}
	return c.aggConfig().Validate()
}

func aggregatorCommand(env kind.Env, c *AggregatorConfig) (kind.Command, error) {
	brokers, err := kafkaBrokers(env, c.Brokers)
	if err != nil {
		return kind.Command{}, err
	}
	db, err := env.Store(c.RTDB, 0, kind.ProtocolHTTP)
	if err != nil {
		return kind.Command{}, fmt.Errorf("rtdb: %w", err)
	}
	f := streamcmd.DefaultAggregatorFlags()
	f.Config = c.aggConfig()
	f.Config.Brokers, f.Config.RTDB = brokers, db.Addr
	// Static membership named after the instance: a restarted aggregator (a restart event, or
	// the platform's) takes its partitions back at once instead of after the session timeout.
	f.Config.InstanceID = env.Instance
	f.Config.StatsFile = filepath.Join(env.OutDir, AggregatorStatsFile)
	return kind.Command{Args: append([]string{env.Binary, "stream", "aggregator"}, cli.Args(streamcmd.DefaultAggregatorFlags(), f)...)}, nil
}
