package kinds_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/deathsig"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/testenv"
)

// fakeKafka creates a java stand-in and a Kafka home with a kafka_2.13 jar.
func fakeKafka(t *testing.T) (java, home string) {
	t.Helper()
	java = fakeBin(t, "java")
	home = t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "libs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "libs", "kafka_2.13-"+baselines.KafkaVersion+".jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return java, home
}

func TestKafkaKindCommand(t *testing.T) {
	java, home := fakeKafka(t)
	k, cfg := kindtest.Decode(t, "kafka", "java: "+java+"\nhome: "+home+"\ntopics: [{name: events, partitions: 3, replication: 1}]\n")
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	if eps := k.EndpointsOf(cfg); eps[0] != (kind.Endpoint{Name: "client", Protocol: kind.ProtocolKafka, Port: 9092}) {
		t.Errorf("endpoints %+v", eps)
	}
	env := kind.Env{Binary: "/bin/continuum", Instance: "k1", Node: "edge", Nodes: map[string]string{"edge": "10.0.0.2"}, OutDir: "/r/k1"}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	script := cmd.Args[2]
	for _, want := range []string{
		`printf '%s' "$KAFKA_PROPERTIES" > '/r/k1/server.properties'`, "mkdir -p '/r/k1/data'",
		"'kafka.tools.StorageTool' 'format' '--config' '/r/k1/server.properties'", "'--standalone'",
		"'/bin/continuum' 'kafka-topics' 'create' '--bootstrap' '127.0.0.1:9092' '--brokers' '1' '--topic' 'events:3:1'",
		"exec '" + java + "' '-Xmx1G'", "'-cp' '" + home + "/libs/*' 'kafka.Kafka' '/r/k1/server.properties'",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	props := strings.TrimPrefix(cmd.Env[0], "KAFKA_PROPERTIES=")
	for _, want := range []string{"listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093\n",
		"advertised.listeners=PLAINTEXT://10.0.0.2:9092,CONTROLLER://10.0.0.2:9093\n",
		"controller.quorum.bootstrap.servers=10.0.0.2:9093\n", "log.dirs=/r/k1/data\n", "auto.create.topics.enable=false\n"} {
		if !strings.Contains(props, want) {
			t.Errorf("properties lack %q:\n%s", want, props)
		}
	}
	if cmd.ReadyAddr != "127.0.0.1:9092" || cmd.DataDirs[0] != "/r/k1/data" {
		t.Errorf("ready %q data %q", cmd.ReadyAddr, cmd.DataDirs)
	}

	// No topics: no helper, auto-creation left on.
	_, plain := kindtest.Decode(t, "kafka", "java: "+java+"\nhome: "+home+"\n")
	cmd, _ = k.Command(env, plain)
	if strings.Contains(cmd.Args[2], "kafka-topics") || strings.Contains(cmd.Env[0], "auto.create") {
		t.Errorf("no topics, yet %q %q", cmd.Args[2], cmd.Env[0])
	}

	t.Setenv("CONTINUUM_KAFKA_HOME", t.TempDir())
	_, noHome := kindtest.Decode(t, "kafka", "java: "+java+"\n")
	if _, err := k.Command(env, noHome); err == nil || !strings.Contains(err.Error(), "continuum setup stream") {
		t.Errorf("missing Kafka: %v", err)
	}
}

func TestKafkaKindCluster(t *testing.T) {
	java, home := fakeKafka(t)
	env := kind.Env{Binary: "/bin/continuum", Node: "n2", OutDir: "/o",
		Nodes:      map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"},
		Components: map[string]kind.Component{}}
	src := "java: " + java + "\nhome: " + home + "\ncluster: c1\ntopics: [{name: t, partitions: 6, replication: 3}]\n"
	var k *kind.Kind
	for i, m := range []string{"b1", "b2"} {
		var cfg any
		k, cfg = kindtest.Decode(t, "kafka", src)
		env.Components[m] = kindtest.Component(t, fmt.Sprintf("n%d", i+1), "kafka", cfg)
	}
	env.Instance = "b2"
	if _, err := k.Command(env, env.Components["b2"].Config); err == nil || !strings.Contains(err.Error(), "odd quorum") {
		t.Errorf("a cluster of 2: %v", err)
	}
	_, cfg := kindtest.Decode(t, "kafka", src)
	env.Components["b3"] = kindtest.Component(t, "n3", "kafka", cfg)
	_, other := kindtest.Decode(t, "kafka", "cluster: c2\n")
	env.Components["other"] = kindtest.Component(t, "n3", "kafka", other)
	cmd, err := k.Command(env, env.Components["b2"].Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node.id=2\n", "controller.quorum.voters=1@10.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093\n",
		"offsets.topic.replication.factor=3\n"} {
		if !strings.Contains(cmd.Env[0], want) {
			t.Errorf("properties lack %q:\n%s", want, cmd.Env[0])
		}
	}
	if strings.Contains(cmd.Args[2], "--standalone") || !strings.Contains(cmd.Args[2], "'--brokers' '3'") {
		t.Errorf("script %s", cmd.Args[2])
	}
	// Every member formats with the same cluster id.
	env.Instance = "b1"
	cmd1, _ := k.Command(env, env.Components["b1"].Config)
	id := func(s string) string { return strings.SplitN(strings.SplitN(s, "'--cluster-id' '", 2)[1], "'", 2)[0] }
	if id(cmd1.Args[2]) != id(cmd.Args[2]) {
		t.Errorf("cluster ids %s and %s", id(cmd1.Args[2]), id(cmd.Args[2]))
	}
	// Replication beyond the quorum is refused.
	_, lone := kindtest.Decode(t, "kafka", "java: "+java+"\nhome: "+home+"\ntopics: [{name: t, partitions: 1, replication: 3}]\n")
	if _, err := k.Command(kind.Env{Instance: "x", Node: "n1"}, lone); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("replication 3 on one broker: %v", err)
	}
}

