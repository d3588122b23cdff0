package compose

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"
)

// fogifyFile is a Fogify model in the shape of its taxi example: a cloud server, two edge
// servers, cars on an edge network and the internet, a sensor on the second edge network only,
// and a hub on both edge networks (which the testbed routes through, Fogify does not).
const fogifyFile = `
services:
  car: {image: app, environment: {NODE_TYPE: IOT_NODE}}
  server: {image: app, environment: {NODE_TYPE: CLOUD_NODE}}
  mec: {image: app, depends_on: [server]}
  unused: {image: app}
x-fogify:
  nodes:
    - {name: cloud-node, capabilities: {processor: {cores: 4, clock_speed: 1400}, memory: 4G}}
    - {name: edge-node, capabilities: {processor: {cores: 2}, memory: 2G}}
    - {name: car-node, capabilities: {processor: {cores: 1}, memory: 0.5G}}
  networks:
    - name: internet
      uplink: {bandwidth: 10Mbps, drop: 0.1%, latency: {delay: 50ms}}
      downlink: {bandwidth: 5Mbps, latency: {delay: 50ms, deviation: 4ms}}
    - {name: edge-net-1, bidirectional: {bandwidth: 100Mbps, drop: 0.2%, latency: {delay: 6ms}}}
    - {name: edge-net-2, bidirectional: {latency: {delay: 6ms}}}
  topology:
    - {label: cloud-server, service: server, node: cloud-node, networks: [internet]}
    - {label: mec-1, service: mec, node: edge-node, networks: [edge-net-1, internet]}
    - {label: mec-2, service: mec, node: edge-node, networks: [edge-net-2, internet]}
    - {label: hub, service: mec, node: edge-node, networks: [edge-net-1, edge-net-2]}
    - {label: sensor, service: car, node: car-node, networks: [edge-net-2]}
    - {label: cars, service: car, node: car-node, replicas: 2, networks: [edge-net-1, {name: internet, ip: 10.15.0.3}]}
  scenarios:
    - {name: s1, actions: [{time: 30, action: NOOP}]}
`

