package kvprefix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// NodesDir is the directory under the prefix that holds node loads; "_" cannot start a
// service name, so it never collides with one.
const NodesDir = "_nodes/"

// record is one parsed key: an instance, or a node's load.
type record struct {
	inst discovery.Instance // when node == ""
	node string
	load discovery.NodeLoad
}

// instanceValue is discovery.Instance as stored: every field optional except url, ready
// defaulting to true (a service that registers itself means to take traffic), and attribute
// values accepted as numbers and booleans too, since `"accuracy": 0.97` is what people write.
type instanceValue struct {
	ID         string         `json:"id"`
	Service    string         `json:"service"`
	URL        string         `json:"url"`
	Node       string         `json:"node"`
	Attributes map[string]any `json:"attributes"`
	Ready      *bool          `json:"ready"`
}

type nodeValue struct {
	CPU    *float64 `json:"cpu"`
	Memory *float64 `json:"memory"`
}

// parseRecord interprets key (which starts with prefix) and value. The error says what is
// wrong in the user's terms; the caller adds the key.
func parseRecord(prefix string, key, value []byte) (record, error) {
	rest, ok := strings.CutPrefix(string(key), prefix)
	if !ok {
		return record{}, fmt.Errorf("key is outside the prefix %q", prefix)
	}
	if node, ok := strings.CutPrefix(rest, NodesDir); ok {
		return parseNode(node, value)
	}
	service, id, ok := strings.Cut(rest, "/")
	if !ok || id == "" {
		return record{}, fmt.Errorf("want a key %s<service>/<instance-id> or %s%s<node>", prefix, prefix, NodesDir)
	}
	if !discovery.ValidServiceName(service) {
		return record{}, fmt.Errorf("service %q in the key: want letters, digits, '-', '_' or '.', starting with a letter or digit", service)
	}
	var v instanceValue
	if err := decodeStrict(value, &v, "id, service, url, node, attributes, ready"); err != nil {
		return record{}, err
	}
	if v.Service != "" && v.Service != service {
		return record{}, fmt.Errorf("service %q in the value differs from %q in the key", v.Service, service)
	}
	if v.ID != "" && v.ID != id {
		return record{}, fmt.Errorf("id %q in the value differs from %q in the key", v.ID, id)
	}
	if v.URL == "" {
		return record{}, errors.New("url: required (e.g. \"http://10.0.0.3:8080\")")
	}
	if err := discovery.CheckInstanceURL(v.URL); err != nil {
		return record{}, fmt.Errorf("url: %w", err)
	}
	attrs, err := attributeStrings(v.Attributes)
	if err != nil {
		return record{}, err
	}
	return record{inst: discovery.Instance{
		ID:         id,
		Service:    service,
		URL:        v.URL,
		Node:       v.Node,
		Attributes: attrs,
		Ready:      v.Ready == nil || *v.Ready,
	}}, nil
}

func parseNode(node string, value []byte) (record, error) {
	if node == "" || strings.Contains(node, "/") {
		return record{}, fmt.Errorf("want a key ending in %s<node> with a node name and no further '/'", NodesDir)
	}
	var v nodeValue
	if err := decodeStrict(value, &v, "cpu, memory"); err != nil {
		return record{}, err
	}
	var l discovery.NodeLoad
	for _, f := range []struct {
		name string
		in   *float64
		out  *float64
	}{{"cpu", v.CPU, &l.CPU}, {"memory", v.Memory, &l.Memory}} {
		if f.in == nil {
			continue // unknown, as zero means
		}
		if *f.in < 0 || math.IsNaN(*f.in) || math.IsInf(*f.in, 0) {
			return record{}, fmt.Errorf("%s %v: want a fraction >= 0 (1 = fully used)", f.name, *f.in)
		}
		*f.out = *f.in
	}
	return record{node: node, load: l}, nil
}

// decodeStrict decodes one JSON object, rejecting unknown fields (a misspelt "adress" would
// otherwise register an instance without the field the user meant) and trailing data.
func decodeStrict(value []byte, out any, allowed string) error {
	if len(bytes.TrimSpace(value)) == 0 {
		return errors.New("empty value: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
		case errors.As(err, &te):
			if te.Field == "" {
				return fmt.Errorf("want a JSON object, got %s", te.Value)
			}
			return fmt.Errorf("%s: want %s, got %s", te.Field, jsonType(te.Type.String()), te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown field %s; allowed: %s", strings.TrimPrefix(err.Error(), "json: unknown field "), allowed)
		}
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func jsonType(goType string) string {
	switch {
	case strings.Contains(goType, "float"):
		return "a number"
	case goType == "bool" || goType == "*bool":
		return "true or false"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "map"):
		return "an object"
	}
	return goType
}

// attributeStrings turns attribute values into the strings discovery.Instance holds; numbers
// keep their JSON spelling so "0.970" stays "0.970".
func attributeStrings(in map[string]any) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if k == "" {
			return nil, errors.New("attributes: empty attribute name")
		}
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			out[k] = strconv.FormatBool(v)
		default:
			return nil, fmt.Errorf("attributes.%s: want a string, number or boolean", k)
		}
	}
	return out, nil
}