func TestKafkaKindConfigValidation(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"port: 0", "port"},
		{"port: 70000", "port"},
		{"controller_port: 9092", "controller_port are both"},
		{"data_dir: rel", "absolute"},
		{"topics: [{name: a, partitions: 0, replication: 1}]", "partitions 0"},
		{"topics: [{name: a, partitions: 1, replication: 0}]", "replication 0"},
		{"topics: [{name: 'a b', partitions: 1, replication: 1}]", "topic name"},
		{"topics: [{name: a, partitions: 1, replication: 1}, {name: a, partitions: 2, replication: 1}]", "twice"},
	} {
		k, cfg := kindtest.Decode(t, "kafka", c.yaml)
		if err := k.Validate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error about %s", c.yaml, err, c.want)
		}
	}
}

// TestKafkaKindRuns runs the command the kind renders, as a node would (on loopback, free
// ports): the shell formats the storage, the broker starts, `continuum kafka-topics create`
// creates the topic. Needs java and Kafka (`make setup`) and the continuum binary
// ($CONTINUUM_BIN, else built).
func TestKafkaKindRuns(t *testing.T) {
	for _, find := range []func(string) (string, error){baselines.JavaBinary, baselines.KafkaHome} {
		if _, err := find(""); err != nil {
			if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
	}
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	ports := make([]int, 2)
	var listeners []net.Listener // held until the broker starts, so no two ports are the same
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	k, cfg := kindtest.Decode(t, "kafka", fmt.Sprintf("port: %d\ncontroller_port: %d\ntopics: [{name: events, partitions: 4, replication: 1}]\n", ports[0], ports[1]))
	out := t.TempDir()
	cmd, err := k.Command(kind.Env{Binary: bin, Instance: "k1", Node: "local", Nodes: map[string]string{"local": "127.0.0.1"}, OutDir: out}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(out, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p := exec.Command(cmd.Args[0], cmd.Args[1:]...)
	p.Env, p.Dir, p.Stdout, p.Stderr = append(os.Environ(), cmd.Env...), out, log, log
	p.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	for _, l := range listeners {
		l.Close()
	}
	if err := deathsig.Start(p); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	t.Cleanup(func() {
		_ = p.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(baselines.StopGrace):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cmd.ReadyAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	for {
		md, err := adm.Metadata(ctx, "events")
		if err == nil && md.Topics["events"].Err == nil && len(md.Topics["events"].Partitions) == 4 {
			break
		}
		last = err
		if b, _ := os.ReadFile(filepath.Join(out, "topics.log")); strings.Contains(string(b), "rror") {
			t.Fatalf("continuum kafka-topics failed:\n%s", b)
		}
		select {
		case err := <-done:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("the broker exited (%v):\n%s", err, b)
		case <-ctx.Done():
			b, _ := os.ReadFile(filepath.Join(out, "topics.log"))
			t.Fatalf("topic events not created with 4 partitions (%v); topics.log:\n%s", last, b)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if fi, err := os.Stat(filepath.Join(out, "data", "meta.properties")); err != nil || fi.Size() == 0 {
		t.Errorf("storage not formatted: %v", err)
	}
}
