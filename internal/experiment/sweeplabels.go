package experiment

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDerivedLabel bounds a derived label; longer ones are replaced by numbered ones, since a label
// exists to fit under a bar or in a legend.
const maxDerivedLabel = 40

// checkSweepLabels checks sweep_labels: each path is swept, has one label per value, and its
// labels are distinct and not empty (they name the groups in the report).
func (c *checker) checkSweepLabels() {
	s := c.s
	if len(s.SweepLabels) == 0 {
		return
	}
	node := c.at("sweep_labels")
	for _, path := range slices.Sorted(maps.Keys(s.SweepLabels)) {
		labels := s.SweepLabels[path]
		values, swept := s.Sweep[path]
		switch {
		case !swept:
			c.errorf(node, "sweep_labels %s: not a sweep path; swept paths: %s", path, orNoneList(slices.Sorted(maps.Keys(s.Sweep))))
		case len(labels) != len(values):
			c.errorf(node, "sweep_labels %s: %d labels for %d values; give one label per value, in order", path, len(labels), len(values))
		default:
			seen := map[string]bool{}
			for i, l := range labels {
				if strings.TrimSpace(l) == "" {
					c.errorf(node, "sweep_labels %s: label %d is empty", path, i+1)
				} else if seen[l] {
					c.errorf(node, "sweep_labels %s: label %q is given twice; labels name the values, so they must differ", path, l)
				}
				seen[l] = true
			}
		}
	}
}

// sweepLabels returns, per sweep path that needs them, a short label for each of its values: the
// scenario's sweep_labels, or else derived for values that are lists or mappings (scalars name
// themselves and get none). A derived label says what differs between the path's values: the
// kinds deployed ("kv", "etcd"), then their number when it differs ("3×kv"), then the leaf fields
// that differ ("kv peer_batch_linger=3ms"); when even that is ambiguous or too long, values are
// numbered.
func (s *Scenario) sweepLabels() map[string][]string {
	out := map[string][]string{}
	for path, values := range s.Sweep {
		if l := s.SweepLabels[path]; len(l) == len(values) {
			out[path] = l
			continue
		}
		if l := deriveLabels(values); l != nil {
			out[path] = l
		}
	}
	return out
}

func deriveLabels(values []yaml.Node) []string {
	scalars := true
	for i := range values {
		scalars = scalars && values[i].Kind == yaml.ScalarNode
	}
	if scalars {
		return nil
	}
	kinds := make([][]kindCount, len(values))
	sameSize := true
	for i := range values {
		kinds[i] = kindsOf(&values[i])
		sameSize = sameSize && total(kinds[i]) == total(kinds[0])
	}
	base := make([]string, len(values))
	for i, k := range kinds {
		base[i] = formatKinds(k, !sameSize)
	}
	if distinct(base) && short(base) {
		return base
	}
	// The kinds do not tell the values apart: add the leaf fields that differ between them.
	leaves := make([]map[string][]string, len(values))
	keys := map[string]bool{}
	for i := range values {
		leaves[i] = map[string][]string{}
		flatten(&values[i], "", leaves[i])
		for k := range leaves[i] {
			keys[k] = true
		}
	}
	var differing []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		for i := range leaves {
			if !slices.Equal(leaves[i][k], leaves[0][k]) {
				differing = append(differing, k)
				break
			}
		}
	}
	withFields := make([]string, len(values))
	for i := range values {
		var parts []string
		if base[i] != "" {
			parts = append(parts, base[i])
		}
		for _, k := range differing {
			if strings.HasSuffix(k, "kind") || len(leaves[i][k]) == 0 {
				continue // already in base, or a field this value leaves out
			}
			parts = append(parts, lastSegment(k)+"="+strings.Join(leaves[i][k], "/"))
		}
		withFields[i] = strings.Join(parts, " ")
	}
	if distinct(withFields) && short(withFields) {
		return withFields
	}
	numbered := make([]string, len(values))
	for i := range values {
		numbered[i] = strings.TrimSpace(fmt.Sprintf("%s #%d", base[i], i+1))
	}
	return numbered
}

type kindCount struct {
	kind string
	n    int
}

// kindsOf counts the instances (mappings with a "kind") in a sweep value, kinds in order of first
// appearance: a component list, or one instance.
func kindsOf(n *yaml.Node) []kindCount {
	var out []kindCount
	add := func(m *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "kind" && m.Content[i+1].Kind == yaml.ScalarNode {
				k := m.Content[i+1].Value
				for j := range out {
					if out[j].kind == k {
						out[j].n++
						return
					}
				}
				out = append(out, kindCount{k, 1})
				return
			}
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		add(n)
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if item.Kind == yaml.MappingNode {
				add(item)
			}
		}
	}
	return out
}

func total(ks []kindCount) int {
	t := 0
	for _, k := range ks {
		t += k.n
	}
	return t
}

func formatKinds(ks []kindCount, counts bool) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.kind
		if counts {
			parts[i] = fmt.Sprintf("%d×%s", k.n, k.kind)
		}
	}
	return strings.Join(parts, "+")
}

// flatten collects a value's scalar leaves by path, list indexes written "*" so that the same
// field of every member of a list is one key; each key's values are sorted and distinct.
func flatten(n *yaml.Node, prefix string, out map[string][]string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			flatten(n.Content[i+1], join(prefix, n.Content[i].Value), out)
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			flatten(item, join(prefix, "*"), out)
		}
	case yaml.ScalarNode:
		if !slices.Contains(out[prefix], n.Value) {
			out[prefix] = append(out[prefix], n.Value)
			sort.Strings(out[prefix])
		}
	}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func lastSegment(k string) string {
	parts := strings.Split(k, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] != "*" {
			return parts[i]
		}
	}
	return k
}

func distinct(labels []string) bool {
	seen := map[string]bool{}
	for _, l := range labels {
		if l == "" || seen[l] {
			return false
		}
		seen[l] = true
	}
	return true
}

func short(labels []string) bool {
	for _, l := range labels {
		if len([]rune(l)) > maxDerivedLabel {
			return false
		}
	}
	return true
}
