// Package setup is the catalog of what Continuum installs beyond its core, one stack per system
// that needs third-party software (the baselines, Kafka, Kubernetes, the Python venvs), and the
// installer behind `continuum setup`: it says which stacks are installed, where, and how big;
// installs a stack's Debian packages and runs the clone's scripts/setup.sh --stack NAME for the
// rest, with a progress line; and tells a command that needs a missing stack what to run.
//
// The core (the testbed's Debian packages and Go) is scripts/setup.sh's alone, since it runs before
// this binary exists; a test holds its package list to Core. Everything a stack builds lands in the
// setup cache (internal/tools) keyed by its pinned inputs, whole or not at all, so a stack is either
// there or missing, never half.
package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/tools"
)

// Stack is one installable stack.
type Stack struct {
	Name    string
	Aliases []string // other names a user may type: the systems that need it (faas, iot)
	Summary string   // what it is
	Version string   // the pinned versions of its main parts (a test holds them to the pins)
	// NeededBy says who needs it: kinds, commands, tests.
	NeededBy string
	// Apt is its Debian packages, installed by `continuum setup` before the script's step.
	Apt []string
	// Tools are what the script's step leaves in the cache and links into .tools: the stack is
	// installed when every one is found (and every Debian package is installed).
	Tools []tools.Tool
	// Size and Time are what a fresh install took on the 2-core reference machine (the README's
	// table, rounded up for the Debian packages it does not count), for the message that offers
	// it; `continuum setup` records this machine's own time and uses it instead once it has one.
	Size int64
	Time time.Duration
}

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// Core is the Debian packages scripts/setup.sh installs for every use (CORE_APT there): what the
// testbed, the quickstart and the report need.
var Core = []string{"iproute2", "iptables", "nftables", "iputils-ping", "procps", "psmisc", "ca-certificates", "unzip", "curl", "iperf3"}

// Stacks is the catalog, in the order `setup all` installs it.
var Stacks = []Stack{
	{
		Name:     "baselines",
		Version:  "etcd 3.6.16, Redis 7.0.15",
		Summary:  "etcd (built from source), Redis (built with its jemalloc), mosquitto, HAProxy",
		NeededBy: "kinds etcd, redis, redis-cluster, mosquitto; bench kv, bench proxy, bench kube-store; the kv, shareddata and iot (mqtt) scenarios",
		Apt:      []string{"gcc", "make", "libc6-dev", "redis-server", "mosquitto", "haproxy"},
		Tools:    []tools.Tool{tools.Bin("etcd"), tools.Bin("etcdctl"), tools.Bin("etcd-benchmark"), tools.Bin("redis-server"), tools.Bin("redis-cli")},
		Size:     190 * mib,
		Time:     2 * time.Minute,
	},
	{
		Name:     "stream",
		Version:  "Kafka 4.4.0, firebase 12.19.0",
		Aliases:  []string{"kafka", "firebase"},
		Summary:  "Apache Kafka (jars from Maven, OpenJDK 17); the Firebase JS SDK (npm firebase; needs Node >= 20) for the realtime database's SDK tests and dashboard",
		NeededBy: "kind kafka; the stream scenarios; the realtime database's dashboard",
		Apt:      []string{"openjdk-17-jre-headless", "maven"},
		Tools: []tools.Tool{
			{Path: "kafka/libs", CacheDir: "kafka-*", CacheRel: "libs", OK: hasKafkaJar},
			{Path: "npm-firebase/node_modules/firebase", CacheDir: "npm-firebase-*", CacheRel: "node_modules/firebase"},
		},
		Size: 240 * mib,
		Time: time.Minute,
	},
	{
		Name:     "functions",
		Version:  "pandas 3.1.1, flask 3.1.3",
		Aliases:  []string{"faas", "iot"},
		Summary:  "the Python venv of the function runtimes and handlers (pandas, Flask, Waitress) and of the Python tests (pytest, ruff)",
		NeededBy: "kinds function, micro, faas-gateway; faas gateway; the iot scenarios; make test",
		Apt:      []string{"python3", "python3-venv"},
		Tools:    []tools.Tool{venv("venv")},
		Size:     340 * mib,
		Time:     time.Minute,
	},
	{
		Name:     "fl",
		Version:  "flwr 1.41.0, Debian's python3-torch 1.13.1",
		Summary:  "the Python venv of the federated-learning services (Flower, scikit-learn; PyTorch is Debian's CPU build, with OpenBLAS)",
		NeededBy: "kinds fl-job, fl-orchestrator; fl orchestrate; the fl scenarios",
		Apt:      []string{"python3", "python3-venv", "python3-torch", "libopenblas0-serial"},
		Tools:    []tools.Tool{venv("venv-fl")},
		Size:     1303 * mib,
		Time:     3 * time.Minute,
	},
	{
		Name:     "kubernetes",
		Version:  "Kubernetes v1.37.2, helm v4.3.1, CoreDNS v1.15.0",
		Aliases:  []string{"k8s"},
		Summary:  "Kubernetes (kube-apiserver, controller-manager, scheduler, kubelet, kube-proxy, kubectl), helm v4 and CoreDNS built from source; etcd; containerd, runc and the CNI plugins",
		NeededBy: "cluster up, run --platform kubernetes on this host's cluster, bench kube-store, the chart's tests",
		Apt:      []string{"containerd", "runc", "containernetworking-plugins"},
		Tools: []tools.Tool{tools.Bin("kube-apiserver"), tools.Bin("kube-controller-manager"), tools.Bin("kube-scheduler"),
			tools.Bin("kubelet"), tools.Bin("kube-proxy"), tools.Bin("kubectl"), tools.Bin("helm"), tools.Bin("coredns"), tools.Bin("etcd")},
		Size: 740 * mib,
		Time: 10 * time.Minute,
	},
	{
		Name:     "test",
		Version:  "Debian's chromium, staticcheck 2026.2.2, govulncheck v1.10.0",
		Summary:  "what only the test suite needs beside every stack: Chromium, which renders the reports in the report tests; the linters of make lint (staticcheck, govulncheck and the Go vulnerability database, from the Go module proxy)",
		NeededBy: "make test, make lint",
		Apt:      []string{"chromium"},
		Tools: []tools.Tool{tools.Bin("staticcheck"), tools.Bin("govulncheck"),
			{Path: "vulndb/index/db.json", CacheDir: "vulndb-*", CacheRel: "index/db.json"}},
		Size: 380 * mib,
		Time: 6 * time.Minute,
	},
}

