package baselines

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/tools"
)

// KafkaVersion is the Apache Kafka release `make setup` installs (tools/kafka/pom.xml).
const KafkaVersion = "4.4.0"

// KafkaHome finds the Kafka installation (a directory with libs/*.jar): dir, $CONTINUUM_KAFKA_HOME,
// else .tools/kafka of the clone above the working directory or the executable, or the setup
// cache's kafka-* (internal/tools).
func KafkaHome(dir string) (string, error) {
	hasJars := func(c string) bool {
		m, _ := filepath.Glob(filepath.Join(c, "libs", "kafka_2.13-*.jar"))
		return len(m) > 0
	}
	var where string
	switch {
	case dir != "":
		where = dir
	case os.Getenv("CONTINUUM_KAFKA_HOME") != "":
		dir, where = os.Getenv("CONTINUUM_KAFKA_HOME"), "$CONTINUUM_KAFKA_HOME="+os.Getenv("CONTINUUM_KAFKA_HOME")
	default:
		if p, ok := tools.Find(tools.Tool{Path: "kafka", CacheDir: "kafka-" + KafkaVersion + "-*", OK: hasJars}); ok {
			dir = p
		}
		where = tools.Searched()
	}
	if dir != "" && hasJars(dir) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		return filepath.EvalSymlinks(abs)
	}
	return "", fmt.Errorf("Apache Kafka not found (no libs/kafka_2.13-*.jar in %s): run `continuum setup stream` (installs Kafka %s into .tools/kafka) or set $CONTINUUM_KAFKA_HOME",
		where, KafkaVersion)
}

// JavaBinary finds java: bin, $CONTINUUM_JAVA_BIN, PATH (`make setup` installs Debian's
// openjdk-17-jre-headless).
func JavaBinary(bin string) (string, error) {
	p, err := lookBinary(bin, "CONTINUUM_JAVA_BIN", "java")
	if err != nil {
		return "", fmt.Errorf("%w (Debian's openjdk-17-jre-headless)", err)
	}
	return p, nil
}

// KafkaHeap is the broker's -Xmx (Kafka's own start script uses 1G).
const KafkaHeap = "1G"

// KafkaJavaArgs is the java command line that runs class main with the installation's jars.
func KafkaJavaArgs(java, home, main string, args ...string) []string {
	return append([]string{java, "-Xmx" + KafkaHeap, "-XX:+UseG1GC", "-Djava.awt.headless=true",
		"-cp", filepath.Join(home, "libs") + "/*", main}, args...)
}

// withJavaOptions puts opts into a KafkaJavaArgs command line, after its own options (a
// later option wins) and before the class path and main class.
func withJavaOptions(args, opts []string) []string {
	if len(opts) == 0 {
		return args
	}
	i := slices.Index(args, "-cp")
	return slices.Concat(args[:i:i], opts, args[i:])
}

// KafkaNode is one broker of a KRaft quorum, every one in combined mode (broker and
// controller).
type KafkaNode struct {
	ID             int
	Host           string // the address others reach it at
	Port           int    // PLAINTEXT (clients)
	ControllerPort int    // CONTROLLER (KRaft quorum)
}

