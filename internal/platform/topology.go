package platform

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
)

// Defaults and bounds of a topology. The power defaults (10 W idle, 50 W at full load) are those of
// a small edge box; a node that leaves power unset still gets an energy estimate, so reports can
// always show energy, and the defaults are documented in docs/testbed.md.
const (
	DefaultNetwork = "10.77.0.0/16"
	DefaultMTU     = 1500
	DefaultQueue   = 1000
	DefaultIdleW   = 10.0
	DefaultMaxW    = 50.0

	MinMTU       = 576 // the IPv4 minimum datagram size every host must accept
	MaxMTU       = 65535
	MaxCPUs      = 1024
	MinMemory    = spec.Bytes(4 << 20) // below this not even a shell starts in the cgroup
	MaxNodeName  = 32
	nodeNameRule = "lowercase letters, digits and '-', starting and ending with a letter or digit, at most 32 characters"
)

var nodeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// LoadTopology reads, defaults and validates a topology file.
func LoadTopology(path string) (*Topology, error) {
	n, err := spec.ParseFile(path)
	if err != nil {
		return nil, err
	}
	return decodeTopology(path, n)
}

// ParseTopology is LoadTopology on bytes already read; file names them in errors.
func ParseTopology(file string, data []byte) (*Topology, error) {
	n, err := spec.Parse(file, data)
	if err != nil {
		return nil, err
	}
	return decodeTopology(file, n)
}

func decodeTopology(file string, n *yaml.Node) (*Topology, error) {
	var t Topology
	if err := spec.Decode(file, n, &t); err != nil {
		return nil, err
	}
	t.ApplyDefaults()
	if err := t.Validate(file, n); err != nil {
		return nil, err
	}
	return &t, nil
}

// ApplyDefaults fills Network, MTU, link queues and node power models. It does not assign node
// addresses: Addresses computes them on demand, so that the topology written to a results
// directory stays as the user wrote it and re-validating it gives the same addresses.
func (t *Topology) ApplyDefaults() {
	if t.Network == "" {
		t.Network = DefaultNetwork
	}
	if t.MTU == 0 {
		t.MTU = DefaultMTU
	}
	for i := range t.Links {
		if t.Links[i].Queue == 0 {
			t.Links[i].Queue = DefaultQueue
		}
	}
	for i := range t.Nodes {
		if p := &t.Nodes[i].Power; p.IdleW == 0 && p.MaxW == 0 {
			p.IdleW, p.MaxW = DefaultIdleW, DefaultMaxW
		}
	}
}

// NodeNames lists the node names in declaration order.
func (t *Topology) NodeNames() []string {
	names := make([]string, len(t.Nodes))
	for i, n := range t.Nodes {
		names[i] = n.Name
	}
	return names
}

// Node returns the node with that name.
func (t *Topology) Node(name string) (*Node, bool) {
	for i := range t.Nodes {
		if t.Nodes[i].Name == name {
			return &t.Nodes[i], true
		}
	}
	return nil, false
}

// Link returns the link between a and b (in either order).
func (t *Topology) Link(a, b string) (*Link, bool) {
	for i := range t.Links {
		l := &t.Links[i]
		if len(l.Between) == 2 && (l.Between[0] == a && l.Between[1] == b || l.Between[0] == b && l.Between[1] == a) {
			return l, true
		}
	}
	return nil, false
}

// Addresses assigns every node its IPv4 address: pinned ones as written, the others in declaration
// order from the first host address (.1) up, skipping pinned ones. An empty Network means
// DefaultNetwork. Errors are unpositioned; Validate reports them with file:line.
func (t *Topology) Addresses() (map[string]netip.Addr, netip.Prefix, error) {
	network := t.Network
	if network == "" {
		network = DefaultNetwork
	}
	prefix, err := parseNetwork(network)
	if err != nil {
		return nil, prefix, err
	}
	addrs := make(map[string]netip.Addr, len(t.Nodes))
	taken := map[netip.Addr]string{}
	for _, n := range t.Nodes {
		if n.Address == "" {
			continue
		}
		a, err := parseAddress(n.Address, prefix)
		if err != nil {
			return nil, prefix, fmt.Errorf("node %q: %w", n.Name, err)
		}
		if other, dup := taken[a]; dup {
			return nil, prefix, fmt.Errorf("node %q: address %s is already used by node %q", n.Name, a, other)
		}
		taken[a] = n.Name
		addrs[n.Name] = a
	}
	next := prefix.Addr().Next()
	for _, n := range t.Nodes {
		if n.Address != "" {
			continue
		}
		for taken[next] != "" {
			next = next.Next()
		}
		if !usable(next, prefix) {
			return nil, prefix, fmt.Errorf("network %s has no room for %d nodes", prefix, len(t.Nodes))
		}
		taken[next] = n.Name
		addrs[n.Name] = next
		next = next.Next()
	}
	return addrs, prefix, nil
}

