package compose

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
)

// maxDevices bounds the devices a model may ask for: each is a node of the testbed, and every
// two on a network get a link.
const maxDevices = 1000

// FogifyExtension is the section of a Compose file that holds Fogify's model.
const FogifyExtension = "x-fogify"

// fogifyModel is Fogify's model: node types (capabilities), networks (each member's uplink and
// downlink, or both at once), the topology of blueprints (a service on a node type, on
// networks, replicated), and runtime scenarios (not converted).
type fogifyModel struct {
	Nodes     []fogifyNode      `yaml:"nodes"`
	Networks  []fogifyNetwork   `yaml:"networks"`
	Topology  []fogifyBlueprint `yaml:"topology"`
	Scenarios []any             `yaml:"scenarios"`
}

type fogifyNode struct {
	Name         string `yaml:"name"`
	Capabilities struct {
		Processor struct {
			Cores      float64 `yaml:"cores"`
			ClockSpeed float64 `yaml:"clock_speed"`
		} `yaml:"processor"`
		Memory string `yaml:"memory"`
	} `yaml:"capabilities"`
	NodeSpecifications any `yaml:"node_specifications"`
}

type fogifyNetwork struct {
	Name          string      `yaml:"name"`
	Uplink        *fogifyLink `yaml:"uplink"`
	Downlink      *fogifyLink `yaml:"downlink"`
	Bidirectional *fogifyLink `yaml:"bidirectional"`
	Capacity      any         `yaml:"capacity"`
	Links         any         `yaml:"links"`
	Subnet        string      `yaml:"subnet"`
	Gateway       string      `yaml:"gateway"`
	IP            string      `yaml:"ip"` // a blueprint's address on a named network
}

type fogifyLink struct {
	Bandwidth string `yaml:"bandwidth"`
	Drop      string `yaml:"drop"`
	Latency   struct {
		Delay     string `yaml:"delay"`
		Deviation string `yaml:"deviation"`
	} `yaml:"latency"`
}

type fogifyBlueprint struct {
	Label    string          `yaml:"label"`
	Service  string          `yaml:"service"`
	Node     string          `yaml:"node"`
	Replicas *int            `yaml:"replicas"`
	Networks []fogifyNetwork `yaml:"networks"`
}

// UnmarshalYAML takes a network a blueprint names either by name or as a mapping.
func (n *fogifyNetwork) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		n.Name = v.Value
		return nil
	}
	type plain fogifyNetwork
	return v.Decode((*plain)(n))
}

// direction is one member's side of a network: what its packets meet going out (uplink) or
// coming in (downlink).
type direction struct {
	delay, jitter time.Duration
	loss          float64
	bandwidth     spec.Bandwidth
}

func (l *fogifyLink) direction(where string, half bool) (direction, error) {
	var d direction
	if l == nil {
		return d, nil
	}
	var err error
	if s := l.Latency.Delay; s != "" {
		if d.delay, err = fogifyDuration(s); err != nil {
			return d, fmt.Errorf("%s.latency.delay: %w", where, err)
		}
	}
	if s := l.Latency.Deviation; s != "" {
		if d.jitter, err = fogifyDuration(s); err != nil {
			return d, fmt.Errorf("%s.latency.deviation: %w", where, err)
		}
	}
	if s := l.Drop; s != "" {
		p, err := spec.ParsePercent(s)
		if err != nil {
			return d, fmt.Errorf("%s.drop: %w", where, err)
		}
		d.loss = float64(p)
	}
	if s := l.Bandwidth; s != "" {
		if d.bandwidth, err = spec.ParseBandwidth(s); err != nil {
			return d, fmt.Errorf("%s.bandwidth: %w", where, err)
		}
	}
	if half { // Fogify applies half of a bidirectional delay, deviation and drop each way
		d.delay, d.jitter, d.loss = d.delay/2, d.jitter/2, d.loss/2
	}
	return d, nil
}

// fogifyDuration reads Fogify's delays: "50ms", "1s", or a bare number of milliseconds.
func fogifyDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration like 50ms", s)
	}
	return d, nil
}

var dockerMemRE = regexp.MustCompile(`^(?i)([0-9]*\.?[0-9]+)\s*([bkmgt]?)b?$`)

// dockerMemory reads a memory size as Docker does ("4G", "0.5G", "512m": 1024-based).
func dockerMemory(s string) (int64, error) {
	m := dockerMemRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q: want a size like 512M or 4G", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "m": 20, "g": 30, "t": 40}[strings.ToLower(m[2])]
	return int64(math.Round(v * float64(int64(1)<<shift))), nil
}