// KafkaProperties is server.properties for node self of quorum (all nodes, self among them):
// KRaft combined mode, PLAINTEXT for clients and between brokers, CONTROLLER for the quorum,
// listening on bind (0.0.0.0 inside a testbed node), data in logDir. One node: a standalone
// dynamic quorum (controller.quorum.bootstrap.servers; format with --standalone); several: a
// static one (controller.quorum.voters). Internal topics are replicated min(3, nodes) times.
func KafkaProperties(self KafkaNode, quorum []KafkaNode, bind, logDir string) string {
	rf := strconv.Itoa(min(3, len(quorum)))
	var voters, boot []string
	for _, n := range quorum {
		hp := n.Host + ":" + strconv.Itoa(n.ControllerPort)
		voters = append(voters, strconv.Itoa(n.ID)+"@"+hp)
		boot = append(boot, hp)
	}
	var b strings.Builder
	w := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	w("process.roles", "broker,controller")
	w("node.id", strconv.Itoa(self.ID))
	if len(quorum) == 1 {
		w("controller.quorum.bootstrap.servers", strings.Join(boot, ","))
	} else {
		w("controller.quorum.voters", strings.Join(voters, ","))
	}
	w("listeners", "PLAINTEXT://"+bind+":"+strconv.Itoa(self.Port)+",CONTROLLER://"+bind+":"+strconv.Itoa(self.ControllerPort))
	w("advertised.listeners", "PLAINTEXT://"+self.Host+":"+strconv.Itoa(self.Port)+",CONTROLLER://"+self.Host+":"+strconv.Itoa(self.ControllerPort))
	w("controller.listener.names", "CONTROLLER")
	w("inter.broker.listener.name", "PLAINTEXT")
	w("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT")
	w("log.dirs", logDir)
	w("num.partitions", "1")
	w("offsets.topic.replication.factor", rf)
	w("transaction.state.log.replication.factor", rf)
	w("transaction.state.log.min.isr", strconv.Itoa(min(2, len(quorum))))
	w("share.coordinator.state.topic.replication.factor", rf)
	w("share.coordinator.state.topic.min.isr", strconv.Itoa(min(2, len(quorum))))
	w("group.initial.rebalance.delay.ms", "0")
	return b.String()
}

// KafkaFormatArgs formats the storage of a node (kafka.tools.StorageTool, in kafka_2.13): a
// single node as a standalone dynamic quorum; --ignore-formatted keeps a restart's data.
func KafkaFormatArgs(java, home, props, clusterID string, standalone bool) []string {
	args := []string{"format", "--config", props, "--cluster-id", clusterID, "--ignore-formatted"}
	if standalone {
		args = append(args, "--standalone")
	}
	return KafkaJavaArgs(java, home, "kafka.tools.StorageTool", args...)
}

// KafkaClusterID is a random cluster id in Kafka's form (a UUID in URL-safe base64).
func KafkaClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return KafkaUUID(b)
}

