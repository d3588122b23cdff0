package experiment

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

// doc is a scenario before decoding: the scenario file's YAML tree and, when the topology comes from
// topology_file, that file's tree. --set overrides and sweep values are edits of this tree, made
// before the strict decode, so that they go through exactly the same checks as the file itself and
// errors in the untouched parts keep their file:line.
type doc struct {
	file     string
	root     *yaml.Node
	topoFile string     // path of topology_file, "" when the topology is inline
	topo     *yaml.Node // its tree, nil when the topology is inline
}

func (d *doc) clone() *doc {
	c := *d
	c.root = spec.CopyNode(d.root)
	c.topo = spec.CopyNode(d.topo)
	return &c
}

// applySet applies one --set flag, "path=value"; value is parsed as YAML ("60s", "[1, 2]", "{a: 1}").
func (d *doc) applySet(arg string) error {
	path, text, ok := strings.Cut(arg, "=")
	if !ok || strings.TrimSpace(path) == "" {
		return fmt.Errorf("--set %s: want path=value, e.g. duration=60s or workloads.load.config.rate=200", arg)
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		return fmt.Errorf("--set %s: value is not valid YAML: %v", arg, err)
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	if len(v.Content) == 1 {
		value = v.Content[0]
	}
	// The value has no line in any file: zero the positions so that errors do not point at line 1
	// of the scenario, and name the flag as the origin instead.
	walkNodes(value, func(n *yaml.Node) { n.Line, n.Column = 0, 0 })
	if err := d.set(strings.TrimSpace(path), value, "--set "+arg); err != nil {
		return fmt.Errorf("--set %s: %w", arg, err)
	}
	return nil
}

var (
	scenarioType = reflect.TypeOf(Scenario{})
	topologyType = reflect.TypeOf(platform.Topology{})
	instanceType = reflect.TypeOf(Instance{})
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// set replaces (or adds) the value at path, a dot-separated list of field names, list elements (by
// their name field, or by index) and map keys. The path is resolved against the Go types, so fields
// that the file leaves out can be set, and a wrong path lists what exists. The new value is decoded
// into the field's type right away, so a bad value is reported with origin (the flag, or the file of
// a sweep value) rather than as a problem of the scenario file.
func (d *doc) set(path string, value *yaml.Node, origin string) error {
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" {
			return fmt.Errorf("invalid path %q: empty element", path)
		}
	}
	parent, t, where := d.root, scenarioType, ""
	if segs[0] == "topology" && d.topo != nil {
		if len(segs) == 1 {
			d.topo = value
			return checkValue(origin, value, topologyType)
		}
		parent, t, where, segs = d.topo, topologyType, "topology", segs[1:]
	}
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var childT reflect.Type
		switch {
		case t == nodeType: // free-form YAML (a kind's config without a known kind, a "set" change)
			childT = nodeType
		case isValue(t):
			return fmt.Errorf("%s is a single value, it has no field %q", orTop(where), seg)
		case t.Kind() == reflect.Struct:
			ft, ok := spec.FieldType(t, seg)
			if !ok {
				return fmt.Errorf("unknown field %q in %s; allowed: %s", seg, orTop(where), strings.Join(spec.FieldNames(t), ", "))
			}
			childT = ft
			if t == instanceType && seg == "config" {
				childT = configType(parent)
			}
		case t.Kind() == reflect.Map:
			childT = t.Elem()
			if leaf(childT) { // keys of leaf maps may contain dots (sweep paths)
				seg, segs = strings.Join(segs[i:], "."), segs[:i+1]
			}
		case t.Kind() == reflect.Slice:
			seq := ensure(parent, yaml.SequenceNode)
			idx, err := element(seq, seg, where)
			if err != nil {
				return err
			}
			if i == len(segs)-1 {
				seq.Content[idx] = value
				return checkValue(origin, value, t.Elem())
			}
			seq.Content[idx] = unalias(seq.Content[idx])
			parent, t, where = seq.Content[idx], t.Elem(), fmt.Sprintf("%s[%d]", where, idx)
			continue
		default:
			return fmt.Errorf("%s is a single value, it has no field %q", orTop(where), seg)
		}
		m := ensure(parent, yaml.MappingNode)
		if i == len(segs)-1 {
			spec.SetKey(m, seg, value)
			return checkValue(origin, value, childT)
		}
		parent, t, where = childFor(m, seg), childT, joinPath(where, seg)
	}
	return nil
}

func orTop(where string) string {
	if where == "" {
		return "the scenario"
	}
	return where
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// leaf reports whether values of t are not addressed further by a path.
func leaf(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return isValue(t) || t != nodeType && t.Kind() != reflect.Struct && t.Kind() != reflect.Map
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// isValue reports whether t decodes itself from a scalar (the spec unit types).
func isValue(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// configType is the config type of the instance whose mapping is n, or free-form YAML when its kind
// is not registered (validation reports that).
func configType(n *yaml.Node) reflect.Type {
	if k, ok := kind.Lookup(spec.Locate(n, "kind").Value); ok && spec.Has(n, "kind") {
		return reflect.TypeOf(k.NewConfig())
	}
	return nodeType
}

// checkValue decodes value into a fresh t to report a bad value where it was written.
func checkValue(origin string, value *yaml.Node, t reflect.Type) error {
	if t == nodeType {
		return nil
	}
	return spec.Decode(origin, value, reflect.New(t).Interface())
}

// element finds a list element by its name field or by index.
func element(seq *yaml.Node, seg, where string) (int, error) {
	var names []string
	for i, c := range seq.Content {
		if name := spec.Locate(c, "name"); spec.Has(c, "name") {
			if name.Value == seg {
				return i, nil
			}
			names = append(names, name.Value)
		}
	}
	if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(seq.Content) {
		return i, nil
	}
	have := fmt.Sprintf("an index 0..%d", len(seq.Content)-1)
	if len(seq.Content) == 0 {
		have = "it is empty"
	} else if len(names) > 0 {
		have = strings.Join(names, ", ") + " or " + have
	}
	return 0, fmt.Errorf("no element %q in %s; have: %s", seg, orTop(where), have)
}

// ensure turns n into an empty node of kind if it is null or of another kind (the new value
// replaces what was there), and returns it.
func ensure(n *yaml.Node, kind yaml.Kind) *yaml.Node {
	if n.Kind != kind {
		*n = yaml.Node{Kind: kind, Line: n.Line, Column: n.Column}
	}
	return n
}

// childFor returns the value of key in m for editing, adding an empty mapping if it is missing.
// An alias is replaced by a copy of its target, so that the edit does not leak into the anchor
// and everything else that refers to it.
func childFor(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = unalias(m.Content[i+1])
			return m.Content[i+1]
		}
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, n)
	return n
}

func unalias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return spec.CopyNode(n.Alias)
	}
	return n
}

func walkNodes(n *yaml.Node, f func(*yaml.Node)) {
	if n == nil || n.Kind == yaml.AliasNode {
		return
	}
	f(n)
	for _, c := range n.Content {
		walkNodes(c, f)
	}
}

// deleteKey removes key from mapping m.
func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}
