package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

// ActionSet is the event action that changes a component's config at run time (see Kind.Set).
const ActionSet = "set"

const (
	maxInstanceName  = 64
	instanceNameRule = "letters, digits, '-' and '_', starting with a letter or digit, at most 64 characters, not only digits"
)

// Instance names end up in --set paths (so no dots), result directory names and metric labels.
var instanceNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// LoadScenario reads a scenario file, applies --set overrides (sets, "path=value"), decodes it
// strictly and validates it. Every problem found is reported (as spec.Errors), each with file:line.
func LoadScenario(path string, sets []string) (*Scenario, error) {
	root, err := spec.ParseFile(path)
	if err != nil {
		return nil, err
	}
	for _, f := range kind.Formats() {
		if f.Detect(root) {
			data, err := f.Convert(path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			// Errors name the file and say it was converted: their lines are the converted
			// scenario's (the format's own command prints it, e.g. `continuum convert compose`).
			as := path + " (converted from " + f.Name + ")"
			if root, err = spec.Parse(as, data); err != nil {
				return nil, err
			}
			sc, err := loadDoc(as, root, sets)
			if err == nil {
				sc.File = path
			}
			return sc, err
		}
	}
	return loadDoc(path, root, sets)
}

// ParseScenario is LoadScenario on bytes already read; file names them in errors and is the base
// topology_file is resolved against.
func ParseScenario(file string, data []byte, sets []string) (*Scenario, error) {
	root, err := spec.Parse(file, data)
	if err != nil {
		return nil, err
	}
	return loadDoc(file, root, sets)
}

func loadDoc(file string, root *yaml.Node, sets []string) (*Scenario, error) {
	if root.Kind != yaml.MappingNode {
		return nil, spec.Errorf(file, root, "a scenario must be a mapping with fields %s", strings.Join(spec.FieldNames(scenarioType), ", "))
	}
	d := &doc{file: file, root: root}
	if spec.Has(root, "topology_file") && !spec.Has(root, "topology") {
		n := spec.Locate(root, "topology_file")
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return nil, spec.Errorf(file, n, "topology_file: want a path to a topology file, got %s", n.Value)
		}
		d.topoFile = n.Value
		if !filepath.IsAbs(d.topoFile) {
			d.topoFile = filepath.Join(filepath.Dir(file), d.topoFile)
		}
		var err error
		if d.topo, err = spec.ParseFile(d.topoFile); err != nil {
			return nil, spec.Errorf(file, n, "topology_file: %v", err)
		}
	}
	var errs spec.Errors
	for _, s := range sets {
		if err := d.applySet(s); err != nil {
			errs.Add(err)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return d.resolve()
}

// resolve decodes the document, applies defaults and validates the result.
func (d *doc) resolve() (*Scenario, error) {
	var s Scenario
	if err := spec.Decode(d.file, d.root, &s); err != nil {
		return nil, err
	}
	s.File = d.file
	c := &checker{s: &s, doc: d, file: d.file, topoFile: d.file, topoRoot: spec.Locate(d.root, "topology")}
	hasTopo, hasFile := spec.Has(d.root, "topology"), spec.Has(d.root, "topology_file")
	switch {
	case hasTopo && hasFile:
		c.errorf(c.at("topology_file"), "set either topology or topology_file, not both")
	case !hasTopo && !hasFile:
		c.errorf(d.root, "a topology is required: set topology (inline) or topology_file")
	case d.topo != nil:
		var t platform.Topology
		if err := spec.Decode(d.topoFile, d.topo, &t); err != nil {
			return nil, err
		}
		s.Topology, c.topoFile, c.topoRoot = &t, d.topoFile, d.topo
	}
	c.validate()
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}

// checker validates a decoded scenario, pointing errors at the nodes of doc.
type checker struct {
	s                  *Scenario
	doc                *doc
	file               string
	topoFile           string
	topoRoot           *yaml.Node
	errs               spec.Errors
	nodes, components  []string
	instances          map[string]*Instance
	instanceRoleByName map[string]kind.Role
}

func (c *checker) at(path ...any) *yaml.Node { return spec.Locate(c.doc.root, path...) }

func (c *checker) errorf(n *yaml.Node, format string, args ...any) {
	c.errs.Addf(c.file, n, format, args...)
}

// warnOldKinds warns about every instance in the document that names its kind by a former
// name: in components and workloads, and in sweep values that replace them (which are
// resolved only when the sweep expands), once each.
func (c *checker) warnOldKinds(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Kind == yaml.MappingNode && spec.Has(n, "name") && spec.Has(n, "kind") {
		if kn := spec.Locate(n, "kind"); kn.Kind == yaml.ScalarNode {
			if now, renamed := kind.Renamed(kn.Value); renamed {
				c.warnf(kn, "kind %q is deprecated, use %q", kn.Value, now)
			}
		}
	}
	for _, child := range n.Content {
		c.warnOldKinds(child)
	}
}

// warnf records what loads but should change (an old kind name), as "file:line: message".
func (c *checker) warnf(n *yaml.Node, format string, args ...any) {
	c.s.Warnings = append(c.s.Warnings, spec.Errorf(c.file, n, format, args...).Error())
}

func (c *checker) validate() {
	c.warnOldKinds(c.doc.root)
	s := c.s
	if s.Version != SchemaVersion {
		what := fmt.Sprintf("version %d is not supported", s.Version)
		if !spec.Has(c.doc.root, "version") {
			what = "version is required"
		}
		c.errorf(c.at("version"), "%s; supported versions: %d", what, SchemaVersion)
	}
	if strings.TrimSpace(s.Name) == "" {
		c.errorf(c.at("name"), "name is required")
	}
	if s.Duration.Duration <= 0 {
		c.errorf(c.at("duration"), "duration must be greater than 0 (e.g. 60s), got %s", s.Duration)
	}
	if s.Warmup.Duration < 0 || s.Duration.Duration > 0 && s.Warmup.Duration >= s.Duration.Duration {
		c.errorf(c.at("warmup"), "warmup must be at least 0 and less than duration (%s), got %s", s.Duration, s.Warmup)
	}
	if s.Repeats == 0 && !spec.Has(c.doc.root, "repeats") {
		s.Repeats = 1
	} else if s.Repeats < 1 {
		c.errorf(c.at("repeats"), "repeats must be at least 1, got %d", s.Repeats)
	}
	if s.Topology != nil {
		s.Topology.ApplyDefaults()
		c.errs.Add(s.Topology.Validate(c.topoFile, c.topoRoot))
		c.nodes = s.Topology.NodeNames()
	}
	c.instances = map[string]*Instance{}
	c.instanceRoleByName = map[string]kind.Role{}
	c.checkInstances("components", kind.RoleComponent, s.Components)
	c.checkInstances("workloads", kind.RoleWorkload, s.Workloads)
	for i := range s.Components {
		c.components = append(c.components, s.Components[i].Name)
	}
	for i := range s.Events {
		c.checkEvent(i, &s.Events[i])
	}
	c.checkDeferredStarts()
	c.checkPorts()
	c.checkSweep()
	c.checkSweepLabels()
}

func (c *checker) checkInstances(list string, role kind.Role, insts []Instance) {
	for i := range insts {
		inst := &insts[i]
		where := fmt.Sprintf("%s[%d]", list, i)
		n := c.at(list, i)
		switch {
		case inst.Name == "":
			c.errorf(n, "%s: name is required (%s)", where, instanceNameRule)
		case len(inst.Name) > maxInstanceName || !instanceNameRE.MatchString(inst.Name) || strings.Trim(inst.Name, "0123456789") == "":
			c.errorf(c.at(list, i, "name"), "%s: invalid name %q: want %s", where, inst.Name, instanceNameRule)
		case c.instances[inst.Name] != nil:
			c.errorf(c.at(list, i, "name"), "%s: duplicate name %q (names must be unique across components and workloads)", where, inst.Name)
		default:
			c.instances[inst.Name] = inst
			c.instanceRoleByName[inst.Name] = role
		}
		if c.s.Topology != nil && !slices.Contains(c.nodes, inst.Node) {
			what := fmt.Sprintf("unknown node %q", inst.Node)
			if inst.Node == "" {
				what = "node is required"
			}
			c.errorf(c.at(list, i, "node"), "%s: %s; nodes: %s", where, what, strings.Join(c.nodes, ", "))
		}
		k, ok := kind.Lookup(inst.Kind)
		if ok {
			// An old name (warned about by warnOldKinds): the run, its results and the report
			// know the kind by its name now.
			inst.Kind = k.Name
		}
		if !ok || k.Role != role {
			what := fmt.Sprintf("unknown %s kind %q", role, inst.Kind)
			if inst.Kind == "" {
				what = "kind is required"
			} else if ok {
				what = fmt.Sprintf("kind %q is a %s, not a %s", inst.Kind, k.Role, role)
			}
			c.errorf(c.at(list, i, "kind"), "%s: %s; %s kinds: %s", where, what, role, orNone(kind.Names(role)))
			continue
		}
		cfg := k.NewConfig()
		if inst.Config.Kind != 0 {
			if err := spec.DecodeAt(c.file, where+".config", &inst.Config, cfg); err != nil {
				c.errs.Add(err)
				continue
			}
		}
		valid := true
		if k.Validate != nil {
			if err := k.Validate(cfg); err != nil {
				c.configErrors(list, i, where, err)
				valid = false
			}
		}
		if valid && k.Prepare != nil {
			if err := k.Prepare(cfg, filepath.Dir(c.file)); err != nil {
				c.errorf(c.at(list, i, "config"), "%s.config: %v", where, err)
			}
		}
		inst.DecodedConfig = cfg
		c.checkService(list, i, inst, role)
	}
}

// configErrors reports a kind's Validate error: each of a kind.FieldErrors list at its key's
// line, anything else at the config.
func (c *checker) configErrors(list string, i int, where string, err error) {
	var fes kind.FieldErrors
	if !errors.As(err, &fes) {
		c.errorf(c.at(list, i, "config"), "%s.config: %v", where, err)
		return
	}
	for _, fe := range fes {
		c.errorf(c.at(append([]any{list, i, "config"}, keyPath(fe.Key)...)...), "%s.config.%v", where, fe)
	}
}

// keyPath splits a FieldError's key ("functions[1].handler") into spec.Locate's path.
func keyPath(key string) []any {
	var path []any
	for _, part := range strings.Split(key, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			path = append(path, name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				path = append(path, n)
			}
			_, rest, _ = strings.Cut(after, "[")
		}
	}
	return path
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "(none registered)"
	}
	return strings.Join(names, ", ")
}

