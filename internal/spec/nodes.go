package spec

import (
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CopyNode returns a deep copy of n (aliases keep pointing at their anchors' originals).
func CopyNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = CopyNode(x)
		}
	}
	return &c
}

// SetKey sets key in mapping m to value, replacing an existing entry or appending one.
func SetKey(m *yaml.Node, key string, value *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = value
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, value)
}

// IsNull reports whether n is absent or an explicit null.
func IsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// Messages is err's messages without their file:line positions, joined by "; ": for a checker
// that reports them at a position of its own (a kind's config inside a scenario).
func Messages(err error) string {
	var es Errors
	if errors.As(err, &es) {
		var msgs []string
		for _, e := range es {
			msgs = append(msgs, e.Msg)
		}
		return strings.Join(msgs, "; ")
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}