// memberLink is what a network gives a packet between two of its members: the sender's uplink
// then the receiver's downlink. Every member has the same sides, so it is the same both ways.
type memberLink struct {
	network string
	direction
}

func (n *fogifyNetwork) memberLink(where string) (memberLink, error) {
	var up, down direction
	var err error
	switch {
	case n.Uplink != nil || n.Downlink != nil:
		if n.Bidirectional != nil {
			return memberLink{}, fmt.Errorf("%s: uplink/downlink or bidirectional, not both", where)
		}
		if up, err = n.Uplink.direction(where+".uplink", false); err != nil {
			return memberLink{}, err
		}
		if down, err = n.Downlink.direction(where+".downlink", false); err != nil {
			return memberLink{}, err
		}
	case n.Bidirectional != nil:
		if up, err = n.Bidirectional.direction(where+".bidirectional", true); err != nil {
			return memberLink{}, err
		}
		down = up
	default:
		return memberLink{}, fmt.Errorf("%s: give uplink and downlink, or bidirectional", where)
	}
	l := memberLink{network: n.Name}
	l.delay, l.jitter = up.delay+down.delay, up.jitter+down.jitter
	l.loss = 1 - (1-up.loss)*(1-down.loss)
	l.bandwidth = up.bandwidth
	if down.bandwidth != 0 && (l.bandwidth == 0 || down.bandwidth < l.bandwidth) {
		l.bandwidth = down.bandwidth
	}
	return l, nil
}

// fogifyKeys are the keys each part of the model takes, for errors.
var fogifyKeys = map[string]string{
	"fogifyModel":     "nodes, networks, topology, scenarios",
	"fogifyNode":      "name, capabilities (processor: cores, clock_speed; memory), node_specifications",
	"fogifyNetwork":   "name, uplink, downlink, bidirectional (each: bandwidth, drop, latency: delay, deviation)",
	"fogifyLink":      "bandwidth, drop, latency (delay, deviation)",
	"fogifyBlueprint": "label, service, node, replicas, networks",
}

var yamlFieldErr = regexp.MustCompile(`field (\S+) not found in type compose\.(\w+)`)