func (c *checker) checkEvent(i int, ev *Event) {
	where := fmt.Sprintf("events[%d]", i)
	n := c.at("events", i)
	ev.Line = n.Line
	ev.Fault.Action = ev.Action
	switch {
	case ev.At == nil && ev.AfterRequests == 0:
		c.errorf(n, "%s: needs a trigger: at (a time like 10s) or after_requests", where)
	case ev.At != nil && ev.AfterRequests != 0:
		c.errorf(n, "%s: set either at or after_requests, not both", where)
	case ev.AfterRequests < 0:
		c.errorf(c.at("events", i, "after_requests"), "%s: after_requests must be positive, got %d", where, ev.AfterRequests)
	case ev.At != nil && (ev.At.Duration < 0 || ev.At.Duration >= c.s.Duration.Duration):
		c.errorf(c.at("events", i, "at"), "%s: at must be within [0, duration) = [0, %s), got %s", where, c.s.Duration, ev.At)
	}
	switch {
	case ev.Action == "":
		c.errorf(n, "%s: action is required; allowed: %s", where, eventActions())
	case ev.Action == ActionSet:
		c.checkSet(where, i, ev)
	case ev.Action == ActionStart:
		c.checkStart(where, i, ev)
	case !slices.Contains(platform.FaultActions, ev.Action):
		c.errorf(c.at("events", i, "action"), "%s: unknown action %q; allowed: %s", where, ev.Action, eventActions())
	case ev.Config.Kind != 0:
		c.errorf(c.at("events", i, "config"), "%s: config applies only to action set", where)
	case c.s.Topology != nil:
		comps := c.components
		if comps == nil {
			comps = []string{}
		}
		if err := ev.Fault.Validate(c.s.Topology, comps); err != nil {
			c.errorf(n, "%s: %v", where, err)
		}
	}
}