func fogify(t *testing.T, text string) (string, map[string]any, error) {
	t.Helper()
	dir := t.TempDir()
	writeLayout(t, filepath.Join(dir, "images"), map[string]v1.Config{"app": {Cmd: []string{"serve"}}})
	path := filepath.Join(dir, "docker-compose.yaml")
	if !strings.Contains(text, "x-continuum:") {
		text += "\nx-continuum: {images: {app: images}, duration: 20s}\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Fogify(context.Background(), path, Options{Env: []string{}})
	if err != nil {
		return "", nil, err
	}
	var sc map[string]any
	if err := yaml.Unmarshal(b, &sc); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	return string(b), sc, nil
}

// TestFogifyModel: each blueprint replica is a device node with its node type's cores and
// memory, running the blueprint's service, named by label (label-N for replicas, the label an
// alias of the first); devices sharing a network are linked with uplink + downlink (bidirectional
// halves added back), the least delay when they share several; what is not converted is said.
func TestFogifyModel(t *testing.T) {
	out, sc, err := fogify(t, fogifyFile)
	if err != nil {
		t.Fatal(err)
	}
	topo := sc["topology"].(map[string]any)
	nodes := map[string]map[string]any{}
	var order []string
	for _, n := range topo["nodes"].([]any) {
		m := n.(map[string]any)
		nodes[m["name"].(string)] = m
		order = append(order, m["name"].(string))
	}
	// depends_on: server's blueprint before mec's; then by label.
	if got := strings.Join(order, " "); got != "cars-1 cars-2 sensor cloud-server hub mec-1 mec-2" {
		t.Errorf("devices %q", got)
	}
	if c := nodes["cloud-server"]; c["cpus"] != 4 || c["memory"] != "4Gi" || c["labels"].(map[string]any)["fogify-clock-mhz"] != "1400" {
		t.Errorf("cloud-server node %v", c)
	}
	if c := nodes["cars-2"]; c["cpus"] != 1 || c["memory"] != "512Mi" {
		t.Errorf("cars-2 node %v", c)
	}
	links := map[string]map[string]any{}
	for _, l := range topo["links"].([]any) {
		m := l.(map[string]any)
		b := m["between"].([]any)
		links[b[0].(string)+"~"+b[1].(string)] = m
	}
	for pair, want := range map[string]string{
		// Both on edge-net-1 and the internet: edge-net-1's 6 ms (3 ms each way, added back),
		// 0.1% lost each way; 100Mbps is tc's megabytes, as Fogify's tc reads it.
		"cars-1~mec-1":  "bandwidth:800Mbit delay:6ms loss:0.1999%",
		"cars-1~cars-2": "bandwidth:800Mbit delay:6ms loss:0.1999%",
		// Only the internet: 50 ms up + 50 ms down, the lower bandwidth, both drops.
		"cars-1~cloud-server": "bandwidth:40Mbit delay:100ms jitter:4ms loss:0.1%",
		"cloud-server~mec-1":  "bandwidth:40Mbit delay:100ms jitter:4ms loss:0.1%",
	} {
		l, ok := links[pair]
		if !ok {
			t.Errorf("no link %s", pair)
			continue
		}
		var got []string
		for _, k := range []string{"bandwidth", "delay", "jitter", "loss"} {
			if v, ok := l[k]; ok {
				got = append(got, k+":"+v.(string))
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("link %s: %s, want %s", pair, strings.Join(got, " "), want)
		}
	}
	if _, ok := links["sensor~cloud-server"]; ok {
		t.Error("sensor shares no network with cloud-server but got a link")
	}
	comps := map[string]map[string]any{}
	for _, c := range sc["components"].([]any) {
		m := c.(map[string]any)
		comps[m["name"].(string)] = m
	}
	if c := comps["cars-2"]; c["node"] != "cars-2" || c["kind"] != "app-container" {
		t.Errorf("cars-2 component %v", c)
	}
	cfg := comps["mec-1"]["config"].(map[string]any)
	if cfg["image_name"] != "app" || cfg["aliases"].(map[string]any)["cars"] != "cars-1" {
		t.Errorf("mec-1 config %v", cfg)
	}
	if _, ok := comps["unused"]; ok || sc["duration"] != "20s" {
		t.Errorf("a service in no blueprint deployed, or x-continuum's duration lost: %v", sc["duration"])
	}
	for _, note := range []string{"# scenarios: not converted", "# nodes.cloud-node.capabilities.processor.clock_speed: not converted",
		"# services unused: in no blueprint", "# topology.cars.networks.internet.ip: not converted",
		"# sensor and cloud-server share no network (unreachable in Fogify); here they reach each other through other devices (106ms)",
		"# cars-1 and mec-2: their network's delay is 100ms, but the testbed routes them through other devices in 12ms"} {
		if !strings.Contains(out, note) {
			t.Errorf("output lacks %q:\n%s", note, out[:min(len(out), 1500)])
		}
	}
}

func TestFogifyRefusals(t *testing.T) {
	base := "services: {a: {image: app}}\n"
	for text, want := range map[string]string{
		base: "no x-fogify section",
		base + "x-fogify: {nodes: [{name: n}], topology: [{label: x, service: b, node: n}]}":                                                          `service "b" is not a service`,
		base + "x-fogify: {nodes: [{name: n}], topology: [{label: x, service: a, node: m}]}":                                                          `node "m" is not one of x-fogify.nodes`,
		base + "x-fogify: {nodes: [{name: n}], topology: [{label: x, service: a, node: n, networks: [wan]}]}":                                         `network "wan" is not one of x-fogify.networks`,
		base + "x-fogify: {nodes: [{name: n, cpu: 1}]}":                                                                                               `unknown key "cpu" (allowed there: name, capabilities`,
		base + "x-fogify: {networks: [{name: w}], nodes: [{name: n}], topology: [{label: x, service: a, node: n}]}":                                   "give uplink and downlink, or bidirectional",
		base + "x-fogify: {networks: [{name: w, bidirectional: {latency: {delay: soon}}}]}":                                                           "latency.delay",
		base + "x-fogify: {networks: [{name: w, bidirectional: {}, links: [{from_node: a}]}]}":                                                        "links: not supported",
		base + "x-fogify: {nodes: [{name: n, capabilities: {memory: lots}}], topology: [{label: x, service: a, node: n}]}":                            "capabilities.memory",
		base + "x-fogify: {nodes: [{name: n}], topology: [{label: x, service: a, node: n}, {label: x, service: a, node: n}]}":                         "label used twice",
		base + "x-fogify: {nodes: [{name: n}], topology: [{label: x, service: a, node: n, replicas: 0}]}":                                             "replicas 0",
		base + "x-fogify: {nodes: [{name: n}], topology: [{label: x, service: a, node: n}]}\nx-continuum: {images: {app: images}, placement: {a: n}}": "the blueprints place the services",
	} {
		_, _, err := fogify(t, text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n  error %v\n  want it to say %q", text, err, want)
		}
	}
}

// FuzzFogify: any x-fogify section is converted or refused with an error, never a panic, and
// what is converted is YAML.
func FuzzFogify(f *testing.F) {
	f.Add(`{nodes: [{name: n, capabilities: {processor: {cores: 1}, memory: 1G}}], networks: [{name: w, bidirectional: {latency: {delay: 5ms}}}], topology: [{label: x, service: a, node: n, replicas: 2, networks: [w]}]}`)
	f.Add(`{nodes: [{name: n}], networks: [{name: w, uplink: {drop: 1%}, downlink: {bandwidth: 1Mbit}}], topology: [{label: x, service: a, node: n, networks: [{name: w, ip: 1.2.3.4}]}]}`)
	f.Add(`{topology: [{label: x, service: a, node: n, replicas: 1000000000}], nodes: [{name: n}]}`)
	dir := f.TempDir()
	writeLayout(f, filepath.Join(dir, "images"), map[string]v1.Config{"app": {Cmd: []string{"serve"}}})
	f.Fuzz(func(t *testing.T, model string) {
		path := filepath.Join(t.TempDir(), "docker-compose.yaml")
		text := "services: {a: {image: app}}\nx-continuum: {images: {app: " + filepath.Join(dir, "images") + "}}\nx-fogify: " + model + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := Fogify(context.Background(), path, Options{Env: []string{}})
		if err != nil {
			return
		}
		var sc map[string]any
		if err := yaml.Unmarshal(out, &sc); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, out)
		}
	})
}