// Fogify reads a Compose file with Fogify's x-fogify model and returns the scenario it means: a
// node per emulated device (each blueprint's replicas), with its node type's cores and memory;
// a link between every two devices that share a network (the sender's uplink plus the
// receiver's downlink; the least delay when they share several); the blueprint's service as a
// container component on its device, named by the blueprint's label (label-N for replicas).
// Lines starting with # say what was not converted. An x-continuum section may add images, a
// duration, workloads and events, as in a Compose file.
func Fogify(ctx context.Context, path string, o Options) ([]byte, error) {
	p, dir, err := load(ctx, path, o)
	if err != nil {
		return nil, err
	}
	raw, ok := p.Extensions[FogifyExtension]
	if !ok {
		return nil, fmt.Errorf("no %s section: not a Fogify model (continuum run takes a plain Compose file as it is)", FogifyExtension)
	}
	var m fogifyModel
	b, err := yaml.Marshal(raw)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if sm := yamlFieldErr.FindStringSubmatch(err.Error()); sm != nil {
			return nil, fmt.Errorf("%s: unknown key %q (allowed there: %s)", FogifyExtension, sm[1], fogifyKeys[sm[2]])
		}
		return nil, fmt.Errorf("%s: %w", FogifyExtension, err)
	}
	var ext projectExt
	if x, ok := p.Extensions[Extension]; ok {
		if err := decodeExt(x, &ext); err != nil {
			return nil, fmt.Errorf("%s: %w", Extension, err)
		}
	}
	for _, k := range []string{"components", "topology", "topology_file"} {
		if _, ok := ext.Rest[k]; ok {
			return nil, fmt.Errorf("%s.%s: with %s the topology and components come from its model", Extension, k, FogifyExtension)
		}
	}
	if len(ext.Placement) > 0 {
		return nil, fmt.Errorf("%s.placement: with %s the blueprints place the services", Extension, FogifyExtension)
	}
	var notes []string
	nodeTypes := map[string]*fogifyNode{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Name == "" {
			return nil, fmt.Errorf("%s.nodes[%d]: name required", FogifyExtension, i)
		}
		nodeTypes[n.Name] = n
		if n.Capabilities.Processor.ClockSpeed > 0 {
			notes = append(notes, fmt.Sprintf("nodes.%s.capabilities.processor.clock_speed: not converted (a device gets its cores as its CPU limit; kept as the label fogify-clock-mhz)", n.Name))
		}
		if n.NodeSpecifications != nil {
			notes = append(notes, fmt.Sprintf("nodes.%s.node_specifications: not converted (placement on host machines)", n.Name))
		}
	}
	networks := map[string]memberLink{}
	for i := range m.Networks {
		n := &m.Networks[i]
		where := fmt.Sprintf("%s.networks[%d] (%s)", FogifyExtension, i, n.Name)
		if n.Name == "" {
			return nil, fmt.Errorf("%s.networks[%d]: name required", FogifyExtension, i)
		}
		if n.Links != nil {
			return nil, fmt.Errorf("%s.links: not supported (per-pair properties): put the pairs on networks of their own", where)
		}
		l, err := n.memberLink(where)
		if err != nil {
			return nil, err
		}
		networks[n.Name] = l
		if n.Capacity != nil || n.Subnet != "" {
			notes = append(notes, fmt.Sprintf("networks.%s: capacity, subnet and gateway not converted (the testbed gives addresses)", n.Name))
		}
	}
	if len(m.Scenarios) > 0 {
		notes = append(notes, "scenarios: not converted (Fogify's runtime actions): write them as events in x-continuum (partition, link, kill, restart...)")
	}
	if len(m.Topology) == 0 {
		return nil, fmt.Errorf("%s.topology: no blueprints: nothing to deploy", FogifyExtension)
	}

	// Blueprints in their services' start order, then by label.
	order, err := startOrder(p, imageHealthcheck(p, ext, dir))
	if err != nil {
		return nil, err
	}
	rank := map[string]int{}
	for i, s := range order {
		rank[s] = i
	}
	bps := append([]fogifyBlueprint{}, m.Topology...)
	sort.SliceStable(bps, func(i, j int) bool {
		if rank[bps[i].Service] != rank[bps[j].Service] {
			return rank[bps[i].Service] < rank[bps[j].Service]
		}
		return bps[i].Label < bps[j].Label
	})

	type device struct {
		name     string
		networks map[string]memberLink
	}
	var devices []device
	var nodes, comps []map[string]any
	aliases := map[string]string{}
	deployed := map[string]bool{}
	labels := map[string]bool{}
	for i, bp := range bps {
		where := fmt.Sprintf("%s.topology (%s)", FogifyExtension, bp.Label)
		if bp.Label == "" {
			return nil, fmt.Errorf("%s.topology[%d]: label required", FogifyExtension, i)
		}
		if labels[bp.Label] {
			return nil, fmt.Errorf("%s: label used twice", where)
		}
		labels[bp.Label] = true
		svc, ok := p.Services[bp.Service]
		if !ok {
			return nil, fmt.Errorf("%s: service %q is not a service of the file (or not in the active profiles)", where, bp.Service)
		}
		nt, ok := nodeTypes[bp.Node]
		if !ok {
			return nil, fmt.Errorf("%s: node %q is not one of %s.nodes", where, bp.Node, FogifyExtension)
		}
		nets := map[string]memberLink{}
		for j, ref := range bp.Networks {
			l, ok := networks[ref.Name]
			if ref.Uplink != nil || ref.Downlink != nil || ref.Bidirectional != nil {
				if l, err = ref.memberLink(fmt.Sprintf("%s.networks[%d]", where, j)); err != nil {
					return nil, err
				}
			} else if !ok {
				return nil, fmt.Errorf("%s.networks[%d]: network %q is not one of %s.networks", where, j, ref.Name, FogifyExtension)
			}
			if ref.IP != "" {
				notes = append(notes, fmt.Sprintf("topology.%s.networks.%s.ip: not converted (the testbed gives addresses; use the component's name)", bp.Label, ref.Name))
			}
			nets[ref.Name] = l
		}
		cfg, err := containerConfig(bp.Service, svc, serviceExt{}, ext, dir, p)
		if err != nil {
			return nil, err
		}
		n := 1
		if bp.Replicas != nil {
			n = *bp.Replicas
		}
		if n < 1 || n > maxDevices || len(devices)+n > maxDevices {
			return nil, fmt.Errorf("%s: replicas %d: at least 1, and at most %d devices in all (one network namespace each)", where, n, maxDevices)
		}
		deployed[bp.Service] = true
		for r := 1; r <= n; r++ {
			name := bp.Label
			if n > 1 {
				name = fmt.Sprintf("%s-%d", bp.Label, r)
				if r == 1 {
					aliases[bp.Label] = name
				}
			}
			if len(name) > 32 {
				return nil, fmt.Errorf("%s: the device name %q is longer than 32 characters: give the blueprint a shorter label", where, name)
			}
			node := map[string]any{"name": name, "labels": map[string]string{"fogify-node": bp.Node, "fogify-blueprint": bp.Label}}
			if c := nt.Capabilities.Processor.Cores; c > 0 {
				node["cpus"] = c
			}
			if s := nt.Capabilities.Memory; s != "" {
				mem, err := dockerMemory(s)
				if err != nil {
					return nil, fmt.Errorf("%s.nodes.%s.capabilities.memory: %w", FogifyExtension, bp.Node, err)
				}
				node["memory"] = spec.Bytes(mem).String()
			}
			if cs := nt.Capabilities.Processor.ClockSpeed; cs > 0 {
				node["labels"].(map[string]string)["fogify-clock-mhz"] = strconv.FormatFloat(cs, 'f', -1, 64)
			}
			nodes = append(nodes, node)
			devices = append(devices, device{name: name, networks: nets})
			comps = append(comps, map[string]any{"name": name, "kind": "app-container", "node": name, "config": cfg})
		}
	}
	var idle []string
	for name := range p.Services {
		if !deployed[name] {
			idle = append(idle, name)
		}
	}
	sort.Strings(idle)
	if len(idle) > 0 {
		notes = append(notes, "services "+strings.Join(idle, ", ")+": in no blueprint, not deployed (as in Fogify)")
	}
	if len(aliases) > 0 {
		for _, c := range comps {
			c["config"].(map[string]any)["aliases"] = aliases
		}
	}

	// A link per pair of devices sharing a network: the least delay over the networks shared.
	delay := make([][]time.Duration, len(devices))
	var links []map[string]any
	for i := range devices {
		delay[i] = make([]time.Duration, len(devices))
		for j := range devices {
			delay[i][j] = -1
		}
		delay[i][i] = 0
	}
	for i := range devices {
		for j := i + 1; j < len(devices); j++ {
			var best *memberLink
			for name, l := range devices[i].networks {
				if _, ok := devices[j].networks[name]; ok && (best == nil || l.delay < best.delay || l.delay == best.delay && l.network < best.network) {
					l := l
					best = &l
				}
			}
			if best == nil {
				continue
			}
			delay[i][j], delay[j][i] = best.delay, best.delay
			link := map[string]any{"between": []string{devices[i].name, devices[j].name}}
			if best.delay > 0 {
				link["delay"] = best.delay.String()
			}
			if best.jitter > 0 {
				link["jitter"] = best.jitter.String()
			}
			if best.loss > 0 {
				link["loss"] = spec.Percent(best.loss).String()
			}
			if best.bandwidth > 0 {
				link["bandwidth"] = best.bandwidth.String()
			}
			links = append(links, link)
		}
	}
	names := make([]string, len(devices))
	for i, d := range devices {
		names[i] = d.name
	}
	notes = append(notes, routeNotes(names, delay)...)

	sc := map[string]any{"version": 1, "name": p.Name, "description": "from the Fogify model in " + filepath.Base(p.ComposeFiles[0]), "duration": "30s"}
	for k, v := range ext.Rest {
		sc[k] = v
	}
	topo := map[string]any{"nodes": nodes}
	if len(links) > 0 {
		topo["links"] = links
	}
	sc["topology"] = topo
	sc["components"] = comps
	out, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	var head strings.Builder
	for _, n := range notes {
		head.WriteString("# " + n + "\n")
	}
	return append([]byte(head.String()), out...), nil
}