func (c *checker) checkSet(where string, i int, ev *Event) {
	rest := ev.Fault
	rest.Action, rest.Component = "", ""
	if !reflect.DeepEqual(rest, platform.Fault{}) {
		c.errorf(c.at("events", i), "%s: action set takes only component and config", where)
		return
	}
	var settable []string
	for _, inst := range c.s.Components {
		if k, ok := kind.Lookup(inst.Kind); ok && k.Set != nil {
			settable = append(settable, inst.Name)
		}
	}
	inst := c.instances[ev.Component]
	if inst == nil || c.instanceRoleByName[ev.Component] != kind.RoleComponent {
		what := fmt.Sprintf("unknown component %q", ev.Component)
		if ev.Component == "" {
			what = "action set needs component"
		}
		c.errorf(c.at("events", i, "component"), "%s: %s; components that support set: %s", where, what, orNoneList(settable))
		return
	}
	k, ok := kind.Lookup(inst.Kind)
	if !ok {
		return // reported at the component
	}
	if k.Set == nil {
		c.errorf(c.at("events", i, "component"), "%s: component %q (kind %s) cannot be changed at run time; components that support set: %s", where, inst.Name, inst.Kind, orNoneList(settable))
		return
	}
	if ev.Config.Kind != yaml.MappingNode || len(ev.Config.Content) == 0 {
		c.errorf(c.at("events", i, "config"), "%s: action set needs config: a mapping of the fields to change", where)
		return
	}
	// The change is a partial config: decode it into a fresh one only to catch unknown fields and
	// bad values now rather than in the middle of a run.
	c.errs.Add(spec.DecodeAt(c.file, where+".config", &ev.Config, k.NewConfig()))
}

