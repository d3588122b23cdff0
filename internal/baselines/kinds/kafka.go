package kinds

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/experiment/kind"
)

func init() {
	kind.Register(kind.Def[KafkaConfig]{
		Name:     "kafka",
		System:   "baselines",
		Doc:      "docs/scenarios.md#the-kafka-kind-apache-kafka-as-a-baseline",
		Stacks:   []string{"stream"},
		Role:     kind.RoleComponent,
		Summary:  "Apache Kafka 4.4 broker in KRaft combined mode (.tools/kafka, java); topics created on start; brokers with the same `cluster` form one quorum (an odd number)",
		Defaults: func() *KafkaConfig { return &KafkaConfig{Port: 9092, ControllerPort: 9093} },
		Validate: (*KafkaConfig).validate,
		Command:  kafkaCommand,
		Endpoints: func(c *KafkaConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolKafka, Port: c.Port},
				{Name: "controller", Protocol: "kafka-raft", Port: c.ControllerPort}}
		},
	})
}

// KafkaConfig is the `config:` of a kafka component.
type KafkaConfig struct {
	Port           int `yaml:"port"`            // PLAINTEXT listener for clients and other brokers (default 9092)
	ControllerPort int `yaml:"controller_port"` // CONTROLLER listener of the KRaft quorum (default 9093)
	// Topics are created once the brokers answer (by `continuum kafka-topics create`, started
	// next to the broker); with topics, auto.create.topics.enable is off, so a client that
	// comes first waits for them instead of creating a one-partition topic.
	Topics []baselines.KafkaTopic `yaml:"topics"`
	// Cluster names the cluster this broker belongs to: every kafka component with the same
	// cluster is a voter of one KRaft quorum (node ids 1..n in name order), so their number
	// must be odd. Empty: a single broker (a standalone quorum).
	Cluster string `yaml:"cluster"`
	DataDir string `yaml:"data_dir"` // log.dirs (default <instance results dir>/data)
	Java    string `yaml:"java"`     // default $CONTINUUM_JAVA_BIN, java in PATH
	Home    string `yaml:"home"`     // Kafka's jars (<home>/libs); default $CONTINUUM_KAFKA_HOME, .tools/kafka
}

// validate reports every problem at once, each with its key and what it becomes: a setting of
// the broker's server.properties, or a flag of the `continuum kafka-topics create` started next
// to it.
func (c *KafkaConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "listeners (server.properties)", c.Port)
	errs.CheckPort("controller_port", "listeners (server.properties)", c.ControllerPort)
	if c.Port == c.ControllerPort {
		errs.Add("controller_port", "listeners (server.properties)", "port and controller_port are both %d", c.Port)
	}
	seen := map[string]bool{}
	for i, t := range c.Topics {
		at := fmt.Sprintf("topics[%d]", i)
		errs.AddErr(at, "--topic", t.Check(0))
		if seen[t.Name] {
			errs.Add(at, "--topic", "topic %s listed twice", t.Name)
		}
		seen[t.Name] = true
	}
	errs.CheckDataDir("log.dirs (server.properties)", c.DataDir)
	return errs.Err()
}

// kafkaQuorum is the instance's quorum: the kafka components of its cluster in name order (node
// ids 1..n), or the instance alone.
func kafkaQuorum(env kind.Env, c *KafkaConfig) (self baselines.KafkaNode, quorum []baselines.KafkaNode, err error) {
	self = baselines.KafkaNode{ID: 1, Host: env.NodeHost(env.Node), Port: c.Port, ControllerPort: c.ControllerPort}
	if c.Cluster == "" {
		return self, []baselines.KafkaNode{self}, nil
	}
	var names []string
	for name, m := range env.Components {
		if kc, ok := m.Config.(*KafkaConfig); ok && kc.Cluster == c.Cluster {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names)%2 == 0 {
		return self, nil, fmt.Errorf("kafka cluster %s has %d brokers (%s): KRaft needs an odd quorum (1, 3, 5) to keep a majority when one fails",
			c.Cluster, len(names), strings.Join(names, ", "))
	}
	for i, name := range names {
		m := env.Components[name]
		kc := m.Config.(*KafkaConfig)
		n := baselines.KafkaNode{ID: i + 1, Host: env.NodeHost(m.Node), Port: kc.Port, ControllerPort: kc.ControllerPort}
		if name == env.Instance {
			self = n
		}
		quorum = append(quorum, n)
	}
	return self, quorum, nil
}

// kafkaClusterID derives the cluster id from the cluster's (or the lone broker's) name, so
// every member formats its storage with the same one.
func kafkaClusterID(name string) string {
	h := sha256.Sum256([]byte("continuum-kafka/" + name))
	return baselines.KafkaUUID([16]byte(h[:16]))
}

// shq quotes s for /bin/sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shq(a)
	}
	return strings.Join(q, " ")
}

// kafkaCommand: Kafka reads its configuration from a file and needs formatted storage, so a
// shell writes server.properties into the instance's directory, formats the data dir (kept
// if already formatted), starts `continuum kafka-topics create` in the background when
// topics are listed (its output in topics.log), and execs the broker, so the process the
// testbed watches is the JVM itself.
func kafkaCommand(env kind.Env, c *KafkaConfig) (kind.Command, error) {
	java, err := baselines.JavaBinary(c.Java)
	if err != nil {
		return kind.Command{}, fmt.Errorf("kafka %s: %w", env.Instance, err)
	}
	home, err := baselines.KafkaHome(c.Home)
	if err != nil {
		return kind.Command{}, fmt.Errorf("kafka %s: %w", env.Instance, err)
	}
	self, quorum, err := kafkaQuorum(env, c)
	if err != nil {
		return kind.Command{}, err
	}
	for _, t := range c.Topics {
		if err := t.Check(len(quorum)); err != nil {
			return kind.Command{}, fmt.Errorf("kafka %s: %w", env.Instance, err)
		}
	}
	dir := kind.DataDir(env, c.DataDir)
	props := filepath.Join(env.OutDir, "server.properties")
	conf := baselines.KafkaProperties(self, quorum, "0.0.0.0", dir)
	if len(c.Topics) > 0 {
		conf += "auto.create.topics.enable=false\n"
	}
	id := env.Instance
	if c.Cluster != "" {
		id = c.Cluster
	}
	script := `printf '%s' "$KAFKA_PROPERTIES" > ` + shq(props) + ` && mkdir -p ` + shq(dir) + ` && ` +
		shJoin(baselines.KafkaFormatArgs(java, home, props, kafkaClusterID(id), len(quorum) == 1)) + ` >&2 && `
	if len(c.Topics) > 0 {
		topics := []string{env.Binary, "kafka-topics", "create", "--bootstrap", "127.0.0.1:" + strconv.Itoa(c.Port),
			"--brokers", strconv.Itoa(len(quorum))}
		for _, t := range c.Topics {
			topics = append(topics, "--topic", fmt.Sprintf("%s:%d:%d", t.Name, t.Partitions, t.Replication))
		}
		script += `{ ` + shJoin(topics) + ` > ` + shq(filepath.Join(env.OutDir, "topics.log")) + ` 2>&1 & } && `
	}
	script += `exec ` + shJoin(baselines.KafkaJavaArgs(java, home, "kafka.Kafka", props))
	return kind.Command{
		Args:      []string{"/bin/sh", "-c", script},
		Env:       []string{"KAFKA_PROPERTIES=" + conf},
		DataDirs:  []string{dir},
		ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port),
	}, nil
}