func parseNetwork(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return p, fmt.Errorf("invalid network %q: want an IPv4 CIDR like %s", s, DefaultNetwork)
	}
	if p.Masked() != p {
		return p, fmt.Errorf("invalid network %q: host bits are set (did you mean %s?)", s, p.Masked())
	}
	if p.Bits() > 30 {
		return p, fmt.Errorf("invalid network %q: want a prefix of at most /30 so that nodes have room", s)
	}
	return p, nil
}

func parseAddress(s string, p netip.Prefix) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return a, fmt.Errorf("invalid address %q: want an IPv4 address inside %s", s, p)
	}
	if !usable(a, p) {
		return a, fmt.Errorf("address %s is not a host address of network %s", a, p)
	}
	return a, nil
}

// usable reports whether a is inside p and neither its network nor its broadcast address.
func usable(a netip.Addr, p netip.Prefix) bool {
	if !p.Contains(a) || a == p.Addr() {
		return false
	}
	b := a.As4()
	host := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	mask := uint32(1)<<(32-p.Bits()) - 1
	return host&mask != mask
}

// Validate checks the topology and reports every problem. root is the topology's YAML node, used to
// point errors at file:line; it may be nil for a topology built in code (errors then carry no line).
// Zero values that ApplyDefaults would fill are accepted.
func (t *Topology) Validate(file string, root *yaml.Node) error {
	var errs spec.Errors
	at := func(path ...any) *yaml.Node { return spec.Locate(root, path...) }
	if len(t.Nodes) == 0 {
		errs.Addf(file, at("nodes"), "nodes: at least one node is required")
	}
	seen := map[string]int{}
	for i, n := range t.Nodes {
		where := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			errs.Addf(file, at("nodes", i), "%s: name is required (%s)", where, nodeNameRule)
		case len(n.Name) > MaxNodeName || !nodeNameRE.MatchString(n.Name):
			errs.Addf(file, at("nodes", i, "name"), "%s: invalid node name %q: want %s", where, n.Name, nodeNameRule)
		}
		if first, dup := seen[n.Name]; dup && n.Name != "" {
			errs.Addf(file, at("nodes", i, "name"), "%s: duplicate node name %q (also nodes[%d])", where, n.Name, first)
		} else {
			seen[n.Name] = i
		}
		if n.CPUs < 0 || n.CPUs > MaxCPUs {
			errs.Addf(file, at("nodes", i, "cpus"), "%s: cpus must be between 0 (unlimited) and %d, got %g", where, MaxCPUs, n.CPUs)
		}
		if n.Memory < 0 || n.Memory > 0 && n.Memory < MinMemory {
			errs.Addf(file, at("nodes", i, "memory"), "%s: memory must be 0 (unlimited) or at least %s, got %s", where, MinMemory, n.Memory)
		}
		if n.Power.IdleW < 0 || n.Power.MaxW < 0 {
			errs.Addf(file, at("nodes", i, "power"), "%s: power: idle_w and max_w must not be negative", where)
		} else if n.Power.IdleW > n.Power.MaxW {
			errs.Addf(file, at("nodes", i, "power"), "%s: power: idle_w (%g) must not exceed max_w (%g)", where, n.Power.IdleW, n.Power.MaxW)
		}
	}
	t.validateLinks(file, root, &errs)
	if t.MTU != 0 && (t.MTU < MinMTU || t.MTU > MaxMTU) {
		errs.Addf(file, at("mtu"), "mtu must be between %d and %d, got %d", MinMTU, MaxMTU, t.MTU)
	}
	if _, _, err := t.Addresses(); err != nil {
		errs.Add(spec.Errorf(file, t.addressNode(root, err), "%v", err))
	}
	return errs.Err()
}

// addressNode points an Addresses error at the node it names, or at network.
func (t *Topology) addressNode(root *yaml.Node, err error) *yaml.Node {
	for i, n := range t.Nodes {
		if n.Address != "" && strings.HasPrefix(err.Error(), fmt.Sprintf("node %q:", n.Name)) {
			return spec.Locate(root, "nodes", i, "address")
		}
	}
	return spec.Locate(root, "network")
}