func orNoneList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// checkSweep checks that every sweep path resolves and every value fits the field, by applying
// each value to a copy of the document.
func (c *checker) checkSweep() {
	if !spec.Has(c.doc.root, "sweep") {
		return
	}
	sweep := spec.Locate(c.doc.root, "sweep")
	for i := 0; sweep.Kind == yaml.MappingNode && i+1 < len(sweep.Content); i += 2 {
		key, path := sweep.Content[i], sweep.Content[i].Value
		values := c.s.Sweep[path]
		if len(values) == 0 {
			c.errorf(key, "sweep %s: needs at least one value", path)
			continue
		}
		if path == "sweep" || strings.HasPrefix(path, "sweep.") {
			c.errorf(key, "sweep %s: the sweep cannot sweep itself", path)
			continue
		}
		for j := range values {
			err := c.doc.clone().set(path, spec.CopyNode(&values[j]), c.file)
			if err == nil {
				continue
			}
			if es, positioned := err.(spec.Errors); positioned {
				for _, e := range es {
					e.Msg = "sweep " + path + ": " + e.Msg
					c.errs = append(c.errs, e)
				}
			} else {
				c.errorf(key, "sweep %s: %v", path, err)
			}
			break
		}
	}
}

// MarshalResolved returns the scenario as it runs, for results/scenario.yaml: the topology inline
// with its defaults (topology_file dropped), each instance's config with the kind's defaults, and
// --set overrides applied. Loading it again gives the same scenario.
func (s *Scenario) MarshalResolved() ([]byte, error) {
	r, err := s.resolved()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (s *Scenario) resolved() (*Scenario, error) {
	r := *s
	r.TopologyFile = ""
	for _, list := range []*[]Instance{&r.Components, &r.Workloads} {
		insts := slices.Clone(*list)
		for i := range insts {
			if insts[i].DecodedConfig == nil {
				continue
			}
			var n yaml.Node
			if err := n.Encode(insts[i].DecodedConfig); err != nil {
				return nil, fmt.Errorf("encode config of %s: %w", insts[i].Name, err)
			}
			insts[i].Config = n
		}
		*list = insts
	}
	return &r, nil
}
