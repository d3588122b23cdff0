package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds the files ParseFile reads: specs are hand-written, and a bound keeps a
// mistyped path (a device, a log file) from eating the machine's memory.
const MaxFileSize = 16 << 20

// maxNodes bounds how many nodes the strict walk visits. Aliases make the node tree a DAG that
// can be exponentially larger once expanded ("billion laughs"); yaml.v3 guards its own decoder,
// and this is the same guard for ours.
const maxNodes = 200_000

// ParseFile reads a YAML file and returns its top-level node (the document's content, not the
// document node). Syntax errors are *Error with the file's name and line.
func ParseFile(path string) (*yaml.Node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileSize)
	}
	return Parse(path, data)
}

// Parse parses one YAML document; file only names it in errors.
func Parse(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "the file is empty"}
		}
		return nil, convert(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, convert(file, err)
		}
		return nil, Errorf(file, &extra, "only one YAML document is allowed per file (remove the second '---')")
	}
	n := resolve(&doc)
	if n == nil || n.Kind == 0 {
		return nil, &Error{File: file, Msg: "the file is empty"}
	}
	return n, nil
}

// DecodeFile parses path and decodes it strictly into out (see Decode). It returns the top-level
// node too, so that a validator can point its errors at the lines of the fields it checks.
func DecodeFile(path string, out any) (*yaml.Node, error) {
	n, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	return n, Decode(path, n, out)
}

// Decode decodes n into out (a pointer) strictly: unknown fields, values of the wrong type and bad
// unit values are all reported, each with file:line:col, as Errors. Fields of type yaml.Node are
// left for the caller to decode (kind-specific config), so they accept anything.
//
// The check is a walk of the node tree alongside out's type, made before yaml.v3 decodes: yaml.v3's
// own KnownFields stops at the first problem and only works with a Decoder over bytes, while the
// walk reports every problem and knows the field path and the allowed names at each place.
func Decode(file string, n *yaml.Node, out any) error { return DecodeAt(file, "", n, out) }

// DecodeAt is Decode for a node deep inside a document: path ("components[0].config") prefixes the
// field paths in messages so that they read the same as for the rest of the document.
func DecodeAt(file, path string, n *yaml.Node, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("spec.Decode: out must be a non-nil pointer, got %T", out)
	}
	w := walker{file: file}
	w.check(n, rv.Type().Elem(), path)
	if err := w.errs.Err(); err != nil {
		return err
	}
	if n == nil {
		return nil
	}
	if err := n.Decode(out); err != nil {
		return convert(file, err)
	}
	return nil
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// convert turns yaml.v3's errors ("yaml: line 3: ...", TypeError lists) into Errors with file.
func convert(file string, err error) error {
	var es Errors
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, m := range te.Errors {
			es = append(es, lineError(file, m))
		}
		return es.Err()
	}
	var pe *Error
	if errors.As(err, &pe) {
		es.addAt(file, nil, pe)
		return es.Err()
	}
	return lineError(file, err.Error())
}

func lineError(file, msg string) *Error {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: m[2]}
	}
	return &Error{File: file, Msg: strings.TrimPrefix(msg, "yaml: ")}
}

var (
	nodeType        = reflect.TypeOf(yaml.Node{})
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

type walker struct {
	file  string
	errs  Errors
	nodes int
}

func (w *walker) errorf(n *yaml.Node, path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	w.errs = append(w.errs, Errorf(w.file, n, "%s", msg))
}

// check walks n alongside t; path is the field path for messages ("topology.nodes[1].memory").
func (w *walker) check(n *yaml.Node, t reflect.Type, path string) {
	if n = resolve(n); n == nil || n.Kind == 0 {
		return
	}
	if w.nodes++; w.nodes == maxNodes {
		w.errorf(n, path, "document too large (more than %d nodes after expanding aliases)", maxNodes)
	}
	if w.nodes >= maxNodes || n.Kind == yaml.AliasNode {
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" || t == nodeType || t.Kind() == reflect.Interface {
		return
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		w.trial(n, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.check(n, t.Elem(), path)
	case reflect.Struct:
		w.checkStruct(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.errorf(n, path, "want a mapping, got %s", describeNode(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.trial(n.Content[i], t.Key(), join(path, n.Content[i].Value))
			w.check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			w.errorf(n, path, "want a list, got %s", describeNode(n))
			return
		}
		for i, c := range n.Content {
			w.check(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		w.trial(n, t, path)
	}
}

// trial decodes n into a fresh value of type t to see whether yaml.v3 (or the type's
// UnmarshalYAML) accepts it, and rewrites the error in user terms.
func (w *walker) trial(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode && isScalarKind(t.Kind()) {
		w.errorf(n, path, "want %s, got %s", typeName(t), describeNode(n))
		return
	}
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return
	}
	var pe *Error
	if errors.As(err, &pe) {
		w.errorf(pe.pos(n), path, "%s", pe.Msg)
		return
	}
	w.errorf(n, path, "want %s, got %s", typeName(t), describeNode(n))
}

func (e *Error) pos(fallback *yaml.Node) *yaml.Node {
	if e.Line == 0 {
		return fallback
	}
	return &yaml.Node{Line: e.Line, Column: e.Col}
}

func (w *walker) checkStruct(n *yaml.Node, t reflect.Type, path string) {
	fields, anyKey := structFields(t)
	if n.Kind != yaml.MappingNode {
		w.errorf(n, path, "want a mapping with fields %s, got %s", strings.Join(fieldNames(fields), ", "), describeNode(n))
		return
	}
	seen := map[string]*yaml.Node{}
	w.checkMapping(n, t, path, fields, anyKey, seen)
}

func (w *walker) checkMapping(n *yaml.Node, t reflect.Type, path string, fields []field, anyKey bool, seen map[string]*yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			// Merge key: the merged mappings' fields count as this struct's.
			merged := resolve(v)
			list := []*yaml.Node{merged}
			if merged != nil && merged.Kind == yaml.SequenceNode {
				list = merged.Content
			}
			for _, m := range list {
				if m = resolve(m); m != nil && m.Kind == yaml.MappingNode {
					w.checkMapping(m, t, path, fields, anyKey, seen)
				}
			}
			continue
		}
		if prev, dup := seen[k.Value]; dup && prev.Line > 0 {
			w.errorf(k, join(path, k.Value), "set twice (first at line %d)", prev.Line)
			continue
		}
		seen[k.Value] = k
		f, ok := lookupField(fields, k.Value)
		if !ok {
			if !anyKey {
				w.unknown(k, path, fields)
			}
			continue
		}
		w.check(v, f.typ, join(path, k.Value))
	}
}

func (w *walker) unknown(k *yaml.Node, path string, fields []field) {
	names := fieldNames(fields)
	where := ""
	if path != "" {
		where = " in " + path
	}
	hint := ""
	if s := closest(k.Value, names); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	w.errs = append(w.errs, Errorf(w.file, k, "unknown field %q%s%s; allowed: %s", k.Value, where, hint, strings.Join(names, ", ")))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isScalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// typeName describes a Go type in the words a YAML author uses.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}