func (t *Topology) validateLinks(file string, root *yaml.Node, errs *spec.Errors) {
	names := t.NodeNames()
	pairs := map[[2]string]int{}
	for i, l := range t.Links {
		where := fmt.Sprintf("links[%d]", i)
		if len(l.Between) != 2 {
			errs.Addf(file, spec.Locate(root, "links", i, "between"), "%s: between must name exactly two nodes, got %d", where, len(l.Between))
		} else {
			ok := true
			for j, name := range l.Between {
				if !slices.Contains(names, name) {
					errs.Addf(file, spec.Locate(root, "links", i, "between", j), "%s: unknown node %q; nodes: %s", where, name, strings.Join(names, ", "))
					ok = false
				}
			}
			a, b := l.Between[0], l.Between[1]
			if a == b {
				errs.Addf(file, spec.Locate(root, "links", i, "between"), "%s: a link needs two distinct nodes, got %q twice", where, a)
			} else if ok {
				key := [2]string{min(a, b), max(a, b)}
				if first, dup := pairs[key]; dup {
					errs.Addf(file, spec.Locate(root, "links", i, "between"), "%s: duplicate link between %s and %s (also links[%d])", where, a, b, first)
				}
				pairs[key] = i
			}
		}
		if l.Queue < 0 {
			errs.Addf(file, spec.Locate(root, "links", i, "queue"), "%s: queue must not be negative, got %d", where, l.Queue)
		}
		for _, e := range checkLinkProps(&l.Delay, &l.Jitter, &l.Loss, &l.Bandwidth) {
			errs.Addf(file, spec.Locate(root, "links", i, e.field), "%s: %s", where, e.msg)
		}
	}
}

type propError struct{ field, msg string }

// checkLinkProps checks link properties; nil pointers (unchanged fields of a link fault) are skipped.
func checkLinkProps(delay, jitter *spec.Duration, loss *spec.Percent, bw *spec.Bandwidth) []propError {
	var errs []propError
	if delay != nil && delay.Duration < 0 {
		errs = append(errs, propError{"delay", fmt.Sprintf("delay must not be negative, got %s", delay)})
	}
	if jitter != nil && jitter.Duration < 0 {
		errs = append(errs, propError{"jitter", fmt.Sprintf("jitter must not be negative, got %s", jitter)})
	}
	// Jitter is applied as delay +- jitter; more jitter than delay would need negative delays.
	if delay != nil && jitter != nil && jitter.Duration > delay.Duration && delay.Duration >= 0 {
		errs = append(errs, propError{"jitter", fmt.Sprintf("jitter must not exceed delay (jitter %s, delay %s)", jitter, delay)})
	}
	if loss != nil && (*loss < 0 || *loss > 1) {
		errs = append(errs, propError{"loss", fmt.Sprintf("loss must be between 0%% and 100%%, got %s", loss)})
	}
	if bw != nil && *bw < 0 {
		errs = append(errs, propError{"bandwidth", fmt.Sprintf("bandwidth must not be negative (0 = unlimited), got %s", bw)})
	}
	return errs
}

// faultFields says which Fault fields each action takes; anything else set is an error, so that a
// misplaced field (delay on a partition) is not silently ignored.
var faultFields = map[string][]string{
	FaultPartition: {"node", "link", "groups"},
	FaultHeal:      {"node", "link", "groups"},
	FaultLink:      {"link", "delay", "jitter", "loss", "bandwidth"},
	FaultKill:      {"node", "component"},
	FaultPause:     {"node"},
	FaultResume:    {"node"},
	FaultCPU:       {"node", "cpus"},
	FaultRestart:   {"component"},
}

// setFields lists the YAML names of the fields f sets (Action excluded).
func (f *Fault) setFields() []string {
	var set []string
	add := func(name string, ok bool) {
		if ok {
			set = append(set, name)
		}
	}
	add("node", f.Node != "")
	add("component", f.Component != "")
	add("link", f.Link != nil)
	add("groups", f.Groups != nil)
	add("delay", f.Delay != nil)
	add("jitter", f.Jitter != nil)
	add("loss", f.Loss != nil)
	add("bandwidth", f.Bandwidth != nil)
	add("cpus", f.CPUs != nil)
	return set
}