// routeNotes says where the testbed's routing differs from Fogify's networks: the testbed
// forwards packets over its links, shortest by delay, so two devices that share no network reach
// each other through a third (unreachable in Fogify), and a path through a third may be shorter
// than their own network. delay[i][j] is the direct link's, -1 without one.
func routeNotes(names []string, delay [][]time.Duration) []string {
	n := len(names)
	dist := make([][]time.Duration, n)
	for i := range delay {
		dist[i] = append([]time.Duration{}, delay[i]...)
	}
	for k := 0; k < n; k++ {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if dist[i][k] >= 0 && dist[k][j] >= 0 && (dist[i][j] < 0 || dist[i][k]+dist[k][j] < dist[i][j]) {
					dist[i][j] = dist[i][k] + dist[k][j]
				}
			}
		}
	}
	var notes []string
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case delay[i][j] < 0 && dist[i][j] >= 0:
				notes = append(notes, fmt.Sprintf("%s and %s share no network (unreachable in Fogify); here they reach each other through other devices (%v)", names[i], names[j], dist[i][j]))
			case delay[i][j] >= 0 && dist[i][j] < delay[i][j]:
				notes = append(notes, fmt.Sprintf("%s and %s: their network's delay is %v, but the testbed routes them through other devices in %v", names[i], names[j], delay[i][j], dist[i][j]))
			}
		}
	}
	if len(notes) > 20 {
		notes = append(notes[:20], fmt.Sprintf("... and %d more pairs routed through other devices", len(notes)-20))
	}
	return notes
}