// venv is a Python venv of the script's (tools.Venv) that is whole: the script writes its
// .complete stamp last, so a venv whose pip install was cut short has bin/python but no stamp,
// and counts as missing (the script rebuilds it) rather than installed.
func venv(name string) tools.Tool {
	t := tools.Venv(name)
	t.OK = func(python string) bool {
		if _, err := os.Stat(python); err != nil {
			return false
		}
		_, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(python)), ".complete"))
		return err == nil
	}
	return t
}

// hasKafkaJar accepts a libs folder holding Kafka's own jar, as the script's step and the
// broker's lookup (internal/baselines KafkaHome) do: the folder alone is not Kafka.
func hasKafkaJar(libs string) bool {
	m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-*.jar"))
	return len(m) > 0
}

// Lookup finds a stack by name or alias.
func Lookup(name string) (Stack, bool) {
	for _, s := range Stacks {
		if s.Name == name {
			return s, true
		}
		for _, a := range s.Aliases {
			if a == name {
				return s, true
			}
		}
	}
	return Stack{}, false
}

// Resolve turns names a user typed ("all" meaning every stack) into stacks in catalog order,
// each once; an unknown name is an error listing the known ones.
func Resolve(names []string) ([]Stack, error) {
	want := map[string]bool{}
	for _, n := range names {
		if n == "all" {
			for _, s := range Stacks {
				want[s.Name] = true
			}
			continue
		}
		s, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("no stack %q: want one of %s, or all", n, strings.Join(Names(), ", "))
		}
		want[s.Name] = true
	}
	var out []Stack
	for _, s := range Stacks {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Names lists the stacks' names (not their aliases), in catalog order.
func Names() []string {
	out := make([]string, len(Stacks))
	for i, s := range Stacks {
		out[i] = s.Name
	}
	return out
}

// Command is the command that installs the named stacks, for messages: "continuum setup fl kubernetes".
func Command(names []string) string {
	s := append([]string(nil), names...)
	sort.Strings(s)
	return "continuum setup " + strings.Join(s, " ")
}

// HumanBytes writes n as "5.9 GiB", "310 MiB" or "12 KiB".
func HumanBytes(n int64) string {
	switch {
	case n >= gib:
		return fmt.Sprintf("%.1f GiB", float64(n)/float64(gib))
	case n >= mib:
		return fmt.Sprintf("%d MiB", n/mib)
	default:
		return fmt.Sprintf("%d KiB", (n+1023)/1024)
	}
}

// humanDuration writes d as "13 min", "90 s".
func humanDuration(d time.Duration) string {
	if d >= 2*time.Minute {
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}