// Validate checks the fault against a topology. components are the component names a kill or
// restart may target; nil means "not known here" (the CLI, which talks to a running testbed) and
// skips that check. The error carries no position: scenario events wrap it with theirs.
func (f *Fault) Validate(t *Topology, components []string) error {
	allowed, ok := faultFields[f.Action]
	if !ok {
		return fmt.Errorf("unknown action %q; allowed: %s", f.Action, strings.Join(FaultActions, ", "))
	}
	set := f.setFields()
	for _, name := range set {
		if !slices.Contains(allowed, name) {
			return fmt.Errorf("%s does not apply to action %s (it takes: %s)", name, f.Action, strings.Join(allowed, ", "))
		}
	}
	targets := 0
	for _, name := range set {
		if name == "node" || name == "link" || name == "groups" {
			targets++
		}
	}
	switch f.Action {
	case FaultPartition:
		if targets != 1 {
			return fmt.Errorf("partition needs exactly one of node (isolate it), link [a, b] (cut it) or groups (split the nodes)")
		}
	case FaultHeal:
		if targets > 1 {
			return fmt.Errorf("heal takes at most one of node, link or groups (none heals every partition)")
		}
	case FaultLink:
		if f.Link == nil {
			return fmt.Errorf("link needs link: [a, b], an existing link of the topology")
		}
		if f.Delay == nil && f.Jitter == nil && f.Loss == nil && f.Bandwidth == nil {
			return fmt.Errorf("link needs at least one of delay, jitter, loss, bandwidth")
		}
		if errs := checkLinkProps(f.Delay, f.Jitter, f.Loss, f.Bandwidth); len(errs) > 0 {
			return fmt.Errorf("%s", errs[0].msg)
		}
	case FaultKill:
		if (f.Node == "") == (f.Component == "") {
			return fmt.Errorf("kill needs exactly one of node or component")
		}
	case FaultPause, FaultResume:
		if f.Node == "" {
			return fmt.Errorf("%s needs node; nodes: %s", f.Action, strings.Join(t.NodeNames(), ", "))
		}
	case FaultCPU:
		if f.Node == "" || f.CPUs == nil {
			return fmt.Errorf("cpu needs node and cpus (cores, 0 = unlimited)")
		}
		if *f.CPUs < 0 || *f.CPUs > MaxCPUs {
			return fmt.Errorf("cpus must be between 0 (unlimited) and %d, got %g", MaxCPUs, *f.CPUs)
		}
	case FaultRestart:
		if f.Component == "" {
			return fmt.Errorf("restart needs component")
		}
	}
	return f.checkTargets(t, components)
}

// checkTargets checks that the named nodes, link and components exist.
func (f *Fault) checkTargets(t *Topology, components []string) error {
	names := t.NodeNames()
	node := func(n string) error {
		if !slices.Contains(names, n) {
			return fmt.Errorf("unknown node %q; nodes: %s", n, strings.Join(names, ", "))
		}
		return nil
	}
	if f.Node != "" {
		if err := node(f.Node); err != nil {
			return err
		}
	}
	if f.Link != nil {
		if len(f.Link) != 2 {
			return fmt.Errorf("link must name two nodes [a, b], got %d", len(f.Link))
		}
		for _, n := range f.Link {
			if err := node(n); err != nil {
				return err
			}
		}
		if _, ok := t.Link(f.Link[0], f.Link[1]); !ok {
			var links []string
			for _, l := range t.Links {
				links = append(links, "["+strings.Join(l.Between, ", ")+"]")
			}
			if len(links) == 0 {
				links = []string{"(none)"}
			}
			return fmt.Errorf("no link between %s and %s; links: %s", f.Link[0], f.Link[1], strings.Join(links, ", "))
		}
	}
	if f.Groups != nil {
		if len(f.Groups) < 2 {
			return fmt.Errorf("groups must list at least two groups of nodes, got %d", len(f.Groups))
		}
		in := map[string]int{}
		for i, g := range f.Groups {
			if len(g) == 0 {
				return fmt.Errorf("groups[%d] is empty", i)
			}
			for _, n := range g {
				if err := node(n); err != nil {
					return err
				}
				if j, dup := in[n]; dup {
					return fmt.Errorf("node %q is in groups[%d] and groups[%d]", n, j, i)
				}
				in[n] = i
			}
		}
	}
	if f.Component != "" && components != nil && !slices.Contains(components, f.Component) {
		list := strings.Join(components, ", ")
		if list == "" {
			list = "(none)"
		}
		return fmt.Errorf("unknown component %q; components: %s", f.Component, list)
	}
	return nil
}