// KafkaUUID renders 16 bytes as a Kafka id, clearing the top bit so the id never starts with
// '-' or '_' (the storage tool would read "--cluster-id -x..." as a missing argument; Kafka's
// own Uuid.randomUuid avoids a leading '-' too).
func KafkaUUID(b [16]byte) string {
	b[0] &^= 0x80
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// KafkaTopic is a topic created on start.
type KafkaTopic struct {
	Name        string `yaml:"name"`
	Partitions  int    `yaml:"partitions"`
	Replication int    `yaml:"replication"`
}

// ParseKafkaTopic reads name:partitions:replication (partitions and replication default to 1).
func ParseKafkaTopic(s string) (KafkaTopic, error) {
	f := strings.Split(s, ":")
	t := KafkaTopic{Name: f[0], Partitions: 1, Replication: 1}
	if len(f) > 3 {
		return t, fmt.Errorf("topic %q: want name[:partitions[:replication]]", s)
	}
	for i, p := range []*int{&t.Partitions, &t.Replication} {
		if len(f) > i+1 {
			n, err := strconv.Atoi(f[i+1])
			if err != nil {
				return t, fmt.Errorf("topic %q: %w", s, err)
			}
			*p = n
		}
	}
	return t, t.Check(0)
}

// Check validates the topic for a cluster of brokers nodes (0: unknown).
func (t KafkaTopic) Check(brokers int) error {
	switch {
	case t.Name == "" || len(t.Name) > 249 || strings.Trim(t.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "":
		return fmt.Errorf("topic name %q: want 1-249 of [a-zA-Z0-9._-]", t.Name)
	case t.Partitions < 1:
		return fmt.Errorf("topic %s: partitions %d: must be >= 1", t.Name, t.Partitions)
	case t.Replication < 1:
		return fmt.Errorf("topic %s: replication %d: must be >= 1", t.Name, t.Replication)
	case brokers > 0 && t.Replication > brokers:
		return fmt.Errorf("topic %s: replication %d exceeds the %d broker(s)", t.Name, t.Replication, brokers)
	}
	return nil
}

// KafkaReady succeeds once the brokers at seeds answer a metadata request listing at least
// brokers brokers with an active controller.
func KafkaReady(ctx context.Context, seeds []string, brokers int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(0), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("kafka metadata: %w", err)
	}
	if len(m.Brokers) < brokers || m.Controller < 0 {
		return fmt.Errorf("kafka: %d of %d brokers, controller %d", len(m.Brokers), brokers, m.Controller)
	}
	return nil
}

// CreateKafkaTopics creates topics (an existing one is kept) and waits until every partition
// has a leader, or ctx ends.
func CreateKafkaTopics(ctx context.Context, seeds []string, topics []KafkaTopic) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		res, err := adm.CreateTopic(ctx, int32(t.Partitions), int16(t.Replication), nil, t.Name)
		if err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t.Name, err)
		}
		names = append(names, t.Name)
	}
	for {
		md, err := adm.Metadata(ctx, names...)
		if err == nil {
			ok := true
			for _, n := range names {
				td, found := md.Topics[n]
				if !found || td.Err != nil || len(td.Partitions) == 0 {
					ok = false
					break
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ok = false
					}
				}
			}
			if ok {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v have no leaders yet: %w", names, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KafkaConfig is StartKafka's configuration.
type KafkaConfig struct {
	Config
	// Home is the Kafka installation (default KafkaHome("")); Config.Bin is java.
	Home   string
	Topics []KafkaTopic
	// Host is the address the broker listens on and advertises (default 127.0.0.1); another
	// address lets clients elsewhere reach it, e.g. pods through their bridge's address.
	Host string
	// JavaOptions go on java's command lines (the storage tool's and the broker's, kept by
	// Crash's restart) before the main class, after KafkaJavaArgs' own.
	JavaOptions []string
}

// StartKafka starts one Kafka broker in KRaft combined mode (node 1, a standalone quorum) on
// free ports of cfg.Host: server.properties and the log in cfg.Dir, the data in cfg.Dir/data.
// Target.Endpoints[0] is its bootstrap address. Ready when a client gets metadata with an
// active controller; then cfg.Topics are created.
func StartKafka(ctx context.Context, cfg KafkaConfig) (*Server, error) {
	java, err := JavaBinary(cfg.Bin)
	if err != nil {
		return nil, err
	}
	home, err := KafkaHome(cfg.Home)
	if err != nil {
		return nil, err
	}
	for _, t := range cfg.Topics {
		if err := t.Check(1); err != nil {
			return nil, err
		}
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	node := KafkaNode{ID: 1, Host: host, Port: ports[0], ControllerPort: ports[1]}
	s, err := startKafkaNode(ctx, cfg.Config, java, home, cfg.JavaOptions, node, []KafkaNode{node}, KafkaClusterID())
	if err != nil {
		return nil, err
	}
	if err := CreateKafkaTopics(ctx, s.Target.Endpoints, cfg.Topics); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// startKafkaNode writes the node's server.properties, formats its storage and starts it;
// ready when the node answers metadata (the quorum may still be forming for a cluster).
func startKafkaNode(ctx context.Context, cfg Config, java, home string, javaOpts []string, node KafkaNode, quorum []KafkaNode, clusterID string) (*Server, error) {
	dataDir := filepath.Join(cfg.Dir, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	props := filepath.Join(cfg.Dir, "server.properties")
	if err := os.WriteFile(props, []byte(KafkaProperties(node, quorum, node.Host, dataDir)), 0o644); err != nil {
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fa := withJavaOptions(KafkaFormatArgs(java, home, props, clusterID, len(quorum) == 1), javaOpts)
	if out, err := exec.CommandContext(fctx, fa[0], fa[1:]...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka storage format: %v\n%s", err, out)
	}
	addr := node.Host + ":" + strconv.Itoa(node.Port)
	args := append(withJavaOptions(KafkaJavaArgs(java, home, "kafka.Kafka", props), javaOpts), cfg.ExtraArgs...)
	ready := func(ctx context.Context) error { return KafkaReady(ctx, []string{addr}, 1) }
	return start(ctx, "kafka", kvtarget.Target{Kind: "kafka", Endpoints: []string{addr}}, dataDir,
		filepath.Join(cfg.Dir, "server.log"), args, cfg.ReadyTimeout, ready)
}

// KafkaClusterConfig is StartKafkaCluster's configuration.
type KafkaClusterConfig struct {
	// Dir receives a directory per broker (Dir/b1, ...: server.properties, server.log, data).
	Dir string
	// Brokers is the number of brokers, every one a voter of the quorum: odd (default 3).
	Brokers int
	Java    string // default JavaBinary("")
	Home    string // default KafkaHome("")
	Topics  []KafkaTopic
	// ReadyTimeout bounds each broker's start (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// JavaOptions are KafkaConfig's, for every broker.
	JavaOptions []string
}

// KafkaCluster is a started KRaft cluster of brokers in combined mode.
type KafkaCluster struct {
	Nodes []*Server // node id i+1
	// Bootstrap is every broker's client address.
	Bootstrap []string
}

// Stop stops every broker (at once).
func (c *KafkaCluster) Stop() { c.stopStarted() }

// StartKafkaCluster starts cfg.Brokers brokers on free loopback ports as one static KRaft
// quorum (controller.quorum.voters), all at once (none is ready before a majority runs), waits
// until a client sees every broker, then creates cfg.Topics.
func StartKafkaCluster(ctx context.Context, cfg KafkaClusterConfig) (*KafkaCluster, error) {
	if cfg.Brokers == 0 {
		cfg.Brokers = 3
	}
	if cfg.Brokers < 1 || cfg.Brokers%2 == 0 {
		return nil, fmt.Errorf("kafka cluster of %d brokers: KRaft needs an odd quorum (1, 3, 5)", cfg.Brokers)
	}
	java, err := JavaBinary(cfg.Java)
	if err != nil {
		return nil, err
	}
	home, err := KafkaHome(cfg.Home)
	if err != nil {
		return nil, err
	}
	for _, t := range cfg.Topics {
		if err := t.Check(cfg.Brokers); err != nil {
			return nil, err
		}
	}
	ports, err := freeport.Ports(2 * cfg.Brokers)
	if err != nil {
		return nil, err
	}
	quorum := make([]KafkaNode, cfg.Brokers)
	c := &KafkaCluster{Nodes: make([]*Server, cfg.Brokers)}
	for i := range quorum {
		quorum[i] = KafkaNode{ID: i + 1, Host: "127.0.0.1", Port: ports[2*i], ControllerPort: ports[2*i+1]}
		c.Bootstrap = append(c.Bootstrap, "127.0.0.1:"+strconv.Itoa(quorum[i].Port))
	}
	id := KafkaClusterID()
	errs := make([]error, cfg.Brokers)
	done := make(chan struct{})
	for i := range quorum {
		go func() {
			defer func() { done <- struct{}{} }()
			bc := Config{Dir: filepath.Join(cfg.Dir, "b"+strconv.Itoa(i+1)), ReadyTimeout: cfg.ReadyTimeout}
			c.Nodes[i], errs[i] = startKafkaNode(ctx, bc, java, home, cfg.JavaOptions, quorum[i], quorum, id)
		}()
	}
	for range quorum {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		c.stopStarted()
		return nil, err
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := KafkaReady(rctx, c.Bootstrap, cfg.Brokers)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			c.Stop()
			return nil, fmt.Errorf("kafka cluster: %v: %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := CreateKafkaTopics(ctx, c.Bootstrap, cfg.Topics); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// stopStarted stops the brokers that started, all at once: one by one, the last ones would
// wait out StopGrace for a controlled shutdown the lost quorum can no longer grant.
func (c *KafkaCluster) stopStarted() {
	var wg sync.WaitGroup
	for _, s := range c.Nodes {
		if s != nil {
			wg.Go(func() { _ = s.Stop() })
		}
	}
	wg.Wait()
}
