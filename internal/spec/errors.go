package spec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem at a position of a YAML file. Line and Col are 1-based; 0 means unknown (the
// value came from a --set flag or a programmatically built document), in which case Error() leaves
// them out rather than pointing at a wrong line.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteString(":" + strconv.Itoa(e.Col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errorf makes an error positioned at n (which may be nil: no position).
func Errorf(file string, n *yaml.Node, format string, args ...any) *Error {
	e := &Error{File: file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// At positions err at n unless it already carries a position: *Error and Errors keep theirs (the
// file is filled in where missing), anything else becomes an *Error at n.
func At(file string, n *yaml.Node, err error) error {
	if err == nil {
		return nil
	}
	var es Errors
	es.addAt(file, n, err)
	return es.Err()
}

// Errors collects several problems so that a validator reports all of them in one go.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Add appends err; Errors are flattened, other errors kept without position.
func (es *Errors) Add(err error) { es.addAt("", nil, err) }

// Addf appends a positioned error.
func (es *Errors) Addf(file string, n *yaml.Node, format string, args ...any) {
	*es = append(*es, Errorf(file, n, format, args...))
}

func (es *Errors) addAt(file string, n *yaml.Node, err error) {
	switch e := err.(type) {
	case nil:
		return
	case Errors:
		for _, one := range e {
			es.addAt(file, n, one)
		}
	case *Error:
		c := *e
		if c.File == "" {
			c.File = file
		}
		if c.Line == 0 && n != nil && c.File == file {
			c.Line, c.Col = n.Line, n.Column
		}
		*es = append(*es, &c)
	default:
		*es = append(*es, Errorf(file, n, "%s", err.Error()))
	}
}

// Err returns nil for an empty list, the list sorted by file and position otherwise.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return es
}

// Locate follows path (mapping keys as strings, sequence indexes as ints) from n and returns the
// deepest node it reaches: the value at the end of the path if it exists, otherwise the closest
// existing ancestor. Validators use it to point errors at the field they are about, falling back to
// the enclosing block when the field was not written (a default, or a missing required field).
func Locate(n *yaml.Node, path ...any) *yaml.Node {
	n = resolve(n)
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// Has reports whether path exists below n (for telling "written as 0" from "not written").
func Has(n *yaml.Node, path ...any) bool {
	n = resolve(n)
	for _, p := range path {
		if n = child(n, p); n == nil {
			return false
		}
	}
	return true
}

func child(n *yaml.Node, p any) *yaml.Node {
	if n == nil {
		return nil
	}
	switch p := p.(type) {
	case string:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				return resolve(n.Content[i+1])
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && p >= 0 && p < len(n.Content) {
			return resolve(n.Content[p])
		}
	}
	return nil
}

// resolve skips document and alias nodes.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < 100; i++ {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) == 1:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			n = n.Alias
		default:
			return n
		}
	}
	return n
}

// describeNode says what a node is, for "want X, got Y" messages.
func describeNode(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return "null"
	case n.Kind == yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return strconv.Quote(v)
	}
	return "an unsupported YAML node"
}
