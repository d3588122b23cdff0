package aggregator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// write is one child of a multi-path PATCH at the database's root: the path (segments joined
// by /, no leading slash), the JSON value and the number of leaves (kv keys) it sets.
type write struct {
	path   string
	value  []byte
	leaves int
	rec    *kgo.Record
	dead   bool // a dead letter
	// prev is the record of the same path this one superseded in its poll (nil: none), written
	// instead if the database refuses this one.
	prev *write
}

// maxDeadValue bounds the raw bytes a dead letter keeps (the record stays in Kafka, named by
// its coordinates, for as long as the topic's retention).
const maxDeadValue = 256 << 10

// coordinates names a record as one database key: <topic>-<partition>-<offset>, with the '.'
// Kafka allows in topic names (and the database does not in keys) as '_'.
func coordinates(r *kgo.Record) string {
	return strings.ReplaceAll(r.Topic, ".", "_") + "-" + strconv.Itoa(int(r.Partition)) + "-" + strconv.FormatInt(r.Offset, 10)
}

// toWrite turns a record into its write at path/<id>, or into a dead letter under deadPath
// naming why.
func toWrite(r *kgo.Record, path, deadPath []string, keyField string, maxLeaves int) write {
	id, leaves, err := inspect(r.Value, keyField, len(path)+1, maxLeaves)
	if err != nil {
		return deadLetter(r, deadPath, err)
	}
	if id == "" {
		id = coordinates(r)
	}
	return write{path: strings.Join(append(path[:len(path):len(path)], id), "/"), value: r.Value, leaves: leaves, rec: r}
}

// deadLetter is the entry recording a poison record: its coordinates, key, the reason and its
// bytes (as a string when UTF-8, else base64 under value_base64).
func deadLetter(r *kgo.Record, deadPath []string, why error) write {
	v := map[string]any{"topic": r.Topic, "partition": r.Partition, "offset": r.Offset, "error": why.Error()}
	if len(r.Key) > 0 {
		v["key"] = string(bytes.ToValidUTF8(r.Key, []byte("\uFFFD")))
	}
	raw := r.Value
	if len(raw) > maxDeadValue {
		raw = raw[:maxDeadValue]
		v["truncated_from"] = len(r.Value)
	}
	if utf8.Valid(raw) {
		if len(raw) > 0 {
			v["value"] = string(raw)
		}
	} else {
		v["value_base64"] = raw // encoding/json writes []byte as base64
	}
	b, _ := json.Marshal(v)
	return write{path: strings.Join(append(deadPath[:len(deadPath):len(deadPath)], coordinates(r)), "/"), value: b, leaves: len(v), rec: r, dead: true}
}

// inspect checks that value is one JSON object the database can store as written, at depth
// base, in one write of at most maxLeaves keys; it returns the key field's value ("" when the
// object has none) and the object's leaves.
func inspect(value []byte, keyField string, base, maxLeaves int) (id string, leaves int, err error) {
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", 0, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return "", 0, errors.New("not one JSON value: data after the first value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", 0, fmt.Errorf("not a JSON object (%T): every record must be an object", v)
	}
	// The key field as the bridge reads it, which refuses it named twice: Kafka keyed the
	// record by the first value, and obj holds the last.
	if _, err := bridge.KeyValue(value, keyField); err != nil {
		return "", 0, err
	}
	if k, ok := obj[keyField]; ok {
		switch x := k.(type) {
		case string:
			id = x
		case json.Number:
			id = x.String()
		default:
			return "", 0, fmt.Errorf("key field %q is %T: want a string or a number", keyField, k)
		}
		if err := tree.ValidateKey(id); err != nil {
			return "", 0, fmt.Errorf("key field %q: %v", keyField, err)
		}
	}
	leaves, err = countLeaves(obj, base)
	if err != nil {
		return "", 0, err
	}
	switch {
	case leaves == 0:
		return "", 0, errors.New("the object has no non-null value: the database would store nothing")
	case leaves > maxLeaves:
		return "", 0, fmt.Errorf("the object has %d leaves: over the %d keys one database write (one kv transaction) may set", leaves, maxLeaves)
	}
	return id, leaves, nil
}

// countLeaves counts the non-null scalars of v at depth, checking keys and depth as the
// database does (tree.ValidateKey, tree.MaxDepth).
func countLeaves(v any, depth int) (int, error) {
	if depth > tree.MaxDepth {
		return 0, fmt.Errorf("too deep: more than %d levels with the path", tree.MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return 0, nil
	case map[string]any:
		n := 0
		for k, e := range x {
			if err := tree.ValidateKey(k); err != nil {
				return 0, err
			}
			c, err := countLeaves(e, depth+1)
			if err != nil {
				return 0, err
			}
			n += c
		}
		return n, nil
	case []any:
		n := 0
		for _, e := range x {
			c, err := countLeaves(e, depth+1)
			if err != nil {
				return 0, err
			}
			n += c
		}
		return n, nil
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil || math.IsInf(f, 0) {
			return 0, fmt.Errorf("number %s is out of range", x)
		}
	}
	return 1, nil
}
